"""KIP-848 consumer groups in `__consumer_offsets`: Kafka's record types 3-8 (bytes as
Kafka's generated serdes write them), and a group rebuilt from them by a coordinator that
loads the partition (a failover): same members, epochs and partitions, heartbeats go on;
members gone and deleted groups stay gone."""

from __future__ import annotations

import base64

import pytest

from brokerd.groups import offsets_topic as ot
from brokerd.groups.consumer_group import MemberState
from brokerd.groups.consumer_group_coordinator import HeartbeatRequest
from brokerd.groups.group import GroupState
from brokerd.groups.metadata_manager import read_partition
from brokerd.protocol.errors import ErrorCode as E

from .local_offsets import LocalMetadata, Topic
from .test_coordinator import make, replicas, until  # noqa: F401 - fixtures

T_ID = base64.urlsafe_b64encode(bytes(range(16))).decode().rstrip("=")
U_ID = base64.urlsafe_b64encode(bytes(range(16, 32))).decode().rstrip("=")


def metadata() -> LocalMetadata:
    return LocalMetadata(
        topics={
            ot.TOPIC: Topic(1),
            "t": Topic(3, "t", T_ID),
            "u": Topic(2, "u", U_ID),
        }
    )


def beat(coordinator, member_id, epoch, owned=None, subscribed=None, group="g", **kw):
    return coordinator.consumer.heartbeat(
        HeartbeatRequest(
            group_id=group,
            member_id=member_id,
            member_epoch=epoch,
            rebalance_timeout_ms=kw.pop("rebalance_ms", 60_000 if epoch == 0 else -1),
            subscribed=subscribed,
            owned=owned,
            client_id=kw.pop("client_id", "cid"),
            client_host="/127.0.0.1",
            **kw,
        )
    )


def join(coordinator, member_id, topics=("t",), **kw):
    return beat(coordinator, member_id, 0, {}, tuple(topics), **kw)


def settle(coordinator, *member_ids, group="g"):
    """Heartbeat each member with what it was given until nobody's assignment moves."""
    cg = coordinator.manager.get_group(group).consumer
    for _ in range(10):
        before = {m: (cg.members[m].member_epoch, cg.members[m].assigned) for m in member_ids}
        for m in member_ids:
            member = cg.members[m]
            result = beat(coordinator, m, member.member_epoch, dict(member.assigned), group=group)
            assert result.error == E.none, result
        if before == {m: (cg.members[m].member_epoch, cg.members[m].assigned) for m in member_ids}:
            return cg
    raise AssertionError("the group did not settle")


def consumer_records(replicas):  # noqa: F811
    """(key, value) of the consumer group records in the log, in log order."""
    log = replicas.leader(ot.TOPIC, 0).log
    return [
        (k, v)
        for k, v, _ in read_partition(log)
        if isinstance(k, (ot.ConsumerGroupKey, ot.ConsumerMemberKey))
    ]


