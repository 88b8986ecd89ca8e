"""A consumer group (KIP-848) as records of `__consumer_offsets`, and back.

Kafka's new group coordinator keeps a consumer group in six record types (keys 3-8 of
offsets_topic): the group epoch, the subscribed topics' metadata, each member's
subscription, the target assignment's epoch and per member, and each member's current
assignment (epoch, previous epoch, state, partitions, partitions pending revocation). A
coordinator that loads the partition rebuilds the group from them, so after a failover the
members go on heartbeating with their epochs and keep their partitions.

What a group has written is kept on it (`ConsumerGroup.persisted`: key -> value bytes), and
`records_to_store` returns only what changed since, in Kafka's order: tombstones of members
gone (current assignment, target, subscription), then subscriptions, topic metadata, group
epoch, targets, target epoch and current assignments. A heartbeat that changes only its own
member writes that member's records; a new epoch writes every member's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from . import offsets_topic as ot
from .assignors import Assignment
from .consumer_group import ConsumerGroup, ConsumerMember, MemberState
from .consumer_group_classic import ClassicMetadata

Record = tuple[bytes, bytes | None]
TopicIdOf = Callable[[str], bytes | None]
TopicNameOf = Callable[[bytes], str | None]

_STATE_VALUES = {
    MemberState.STABLE: 0,
    MemberState.UNREVOKED_PARTITIONS: 1,
    MemberState.UNRELEASED_PARTITIONS: 2,
}
_STATES = {v: k for k, v in _STATE_VALUES.items()}


def _topic_partitions(assignment: Assignment, topic_id_of: TopicIdOf) -> ot.TopicPartitions:
    out: ot.TopicPartitions = []
    for topic in sorted(assignment):
        topic_id = topic_id_of(topic)
        if topic_id is not None and assignment[topic]:
            out.append((topic_id, sorted(assignment[topic])))
    return out


def _assignment(topics: ot.TopicPartitions, topic_name_of: TopicNameOf) -> Assignment:
    out: dict[str, frozenset[int]] = {}
    for topic_id, partitions in topics:
        name = topic_name_of(topic_id)
        if name is not None and partitions:  # a topic deleted meanwhile is dropped
            out[name] = frozenset(partitions)
    return out


def _member_records(
    cg: ConsumerGroup, member: ConsumerMember, topic_id_of: TopicIdOf
) -> tuple[Record, Record, Record]:
    """(subscription, target, current assignment) of one member."""
    group, mid = cg.group_id, member.member_id
    subscription = ot.consumer_group_value(
        ot.ConsumerGroupMemberMetadataValue(
            instance_id=member.instance_id,
            rack_id=member.rack_id,
            client_id=member.client_id,
            client_host=member.client_host,
            subscribed_topic_names=list(member.subscribed),
            subscribed_topic_regex=member.subscribed_regex,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            server_assignor=member.server_assignor,
            classic_member_metadata=(
                (member.classic.session_timeout_ms, list(member.classic.protocols))
                if member.classic is not None
                else None
            ),
        )
    )
    target = ot.consumer_group_value(
        ot.ConsumerGroupTargetAssignmentMemberValue(
            _topic_partitions(cg.target.get(mid, {}), topic_id_of)
        )
    )
    current = ot.consumer_group_value(
        ot.ConsumerGroupCurrentMemberAssignmentValue(
            member.member_epoch,
            member.previous_member_epoch,
            _STATE_VALUES[member.state],
            _topic_partitions(member.assigned, topic_id_of),
            _topic_partitions(member.pending_revocation, topic_id_of),
        )
    )
    return (
        (ot.consumer_member_key(ot.CONSUMER_GROUP_MEMBER_METADATA, group, mid), subscription),
        (ot.consumer_member_key(ot.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group, mid), target),
        (ot.consumer_member_key(ot.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group, mid), current),
    )


def _member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """Kafka's order (consumerGroupFenceMember): current assignment, target, subscription."""
    return [
        (ot.consumer_member_key(kind, group_id, member_id), None)
        for kind in (
            ot.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
            ot.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
            ot.CONSUMER_GROUP_MEMBER_METADATA,
        )
    ]


def records_to_store(
    cg: ConsumerGroup, topic_id_of: TopicIdOf, touched: Iterable[str] = ()
) -> list[Record]:
    """The records that bring the log from what `cg` has written to what it is now (and
    mark them written). `touched`: members that may have changed without a new epoch (the
    heartbeating one); with a new group or assignment epoch every member is written."""
    out: list[Record] = []
    persisted = cg.persisted
    group = cg.group_id
    if cg.classic_tombstone_pending:
        out.append((ot.group_key(group), None))
        cg.classic_tombstone_pending = False
    for member_id in sorted(cg.persisted_members - cg.members.keys()):
        out += _member_tombstones(group, member_id)
    epochs = (cg.group_epoch, cg.assignment_epoch)
    if epochs != cg.persisted_epochs or not persisted:
        members = list(cg.members.values())
    else:
        members = [cg.members[m] for m in touched if m in cg.members]
    per_member = [_member_records(cg, m, topic_id_of) for m in members]
    partition_metadata = ot.consumer_group_value(
        ot.ConsumerGroupPartitionMetadataValue(
            [
                ot.PartitionMetadataTopic(topic_id, name, count)
                for name, count in sorted(cg.topic_partitions.items())
                if (topic_id := topic_id_of(name)) is not None
            ]
        )
    )
    wanted: list[Record] = [r[0] for r in per_member]
    wanted += [
        (
            ot.consumer_group_key(ot.CONSUMER_GROUP_PARTITION_METADATA, group),
            partition_metadata,
        ),
        (
            ot.consumer_group_key(ot.CONSUMER_GROUP_METADATA, group),
            ot.consumer_group_value(ot.ConsumerGroupMetadataValue(cg.group_epoch)),
        ),
    ]
    wanted += [r[1] for r in per_member]
    wanted.append(
        (
            ot.consumer_group_key(ot.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, group),
            ot.consumer_group_value(
                ot.ConsumerGroupTargetAssignmentMetadataValue(cg.assignment_epoch)
            ),
        )
    )
    wanted += [r[2] for r in per_member]
    for key, value in wanted:
        if persisted.get(key) != value:
            out.append((key, value))
    for key, value in out:
        if value is None:
            persisted.pop(key, None)
        else:
            persisted[key] = value
    cg.persisted_members = set(cg.members)
    cg.persisted_epochs = epochs
    return out


