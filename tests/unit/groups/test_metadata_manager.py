"""GroupMetadataManager: what it writes to `__consumer_offsets` is what a new leader loads,
writes fail with the errors Kafka's clients expect, and expiry tombstones what it drops."""

import asyncio

import pytest

from brokerd.groups import offsets_topic
from brokerd.groups.group import Group, GroupState, Member
from brokerd.protocol.errors import ErrorCode as E
from brokerd.protocol.errors import KafkaError

from .local_offsets import LocalMetadata, LocalReplicas, Probes, Topic, loaded, manager

DAY_MINUTES = 24 * 60
DAY = DAY_MINUTES * 60_000


@pytest.fixture
def replicas(tmp_path):
    replicas = LocalReplicas(tmp_path)
    replicas.lead(0)
    yield replicas
    replicas.close()


async def reloaded(replicas: LocalReplicas, **config):
    """A manager on a broker that just became leader of the same partition."""
    fresh = manager(replicas, **config)
    seen = []
    await loaded(fresh, on_loaded=seen.append)
    return fresh, seen


def stable_group(group_id: str = "g") -> Group:
    group = Group(group_id, protocol_type="consumer", protocol_name="range", generation_id=3)
    member = Member("m-1", "instance", "client", "/10.0.0.1", 30000, 10000, "consumer", [])
    member.protocols = [("range", b"subscription")]
    group.add(member)
    group.leader_id = "m-1"
    group.state = GroupState.STABLE
    return group


async def test_commits_are_loaded_by_the_next_leader(replicas):
    first = manager(replicas)
    await loaded(first)
    group = first.add_group(Group("g", state_timestamp_ms=0))
    result = await first.store_offsets(
        group, -1, {("t", 0): (42, 7, "meta"), ("t", 1): (5, None, None)}
    )
    assert result == {("t", 0): E.none, ("t", 1): E.none}

    fresh, seen = await reloaded(replicas)
    assert seen == []  # offsets alone make no group record
    offsets = fresh.get_offsets("g", None)
    assert (offsets[("t", 0)].offset, offsets[("t", 0)].leader_epoch) == (42, 7)
    assert offsets[("t", 0)].metadata == "meta"
    assert (offsets[("t", 1)].offset, offsets[("t", 1)].leader_epoch) == (5, -1)
    assert fresh.get_offsets("g", [("t", 1), ("t", 9)])[("t", 9)] is None
    assert fresh.get_group("g").is_in(GroupState.EMPTY)


async def test_group_generation_and_assignment_are_loaded(replicas):
    first = manager(replicas)
    await loaded(first)
    group = first.add_group(stable_group())
    assert await first.store_group(group, {"m-1": b"partitions"}) == E.none

    fresh, seen = await reloaded(replicas)
    [restored] = seen
    assert restored is fresh.get_group("g")
    assert restored.generation_id == 3
    assert restored.is_in(GroupState.STABLE)
    assert restored.get("m-1").assignment == b"partitions"
    assert restored.static_member_id("instance") == "m-1"


async def test_load_waits_at_the_probe_and_reports_loading(replicas):
    probes = Probes(hold=True)
    held = manager(replicas, probes=probes)
    held.schedule_load(0, lambda group: None)
    assert held.is_loading and held.is_group_loading("g") and not held.is_group_local("g")
    probes.release()
    while held.is_loading:
        await asyncio.sleep(0.001)
    assert held.is_group_local("g")


async def test_partition_lost_while_loading_is_not_owned(replicas):
    writer = manager(replicas)
    await loaded(writer)
    await writer.store_group(writer.add_group(stable_group()), {})

    probes = Probes(hold=True)
    held = manager(replicas, probes=probes)
    seen = []
    held.schedule_load(0, seen.append)
    held.remove_groups_for_partition(0, seen.append)
    probes.release()
    load = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    await asyncio.wait_for(asyncio.gather(*load), 10)  # the abandoned load ran to its end
    assert seen == [] and held.get_group("g") is None
    assert not held.is_loading and not held.is_group_local("g")


async def test_unloading_drops_groups_and_cancels_their_timers(replicas):
    first = manager(replicas)
    await loaded(first)
    group = first.add_group(stable_group())
    timer = asyncio.get_running_loop().call_later(60, lambda: None)
    group.get("m-1").heartbeat_timer = timer
    unloaded = []
    first.remove_groups_for_partition(0, unloaded.append)
    assert unloaded == [group]
    assert timer.cancelled()
    assert first.get_group("g") is None and not first.is_group_local("g")


async def test_metadata_longer_than_the_limit_is_refused_per_partition(replicas):
    first = manager(replicas, offset_metadata_max_bytes=4)
    await loaded(first)
    group = first.add_group(Group("g"))
    result = await first.store_offsets(group, -1, {("t", 0): (1, 0, "12345"), ("t", 1): (1, 0, "")})
    assert result == {("t", 0): E.offset_metadata_too_large, ("t", 1): E.none}
    assert set(first.get_offsets("g", None)) == {("t", 1)}