# The bytes ---------------------------------------------------------------------------------------
def test_keys_and_values_have_kafkas_layout():
    # ConsumerGroupMetadataKey: int16 type 3, then GroupId as an int16-length string.
    assert ot.consumer_group_key(ot.CONSUMER_GROUP_METADATA, "g") == b"\x00\x03\x00\x01g"
    assert ot.consumer_member_key(ot.CONSUMER_GROUP_MEMBER_METADATA, "g", "m") == (
        b"\x00\x05\x00\x01g\x00\x01m"
    )
    # Flexible version-0 value: int16 version, fields, an empty tagged-field section.
    assert ot.consumer_group_value(ot.ConsumerGroupMetadataValue(5)) == (
        b"\x00\x00\x00\x00\x00\x05\x00"
    )
    tid = bytes(range(16))
    current = ot.consumer_group_value(
        ot.ConsumerGroupCurrentMemberAssignmentValue(7, 6, 1, [(tid, [0, 2])], [(tid, [1])])
    )
    assert current == (
        b"\x00\x00"
        + b"\x00\x00\x00\x07\x00\x00\x00\x06\x01"
        + b"\x02"
        + tid
        + b"\x03\x00\x00\x00\x00\x00\x00\x00\x02\x00"
        + b"\x02"
        + tid
        + b"\x02\x00\x00\x00\x01\x00"
        + b"\x00"
    )
    member = ot.ConsumerGroupMemberMetadataValue(
        None, "rack-a", "client", "/10.0.0.1", ["t", "u"], None, 45000, "uniform"
    )
    encoded = ot.consumer_group_value(member)
    assert encoded.startswith(b"\x00\x00\x00\x07rack-a\x07client\x0a/10.0.0.1\x03\x02t\x02u\x00")
    values = [
        ot.ConsumerGroupMetadataValue(5),
        ot.ConsumerGroupPartitionMetadataValue([ot.PartitionMetadataTopic(tid, "t", 3)]),
        member,
        ot.ConsumerGroupTargetAssignmentMetadataValue(5),
        ot.ConsumerGroupTargetAssignmentMemberValue([(tid, [0, 1, 2])]),
        ot.ConsumerGroupCurrentMemberAssignmentValue(7, 6, 1, [(tid, [0, 2])], [(tid, [1])]),
    ]
    for kind, value in zip(range(3, 9), values, strict=True):
        key = (
            ot.consumer_group_key(kind, "g")
            if kind in (3, 4, 6)
            else ot.consumer_member_key(kind, "g", "m")
        )
        decoded_key, decoded = ot.decode_record(key, ot.consumer_group_value(value))
        assert decoded == value
        assert decoded_key.kind == kind and decoded_key.group == "g"
        ot.describe_record(key, ot.consumer_group_value(value))  # printable
        ot.dump_json(key, ot.consumer_group_value(value))
    assert ot.decode_record(ot.consumer_group_key(3, "g"), None) == (
        ot.ConsumerGroupKey(3, "g"),
        None,
    )


def test_a_short_or_unknown_record_is_refused_not_crashed_on():
    for data in (b"\x00\x00\x00", b"\x00\x00\x00\x00\x00\x05"[:4]):
        try:
            ot.decode_record(ot.consumer_group_key(3, "g"), data)
        except ot.RecordFormatError:
            pass
        else:
            raise AssertionError(data)
    key, text = ot.dump_json(b"\x00\x09\x00\x01g", b"\x00\x00")
    assert "error" in key and text == "<unreadable>"


# A coordinator that loads the partition --------------------------------------------------------
async def test_a_new_coordinator_rebuilds_members_epochs_and_assignments(make, replicas):  # noqa: F811
    first = await make(metadata=metadata())
    a = join(first, "a", ("t", "u"), rack_id="r1", server_assignor="range")
    assert a.error == E.none and a.written is not None
    assert await a.written == E.none  # answered once the ISR has it
    join(first, "b", ("t",), instance_id="static-b")
    cg = settle(first, "a", "b")
    before = {
        m.member_id: (
            m.member_epoch,
            m.previous_member_epoch,
            m.state,
            m.assigned,
            m.subscribed,
            m.instance_id,
            m.rack_id,
            m.server_assignor,
        )
        for m in cg.members.values()
    }
    epochs = (cg.group_epoch, cg.assignment_epoch, dict(cg.target), dict(cg.topic_partitions))
    assert all(state == MemberState.STABLE for _, _, state, *_ in before.values())
    await first.shutdown()

    second = await make(metadata=metadata())
    group = second.manager.get_group("g")
    assert group is not None and group.consumer is not None
    loaded = group.consumer
    assert loaded.state.value == "Stable"
    assert (
        loaded.group_epoch,
        loaded.assignment_epoch,
        dict(loaded.target),
        dict(loaded.topic_partitions),
    ) == epochs
    assert {
        m.member_id: (
            m.member_epoch,
            m.previous_member_epoch,
            m.state,
            m.assigned,
            m.subscribed,
            m.instance_id,
            m.rack_id,
            m.server_assignor,
        )
        for m in loaded.members.values()
    } == before
    # The members go on with their epochs: no UNKNOWN_MEMBER_ID, same partitions, and
    # nothing to write (the loaded group knows what its records hold).
    for member_id, (epoch, _, _, assigned, *_) in before.items():
        result = beat(second, member_id, epoch, dict(assigned))
        assert result.error == E.none and result.member_epoch == epoch
        assert result.written is None
    # Their sessions run on the new coordinator: a silent member would be removed.
    assert all(m.session_timer is not None for m in loaded.members.values())
    await second.shutdown()