def write_failed(cg: ConsumerGroup, members_before: set[str], records: list[Record]) -> None:
    """An append of `records` (computed when `members_before` were the members marked
    written) failed: what the log holds of the group is unknown, so its next write is a
    full one (every member's records, and tombstones for every member that may be in the
    log), carrying the classic record's tombstone again if that batch had it."""
    cg.persisted.clear()
    cg.persisted_epochs = (-1, -1)
    cg.persisted_members |= members_before
    if (ot.group_key(cg.group_id), None) in records:
        cg.classic_tombstone_pending = True


def group_tombstones(cg: ConsumerGroup) -> list[Record]:
    """Every record of the group deleted (Kafka's createGroupTombstoneRecords order:
    members, target epoch, topic metadata, group epoch last)."""
    group = cg.group_id
    out: list[Record] = []
    for member_id in sorted(cg.persisted_members | cg.members.keys()):
        out += _member_tombstones(group, member_id)
    out += [
        (ot.consumer_group_key(kind, group), None)
        for kind in (
            ot.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
            ot.CONSUMER_GROUP_PARTITION_METADATA,
            ot.CONSUMER_GROUP_METADATA,
        )
    ]
    cg.persisted.clear()
    cg.persisted_members = set()
    cg.persisted_epochs = (-1, -1)
    return out


def build_groups(
    records: Mapping[ot.ConsumerGroupKey | ot.ConsumerMemberKey, ot.ConsumerGroupValue],
    topic_name_of: TopicNameOf,
    topic_id_of: TopicIdOf,
) -> dict[str, ConsumerGroup]:
    """The consumer groups the last record of each key describes (tombstoned keys left
    out by the caller). A group exists while its epoch record does; a member while its
    subscription does."""
    groups: dict[str, ConsumerGroup] = {}
    for key, value in records.items():
        if isinstance(key, ot.ConsumerGroupKey) and isinstance(
            value, ot.ConsumerGroupMetadataValue
        ):
            groups[key.group] = ConsumerGroup(key.group, group_epoch=value.epoch)
    for key, value in records.items():
        cg = groups.get(key.group)
        if cg is None:
            continue
        if isinstance(value, ot.ConsumerGroupTargetAssignmentMetadataValue):
            cg.assignment_epoch = value.assignment_epoch
        elif isinstance(value, ot.ConsumerGroupPartitionMetadataValue):
            cg.topic_partitions = {
                name: t.num_partitions
                for t in value.topics
                if (name := topic_name_of(t.topic_id)) is not None
            }
        elif isinstance(key, ot.ConsumerMemberKey) and isinstance(
            value, ot.ConsumerGroupMemberMetadataValue
        ):
            cg.members[key.member_id] = ConsumerMember(
                key.member_id,
                client_id=value.client_id,
                client_host=value.client_host,
                instance_id=value.instance_id,
                rack_id=value.rack_id,
                rebalance_timeout_ms=value.rebalance_timeout_ms,
                subscribed=tuple(value.subscribed_topic_names),
                subscribed_regex=value.subscribed_topic_regex,
                server_assignor=value.server_assignor,
                classic=(
                    ClassicMetadata(
                        value.classic_member_metadata[0], list(value.classic_member_metadata[1])
                    )
                    if value.classic_member_metadata is not None
                    else None
                ),
            )
    for key, value in records.items():
        if not isinstance(key, ot.ConsumerMemberKey):
            continue
        cg = groups.get(key.group)
        member = cg.members.get(key.member_id) if cg is not None else None
        if cg is None or member is None:
            continue
        if isinstance(value, ot.ConsumerGroupTargetAssignmentMemberValue):
            cg.target[key.member_id] = _assignment(value.topic_partitions, topic_name_of)
        elif isinstance(value, ot.ConsumerGroupCurrentMemberAssignmentValue):
            member.member_epoch = value.member_epoch
            member.previous_member_epoch = value.previous_member_epoch
            # An unknown state (a newer Kafka's): reconciled again from the target.
            member.state = _STATES.get(value.state, MemberState.UNRELEASED_PARTITIONS)
            member.assigned = _assignment(value.assigned_partitions, topic_name_of)
            member.pending_revocation = _assignment(
                value.partitions_pending_revocation, topic_name_of
            )
    for cg in groups.values():
        for member_id in cg.members:
            cg.target.setdefault(member_id, {})
        # What was read is what is written: the next change writes only its difference.
        records_to_store(cg, topic_id_of)
    return groups
