"""Which committed offsets expire (KIP-211): by the group's empty time, or per commit."""

from pathlib import Path

from brokerd.groups.group import Group, GroupState, Member
from brokerd.groups.metadata_manager import GroupMetadataManager
from brokerd.groups.offsets_topic import OffsetValue

from .local_offsets import LocalMetadata, LocalReplicas, Probes, group_config

DAY = 24 * 3600 * 1000
RETENTION = 7 * DAY


def rules() -> GroupMetadataManager:
    metadata = LocalMetadata()
    return GroupMetadataManager(
        LocalReplicas(Path("unused")),  # the rules read no log
        metadata,
        group_config(offsets_retention_minutes=RETENTION // 60_000),
        create_topic=metadata.create_topic,
        probes=Probes(),
    )


def subscription(*topics: str) -> bytes:
    out = b"\x00\x00" + len(topics).to_bytes(4, "big")
    for topic in topics:
        out += len(topic).to_bytes(2, "big") + topic.encode()
    return out + b"\xff\xff\xff\xff"


def test_offsets_only_group_expires_each_offset_from_its_commit():
    group = Group("standalone")
    group.offsets = {("t", 0): OffsetValue(1, "", 0), ("t", 1): OffsetValue(1, "", 5 * DAY)}
    assert rules().expired_offsets(group, RETENTION) == [("t", 0)]
    assert rules().expired_offsets(group, RETENTION - 1) == []


def test_empty_consumer_group_expires_from_when_it_became_empty():
    group = Group("consumers", protocol_type="consumer", state_timestamp_ms=10 * DAY)
    group.offsets = {("t", 0): OffsetValue(1, "", 0)}  # old commit, recently emptied group
    assert rules().expired_offsets(group, 10 * DAY + RETENTION - 1) == []
    assert rules().expired_offsets(group, 10 * DAY + RETENTION) == [("t", 0)]


def test_explicit_expire_timestamp_wins():
    group = Group("standalone")
    group.offsets = {("t", 0): OffsetValue(1, "", 0, expire_timestamp=500)}
    assert rules().expired_offsets(group, 500) == [("t", 0)]


def test_stable_group_keeps_subscribed_topics_only():
    group = Group("active", protocol_type="consumer", protocol_name="range")
    group.add(Member("m", None, "c", "/h", 1000, 6000, "consumer", [("range", subscription("a"))]))
    group.state = GroupState.STABLE
    group.offsets = {("a", 0): OffsetValue(1, "", 0), ("gone", 0): OffsetValue(1, "", 0)}
    assert rules().expired_offsets(group, RETENTION) == [("gone", 0)]