async def test_members_gone_and_deleted_groups_stay_gone_after_a_load(make, replicas):  # noqa: F811
    first = await make(metadata=metadata())
    join(first, "a")
    join(first, "b")
    settle(first, "a", "b")
    gone = beat(first, "b", -1)
    assert gone.error == E.none and gone.written is not None
    assert await gone.written == E.none
    records = consumer_records(replicas)
    b_gone = [
        i for i, (k, v) in enumerate(records) if v is None and getattr(k, "member_id", "") == "b"
    ]
    # Kafka's order: the member's current assignment, target and subscription tombstoned,
    # then the new group epoch, then the others' new targets.
    assert [records[i][0].kind for i in b_gone] == [8, 7, 5]
    after = [k.kind for k, _ in records[b_gone[-1] + 1 :]]
    assert after[0] == 3 and 7 in after, after
    # A second group, emptied and deleted.
    join(first, "x", group="h")
    assert beat(first, "x", -1, group="h").error == E.none
    assert await first.delete_group("h") == E.none
    await first.shutdown()

    second = await make(metadata=metadata())
    cg = second.manager.get_group("g").consumer
    assert set(cg.members) == {"a"}
    assert beat(second, "b", 3, {}).error == E.unknown_member_id
    a = cg.members["a"]
    result = beat(second, "a", a.member_epoch, dict(a.assigned))
    assert result.error == E.none
    assert second.manager.get_group("h") is None
    await second.shutdown()
    h_kinds = [k.kind for k, v in consumer_records(replicas) if k.group == "h" and v is None]
    assert h_kinds[-3:] == [6, 4, 3]  # the group's own records tombstoned, its epoch last


async def test_an_empty_classic_group_becomes_a_consumer_group_and_back(make, replicas):  # noqa: F811
    from .test_coordinator import join as classic_join

    first = await make(metadata=metadata())
    joined = await classic_join(first, session_ms=10_000)
    assert joined.error == E.none
    assert first.leave_group("g", [(joined.member_id, None)]) is not None
    await until(lambda: not first.manager.get_group("g").has_active_members())
    result = join(first, "a")
    assert result.error == E.none
    await result.written
    log = replicas.leader(ot.TOPIC, 0).log
    keys = [k for k, _, _ in read_partition(log)]
    values = {k: v for k, v, _ in read_partition(log)}
    assert values[ot.GroupKey("g")] is None  # the classic group's record tombstoned
    assert keys.index(ot.GroupKey("g")) < keys.index(ot.ConsumerGroupKey(3, "g"))
    assert beat(first, "a", -1).error == E.none
    back = await classic_join(first, session_ms=10_000)
    assert back.error == E.none
    await first.shutdown()
    second = await make(metadata=metadata())
    group = second.manager.get_group("g")
    assert group is not None and group.consumer is None  # a classic group after a load
    await second.shutdown()


def test_the_classic_member_metadata_tagged_field_round_trips():
    value = ot.ConsumerGroupMemberMetadataValue(
        None, None, "c", "/h", ["t"], None, 60000, None, (45000, [("range", b"\x00\x01")])
    )
    encoded = ot.consumer_group_value(value)
    # Byte for byte what Kafka's generated ConsumerGroupMemberMetadataValue writes: version,
    # the fields, then one tagged field: tag 0, its size, which counts the presence varint
    # of a nullable struct (1), then the struct: int32 session, [name, metadata], no tags.
    classic = b"\x00\x00\xaf\xc8" + b"\x02" + b"\x06range" + b"\x03\x00\x01" + b"\x00" + b"\x00"
    fields = b"\x00\x00\x02c\x03/h\x02\x02t\x00\x00\x00\xea\x60\x00"
    assert encoded == b"\x00\x00" + fields + b"\x01\x00" + bytes([len(classic) + 1, 1]) + classic
    _, decoded = ot.decode_record(ot.consumer_member_key(5, "g", "m"), encoded)
    assert decoded == value
    # A null struct written in its tag (presence 0) reads as none; unknown tags are skipped.
    null_tagged = b"\x00\x00" + fields + b"\x02\x00\x01\x00\x07\x02\xff\xff"
    _, decoded = ot.decode_record(ot.consumer_member_key(5, "g", "m"), null_tagged)
    assert decoded.classic_member_metadata is None and decoded.client_id == "c"