@pytest.mark.parametrize(
    ("replication", "commit_error", "group_error"),
    [
        (E.request_timed_out, E.request_timed_out, E.rebalance_in_progress),
        (E.not_enough_replicas_after_append, E.coordinator_not_available, None),
        (E.not_leader_or_follower, E.not_coordinator, None),
    ],
)
async def test_replication_errors_map_as_kafkas(replicas, replication, commit_error, group_error):
    first = manager(replicas)
    await loaded(first)
    group = first.add_group(stable_group())
    replicas.replication_error = replication
    assert await first.store_offsets(group, -1, {("t", 0): (1, 0, "")}) == {("t", 0): commit_error}
    assert first.get_offsets("g", None) == {}  # not acknowledged, not visible
    assert await first.store_group(group, {}) == (group_error or commit_error)


async def test_write_to_a_partition_no_longer_led_is_not_coordinator(replicas):
    first = manager(replicas)
    await loaded(first)
    group = first.add_group(Group("g"))
    replicas.resign(0)
    assert await first.store_offsets(group, -1, {("t", 0): (1, 0, "")}) == {
        ("t", 0): E.not_coordinator
    }


async def test_deleting_a_group_tombstones_it_and_its_offsets(replicas):
    first = manager(replicas)
    await loaded(first)
    group = first.add_group(Group("g", protocol_type="consumer"))
    await first.store_group(group, {})
    await first.store_offsets(group, -1, {("t", 0): (1, 0, "")})
    assert await first.delete_group(group) == E.none
    assert group.is_in(GroupState.DEAD) and first.get_group("g") is None

    fresh, seen = await reloaded(replicas)
    assert seen == [] and fresh.get_group("g") is None


async def test_expiry_tombstones_offsets_and_an_empty_group_dies_with_them(replicas):
    first = manager(replicas, offsets_retention_minutes=7 * DAY_MINUTES)
    await loaded(first)
    group = first.add_group(Group("standalone", state_timestamp_ms=0))
    await first.store_offsets(group, -1, {("t", 0): (1, 0, "")})
    await first.store_offsets(group, DAY, {("t", 1): (1, 0, "")})  # explicit retention
    committed = group.offsets[("t", 0)].commit_timestamp

    assert await first.expire_offsets(now=group.offsets[("t", 1)].expire_timestamp) == 1
    assert set(group.offsets) == {("t", 0)}
    assert await first.expire_offsets(now=committed + 7 * DAY) == 1
    assert group.is_in(GroupState.DEAD) and first.get_group("standalone") is None

    fresh, _ = await reloaded(replicas)
    assert fresh.get_group("standalone") is None


async def test_expiry_keeps_offsets_when_the_tombstones_fail(replicas):
    first = manager(replicas, offsets_retention_minutes=DAY_MINUTES)
    await loaded(first)
    group = first.add_group(Group("standalone", state_timestamp_ms=0))
    await first.store_offsets(group, -1, {("t", 0): (1, 0, "")})
    replicas.replication_error = E.request_timed_out
    assert await first.expire_offsets(now=group.offsets[("t", 0)].commit_timestamp + DAY) == 0
    assert set(group.offsets) == {("t", 0)} and first.get_group("standalone") is group


async def test_offsets_topic_is_created_once_with_replication_capped_at_live_brokers(replicas):
    metadata = LocalMetadata()
    first = manager(
        replicas,
        metadata,
        offsets_topic_num_partitions=3,
        offsets_topic_replication_factor=3,
        offsets_topic_segment_bytes=1024,
    )
    assert first.coordinator_for("g") is None  # no topic yet
    info = await first.ensure_offsets_topic()
    assert info.partition_count == 3 and first.num_partitions == 3
    assert metadata.created == [(offsets_topic.TOPIC, 3, 1, offsets_topic.topic_configs(1024))]
    assert await first.ensure_offsets_topic() is info
    assert len(metadata.created) == 1
    assert first.coordinator_for("g") == 1


async def test_offsets_topic_created_elsewhere_meanwhile_is_used(replicas):
    metadata = LocalMetadata()

    async def lost_the_race(name, num_partitions, replication_factor, configs=None):
        metadata.topics[name] = Topic(5)
        raise KafkaError(E.topic_already_exists)

    raced = manager(replicas, metadata)
    raced.create_topic = lost_the_race
    assert (await raced.ensure_offsets_topic()).partition_count == 5


async def test_group_partition_follows_the_topic_partition_count(replicas):
    metadata = LocalMetadata(topics={offsets_topic.TOPIC: Topic(7)})
    sized = manager(replicas, metadata, offsets_topic_num_partitions=50)
    assert sized.partition_for("hello") == offsets_topic.partition_for("hello", 7)
    assert manager(replicas, LocalMetadata(), offsets_topic_num_partitions=50).num_partitions == 50


async def test_led_partitions_are_the_offsets_topic_ones(replicas):
    replicas.leaders[("other", 3)] = replicas.leaders[(offsets_topic.TOPIC, 0)]
    assert manager(replicas).led_partitions() == [0]
    del replicas.leaders[("other", 3)]