async def test_a_classic_member_inside_a_consumer_group(make, replicas):  # noqa: F811
    """Kafka 4's mixed group on the coordinator: a classic JoinGroup to a consumer group
    with members is assigned server-side; its heartbeat asks it to rejoin until it has its
    share; SyncGroup hands it its partitions; all of it survives a load."""
    from brokerd.groups.consumer_group_classic import parse_subscription

    from .test_coordinator import PROTOCOLS

    def classic_join(coordinator, member_id):
        return coordinator.join_group(
            "g", member_id, None, "old", "/127.0.0.1", 10_000, 60_000, "consumer",
            PROTOCOLS, False, False,
        )  # fmt: skip

    first = await make(metadata=metadata())
    join(first, "a")
    cg = settle(first, "a")
    assert cg.members["a"].assigned == {"t": frozenset({0, 1, 2})}
    joined = await classic_join(first, "")
    assert joined.error == E.none and joined.leader_id == "" and joined.protocol_name == "range"
    c = joined.member_id
    assert joined.generation_id == cg.members[c].member_epoch == cg.group_epoch
    assert cg.members[c].assigned == {}  # a still owns its target: nothing free yet
    assert first.heartbeat("g", joined.generation_id, c, None) == E.none  # waits for a
    assert first.heartbeat("g", joined.generation_id - 1, c, None) == E.illegal_generation
    settle(first, "a")  # a gives up the classic member's share
    assert first.heartbeat("g", joined.generation_id, c, None) == E.rebalance_in_progress
    again = await classic_join(first, c)
    assert again.error == E.none
    error, assignment, _ = await first.sync_group(
        "g", again.generation_id, c, None, "consumer", "range", {}
    )
    assert error == E.none
    from brokerd.groups.group import parse_assignment

    got = {t: frozenset(p) for t, p in parse_assignment(assignment).items()}
    assert got and got == cg.members[c].assigned
    assert set(got["t"]) | set(cg.members["a"].assigned["t"]) == {0, 1, 2}
    assert first.heartbeat("g", again.generation_id, c, None) == E.none
    assert parse_subscription(PROTOCOLS[0][1]).topics == ["t"]
    await first.shutdown()

    second = await make(metadata=metadata())
    loaded = second.manager.get_group("g").consumer
    assert loaded.members[c].classic is not None
    assert loaded.members[c].classic.protocols == list(PROTOCOLS)
    assert second.heartbeat("g", again.generation_id, c, None) == E.none
    error, assignment, _ = await second.sync_group(
        "g", again.generation_id, c, None, "consumer", "range", {}
    )
    assert error == E.none and parse_assignment(assignment) == {
        t: sorted(p) for t, p in got.items()
    }
    # A classic LeaveGroup: a gets everything back.
    assert second.leave_group("g", [(c, None)]) == (E.none, [(c, None, E.none)])
    assert set(loaded.members) == {"a"}
    await second.shutdown()


async def test_a_live_classic_group_is_upgraded_by_a_consumer_protocol_member(make, replicas):  # noqa: F811
    """Kafka 4's online upgrade (group.consumer.migration.policy upgrade/bidirectional):
    the classic members keep their partitions at their generation and go on as classic
    members of the consumer group; the new member joins and gets a share; the classic
    record is tombstoned. With the policy disabled: GROUP_ID_NOT_FOUND, as Kafka."""
    from .test_coordinator import PROTOCOLS, stable_member

    refusing = await make(metadata=metadata(), group_consumer_migration_policy="disabled")
    classic_id, generation = await stable_member(refusing)
    refused = join(refusing, "new")
    assert refused.error == E.group_id_not_found
    await refusing.shutdown()

    first = await make(metadata=metadata())
    group = first.manager.get_group("g")
    assert group.members and group.consumer is None
    new = join(first, "new")
    assert new.error == E.none and new.written is not None
    assert await new.written == E.none
    cg = group.consumer
    assert cg is not None and set(cg.members) == {classic_id, "new"}
    old = cg.members[classic_id]
    assert old.classic is not None and old.classic.protocols == list(PROTOCOLS)
    assert cg.group_epoch == generation + 1  # the upgrade at the generation, then the join
    # The classic member is asked to rejoin, and does through the mixed-group path.
    assert first.heartbeat("g", generation, classic_id, None) == E.rebalance_in_progress
    rejoined = await first.join_group(
        "g", classic_id, None, "client", "/127.0.0.1", 10_000, 1000, "consumer",
        PROTOCOLS, False, False,
    )  # fmt: skip
    assert rejoined.error == E.none and rejoined.generation_id == cg.group_epoch
    settle(first, "new")
    log = replicas.leader(ot.TOPIC, 0).log
    values = {k: v for k, v, _ in read_partition(log)}
    assert values[ot.GroupKey("g")] is None
    assert values[ot.ConsumerGroupKey(3, "g")] == ot.ConsumerGroupMetadataValue(cg.group_epoch)
    await first.shutdown()


@pytest.mark.parametrize("failing", ["append_error", "replication_error"])
async def test_records_whose_append_failed_are_written_by_the_next_heartbeat(
    make,  # noqa: F811
    replicas,  # noqa: F811
    failing,
):
    """An append refused, or not replicated (NOT_ENOUGH_REPLICAS here), may leave the
    group's records unwritten: the next heartbeat writes them all, not only what changed
    since (which is nothing), so a new coordinator finds the member."""
    first = await make(metadata=metadata())
    setattr(replicas, failing, E.not_enough_replicas)
    a = join(first, "a")
    assert a.error == E.none and a.written is not None
    assert await a.written == E.coordinator_not_available  # as Kafka maps it
    if failing == "append_error":
        assert consumer_records(replicas) == []
    setattr(replicas, failing, E.none)
    member = first.manager.get_group("g").consumer.members["a"]
    again = beat(first, "a", member.member_epoch, dict(member.assigned))
    assert again.error == E.none and again.written is not None
    assert await again.written == E.none
    kinds = {type(k).__name__ for k, _ in consumer_records(replicas)}
    assert kinds == {"ConsumerGroupKey", "ConsumerMemberKey"}
    await first.shutdown()
    second = await make(metadata=metadata())
    group = second.manager.get_group("g")
    assert group is not None and group.consumer is not None
    loaded = group.consumer.members["a"]
    assert (loaded.member_epoch, loaded.assigned) == (member.member_epoch, member.assigned)
    await second.shutdown()


async def test_an_upgrade_whose_append_failed_is_written_by_the_next_heartbeat(make, replicas):  # noqa: F811
    """The upgrade's one append (the classic record's tombstone and the consumer group's
    records) refused: the next heartbeat writes the tombstone and every record."""
    from .test_coordinator import stable_member

    first = await make(metadata=metadata())
    classic_id, _ = await stable_member(first)
    replicas.append_error = E.not_enough_replicas
    new = join(first, "new")
    assert new.error == E.none and await new.written == E.coordinator_not_available
    replicas.append_error = E.none
    member = first.manager.get_group("g").consumer.members["new"]
    again = beat(first, "new", member.member_epoch, dict(member.assigned))
    assert again.written is not None and await again.written == E.none
    values = {k: v for k, v, _ in read_partition(replicas.leader(ot.TOPIC, 0).log)}
    assert values[ot.GroupKey("g")] is None
    await first.shutdown()
    second = await make(metadata=metadata())
    group = second.manager.get_group("g")
    assert group is not None and group.consumer is not None
    assert set(group.consumer.members) == {classic_id, "new"}
    await second.shutdown()


async def test_an_empty_consumer_group_that_expires_leaves_no_records(make, replicas):  # noqa: F811
    first = await make(metadata=metadata())
    join(first, "x", group="e")
    gone = beat(first, "x", -1, group="e")
    assert gone.error == E.none and await gone.written == E.none
    await first.manager.expire_offsets()
    assert first.manager.get_group("e") is None
    await first.shutdown()
    values = {k: v for k, v, _ in read_partition(replicas.leader(ot.TOPIC, 0).log)}
    assert values[ot.ConsumerGroupKey(3, "e")] is None
    second = await make(metadata=metadata())
    assert second.manager.get_group("e") is None  # was rebuilt as an empty group before
    await second.shutdown()


@pytest.mark.parametrize("policy", ["bidirectional", "upgrade"])
async def test_the_last_consumer_protocol_member_leaving_downgrades_the_group(
    make,  # noqa: F811
    replicas,  # noqa: F811
    policy,
):
    """Kafka 4's online downgrade: when the last member of the consumer protocol leaves
    and only classic members remain, the group becomes a classic group (their partitions
    kept, the group epoch as generation) and rebalances; with the policy `upgrade` it
    stays a consumer group."""
    from .test_coordinator import PROTOCOLS

    coordinator = await make(metadata=metadata(), group_consumer_migration_policy=policy)
    join(coordinator, "a")
    settle(coordinator, "a")
    joined = await coordinator.join_group(
        "g", "", None, "old", "/127.0.0.1", 10_000, 1000, "consumer", PROTOCOLS, False, False
    )
    c = joined.member_id
    settle(coordinator, "a")
    group = coordinator.manager.get_group("g")
    epoch = group.consumer.group_epoch
    assert beat(coordinator, "a", group.consumer.members["a"].member_epoch).error == E.none
    gone = beat(coordinator, "a", -1)
    assert gone.error == E.none
    if policy == "upgrade":
        assert group.consumer is not None and set(group.consumer.members) == {c}
        await coordinator.shutdown()
        return
    assert group.consumer is None and set(group.members) == {c}
    assert group.generation_id >= epoch and group.is_in(GroupState.PREPARING_REBALANCE)
    assert coordinator.heartbeat("g", group.generation_id, c, None) == E.rebalance_in_progress
    rejoined = await coordinator.join_group(
        "g", c, None, "old", "/127.0.0.1", 10_000, 1000, "consumer", PROTOCOLS, False, False
    )
    assert rejoined.error == E.none and rejoined.leader_id == c
    await until(lambda: True)
    values = {k: v for k, v, _ in read_partition(replicas.leader(ot.TOPIC, 0).log)}
    assert values[ot.ConsumerGroupKey(3, "g")] is None
    assert isinstance(values[ot.GroupKey("g")], ot.GroupValue)
    await coordinator.shutdown()


async def test_a_downgrade_whose_append_failed_has_its_tombstones_written_after(
    make,  # noqa: F811
    replicas,  # noqa: F811
):
    """The downgrade's one append (the consumer group's tombstones and the classic record)
    refused: the tombstones go with the classic group's next record, so a new coordinator
    does not find the consumer group again."""
    from .test_coordinator import PROTOCOLS

    coordinator = await make(metadata=metadata(), group_consumer_migration_policy="bidirectional")
    join(coordinator, "a")
    settle(coordinator, "a")
    joined = await coordinator.join_group(
        "g", "", None, "old", "/127.0.0.1", 10_000, 1000, "consumer", PROTOCOLS, False, False
    )
    c = joined.member_id
    settle(coordinator, "a")
    group = coordinator.manager.get_group("g")
    assert beat(coordinator, "a", group.consumer.members["a"].member_epoch).error == E.none
    replicas.append_error = E.not_enough_replicas
    assert beat(coordinator, "a", -1).error == E.none
    replicas.append_error = E.none
    assert group.consumer is None and set(group.members) == {c}
    rejoined = await coordinator.join_group(
        "g", c, None, "old", "/127.0.0.1", 10_000, 1000, "consumer", PROTOCOLS, False, False
    )
    assert rejoined.error == E.none and rejoined.leader_id == c
    synced = await coordinator.sync_group(
        "g", rejoined.generation_id, c, None, "consumer", "range", {c: b""}
    )
    assert synced[0] == E.none  # the classic record written, the tombstones before it
    values = {k: v for k, v, _ in read_partition(replicas.leader(ot.TOPIC, 0).log)}
    assert isinstance(values[ot.GroupKey("g")], ot.GroupValue)
    assert values[ot.ConsumerGroupKey(3, "g")] is None
    assert values[ot.ConsumerMemberKey(5, "g", "a")] is None
    assert group.unwritten_tombstones == []
    await coordinator.shutdown()
    second = await make(metadata=metadata())
    loaded = second.manager.get_group("g")
    assert loaded is not None and loaded.consumer is None and set(loaded.members) == {c}
    await second.shutdown()
