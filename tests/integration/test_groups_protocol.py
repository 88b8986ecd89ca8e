"""Group APIs on the wire: coordinator lookup, the join/sync round trips, fencing errors,
standalone commits, and the admin APIs (list, describe, delete, offset delete)."""

from __future__ import annotations

import struct
import time
import uuid

import pytest

from brokerd.groups.offsets_topic import partition_for
from brokerd.protocol.errors import ErrorCode as E
from tests.integration.wire import WireClient, nested, request

JOIN = 11


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, null user data."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", -1)


def assignment(topic: str, partitions: list[int]) -> bytes:
    return (
        struct.pack(">hi", 0, 1)
        + struct.pack(">h", len(topic))
        + topic.encode()
        + struct.pack(">i", len(partitions))
        + b"".join(struct.pack(">i", p) for p in partitions)
        + struct.pack(">i", -1)
    )


def new_group() -> str:
    return f"g-{uuid.uuid4().hex[:10]}"


def join_request(
    group, member_id="", instance_id=None, version=5, topics=("t",), session=6000, rebalance=10000
):
    protocol = nested(
        JOIN, version, "JoinGroupRequestProtocol", name="range", metadata=subscription(*topics)
    )
    return request(
        JOIN,
        version,
        group_id=group,
        session_timeout=_ms(session),
        rebalance_timeout=_ms(rebalance),
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type="consumer",
        protocols=(protocol,),
        reason=None,
    )


def _ms(value: int):
    import datetime

    return datetime.timedelta(milliseconds=value)


def join(client, group, member_id="", instance_id=None, version=5, **kw):
    return client.call(join_request(group, member_id, instance_id, version, **kw))


def join_dynamic(client, group, version=5, **kw):
    """The KIP-394 round trip: MEMBER_ID_REQUIRED hands out the id, the rejoin uses it."""
    first = join(client, group, version=version, **kw)
    assert first.error_code == E.member_id_required and first.member_id
    return join(client, group, first.member_id, version=version, **kw)


def sync_request(group, generation, member_id, assignments=(), instance_id=None, version=3):
    return request(
        14,
        version,
        group_id=group,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type=None,
        protocol_name=None,
        assignments=tuple(
            nested(14, version, "SyncGroupRequestAssignment", member_id=m, assignment=a)
            for m, a in assignments
        ),
    )


def sync(client, group, generation, member_id, assignments=(), instance_id=None, version=3):
    return client.call(
        sync_request(group, generation, member_id, assignments, instance_id, version)
    )


def heartbeat(client, group, generation, member_id, instance_id=None):
    return client.call(
        request(
            12,
            3,
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance_id,
        )
    ).error_code


def commit(client, group, generation, member_id, offsets, version=8, instance_id=None):
    topics = {}
    for (topic, partition), (offset, metadata) in offsets.items():
        topics.setdefault(topic, []).append(
            nested(
                8,
                version,
                "OffsetCommitRequestPartition",
                partition_index=partition,
                committed_offset=offset,
                committed_leader_epoch=-1,
                committed_metadata=metadata,
            )
        )
    response = client.call(
        request(
            8,
            version,
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            retention_time=_ms(-1),
            topics=tuple(
                nested(8, version, "OffsetCommitRequestTopic", name=t, partitions=tuple(ps))
                for t, ps in topics.items()
            ),
        )
    )
    return {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


def fetch(client, group, partitions, version=7):
    topics = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    response = client.call(
        request(
            9,
            version,
            group_id=group,
            require_stable=False,
            topics=tuple(
                nested(9, version, "OffsetFetchRequestTopic", name=t, partition_indexes=tuple(ps))
                for t, ps in topics.items()
            ),
        )
    )
    return response


def wait_for_group_state(client, group, state: str, timeout: float = 30) -> None:
    """Until DescribeGroups says `group` is in `state`: a request sent on another connection
    has then been handled (requests of two connections are not ordered)."""
    deadline = time.monotonic() + timeout
    describe = request(15, 5, groups=(group,), include_authorized_operations=False)
    while (found := client.call(describe).groups[0].group_state) != state:
        assert time.monotonic() < deadline, f"{group} stayed {found}, never {state}"
        time.sleep(0.02)


def ready_coordinator(client, group) -> None:
    """FindCoordinator (creating __consumer_offsets), then wait for the partition to load."""
    deadline = time.monotonic() + 30  # 50 partitions made and loaded on a busy machine
    # The first lookup creates the topic; like Kafka, it may answer COORDINATOR_NOT_AVAILABLE.
    while client.call(request(10, 1, key=group, key_type=0)).error_code:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    while client.call(request(9, 7, group_id=group, topics=None, require_stable=False)).error_code:
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.fixture
def topic(group_broker, topic_name):
    """A 3-partition topic (auto-created through Metadata)."""
    with WireClient(group_broker.bootstrap) as client:
        client.call(
            request(
                3,
                9,
                topics=(nested(3, 9, "MetadataRequestTopic", name=topic_name),),
                allow_auto_topic_creation=True,
                include_topic_authorized_operations=False,
                include_cluster_authorized_operations=False,
            )
        )
    return topic_name


# FindCoordinator ----------------------------------------------------------------------------
@pytest.mark.parametrize("version", range(0, 7))
def test_find_coordinator_every_version(group_broker, version):
    with WireClient(group_broker.bootstrap) as client:
        if version >= 4:
            response = client.call(
                request(10, version, key_type=0, coordinator_keys=("a", "b", "polygenelubricants"))
            )
            assert [c.key for c in response.coordinators] == ["a", "b", "polygenelubricants"]
            for found in response.coordinators:
                assert found.error_code == E.none
                assert (found.node_id, found.port) == (1, group_broker.port)
        else:
            response = client.call(request(10, version, key="a", key_type=0))
            assert response.error_code == E.none
            assert (response.node_id, response.host, response.port) == (
                1,
                "127.0.0.1",
                group_broker.port,
            )


def test_find_coordinator_for_transactional_ids(group_broker):
    """Key type 1 finds the transaction coordinator (the leader of the id's
    __transaction_state partition, created on first use), in every version; unknown key
    types are INVALID_REQUEST."""
    with WireClient(group_broker.bootstrap) as client:
        deadline = time.monotonic() + 30
        while True:
            response = client.call(request(10, 3, key="txn", key_type=1))
            if response.error_code != E.coordinator_not_available:
                break
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert response.error_code == E.none
        assert (response.node_id, response.port) == (1, group_broker.port)
        batched = client.call(request(10, 4, key_type=1, coordinator_keys=("t1", "t2")))
        assert [c.error_code for c in batched.coordinators] == [E.none] * 2
        response = client.call(request(10, 6, key_type=2, coordinator_keys=("share",)))
        assert response.coordinators[0].error_code == E.invalid_request


def test_offsets_topic_is_internal_compacted_and_has_fifty_partitions(group_broker):
    with WireClient(group_broker.bootstrap) as client:
        client.call(request(10, 0, key="any"))
        response = client.call(
            request(
                3,
                9,
                topics=(nested(3, 9, "MetadataRequestTopic", name="__consumer_offsets"),),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
                include_cluster_authorized_operations=False,
            )
        )
        (found,) = response.topics
        assert found.error_code == E.none and found.is_internal
        assert len(found.partitions) == 50
        assert all(len(p.replica_nodes) == 1 for p in found.partitions)  # capped at 1 broker
        configs = client.call(
            request(
                32,
                1,
                resources=(
                    nested(
                        32,
                        1,
                        "DescribeConfigsResource",
                        resource_type=2,
                        resource_name="__consumer_offsets",
                        configuration_keys=("cleanup.policy", "segment.bytes"),
                    ),
                ),
                include_synonyms=False,
            )
        )
        values = {c.name: c.value for c in configs.results[0].configs}
        assert values == {"cleanup.policy": "compact", "segment.bytes": "104857600"}


# Standalone commits ------------------------------------------------------------------------
def test_standalone_commit_and_fetch_keep_metadata_unchanged(group_broker, topic):
    group = new_group()
    metadata = "ünïcode metadata {json: [1,2]} " + "x" * 100
    with WireClient(group_broker.bootstrap) as client:
        errors = commit(client, group, -1, "", {(topic, 0): (42, metadata), (topic, 2): (7, "")})
        assert errors == {(topic, 0): E.none, (topic, 2): E.none}
        for version in (1, 2, 5, 7):
            response = fetch(client, group, [(topic, 0), (topic, 1), (topic, 2)], version)
            rows = {p.partition_index: p for t in response.topics for p in t.partitions}
            assert (rows[0].committed_offset, rows[0].metadata) == (42, metadata)
            assert rows[1].committed_offset == -1
            assert (rows[2].committed_offset, rows[2].metadata) == (7, "")
        # v2+: null topics means every committed partition.
        response = client.call(request(9, 7, group_id=group, topics=None, require_stable=False))
        assert sorted(
            (p.partition_index, p.committed_offset) for p in response.topics[0].partitions
        ) == [(0, 42), (2, 7)]


def test_offset_fetch_several_groups_at_once(group_broker, topic):
    groups = [new_group() for _ in range(3)]
    with WireClient(group_broker.bootstrap) as client:
        for i, group in enumerate(groups[:2]):
            commit(client, group, -1, "", {(topic, 1): (100 + i, f"m{i}")})
        response = client.call(
            request(
                9,
                8,
                require_stable=True,
                groups=tuple(
                    nested(
                        9,
                        8,
                        "OffsetFetchRequestGroup",
                        group_id=g,
                        topics=(
                            nested(
                                9, 8, "OffsetFetchRequestTopics", name=topic, partition_indexes=(1,)
                            ),
                        ),
                    )
                    for g in groups
                ),
            )
        )
    got = {
        g.group_id: (
            g.error_code,
            g.topics[0].partitions[0].committed_offset,
            g.topics[0].partitions[0].metadata,
        )
        for g in response.groups
    }
    assert got == {
        groups[0]: (E.none, 100, "m0"),
        groups[1]: (E.none, 101, "m1"),
        groups[2]: (E.none, -1, ""),
    }


def test_commit_errors_per_partition(group_broker, topic):
    group = new_group()
    with WireClient(group_broker.bootstrap) as client:
        errors = commit(
            client,
            group,
            -1,
            "",
            {
                (topic, 0): (1, "x" * 4097),
                (topic, 9): (1, ""),
                ("no-such-topic", 0): (1, ""),
                (topic, 1): (5, ""),
            },
        )
        assert errors == {
            (topic, 0): E.offset_metadata_too_large,
            (topic, 9): E.unknown_topic_or_partition,
            ("no-such-topic", 0): E.unknown_topic_or_partition,
            (topic, 1): E.none,
        }
        # A generation for a group that does not exist: the commit is fenced.
        assert commit(client, new_group(), 3, "someone", {(topic, 0): (1, "")}) == {
            (topic, 0): E.illegal_generation
        }
        assert (
            client.call(
                request(
                    11,
                    5,
                    group_id="",
                    session_timeout=_ms(6000),
                    rebalance_timeout=_ms(6000),
                    member_id="",
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocols=(),
                )
            ).error_code
            == E.invalid_group_id
        )


# Join, sync, heartbeat, fencing -----------------------------------------------------------------
def test_member_id_required_round_trip_then_stable_group(group_broker, topic):
    group = new_group()
    with WireClient(group_broker.bootstrap) as client:
        first = join(client, group, version=4)
        assert first.error_code == E.member_id_required
        assert first.member_id.startswith("wire-test-")
        joined = join(client, group, first.member_id, version=4)
        assert joined.error_code == E.none
        assert (joined.generation_id, joined.leader, joined.member_id) == (
            1,
            first.member_id,
            first.member_id,
        )
        assert joined.protocol_name == "range"
        assert [m.member_id for m in joined.members] == [first.member_id]
        assert joined.members[0].metadata == subscription("t")
        mine = assignment(topic, [0, 1, 2])
        synced = sync(client, group, 1, joined.member_id, [(joined.member_id, mine)])
        assert (synced.error_code, synced.assignment) == (E.none, mine)
        assert heartbeat(client, group, 1, joined.member_id) == E.none
        # Fencing: a stale generation, an unknown member, a stale sync.
        assert heartbeat(client, group, 0, joined.member_id) == E.illegal_generation
        assert heartbeat(client, group, 1, "nobody") == E.unknown_member_id
        assert sync(client, group, 0, joined.member_id).error_code == E.illegal_generation
        assert commit(client, group, 0, joined.member_id, {(topic, 0): (1, "")}) == {
            (topic, 0): E.illegal_generation
        }
        assert commit(client, group, 1, "nobody", {(topic, 0): (1, "")}) == {
            (topic, 0): E.unknown_member_id
        }
        # A standalone commit cannot write over an active group's offsets.
        assert commit(client, group, -1, "", {(topic, 0): (1, "")}) == {
            (topic, 0): E.unknown_member_id
        }
        assert commit(client, group, 1, joined.member_id, {(topic, 0): (11, "ok")}) == {
            (topic, 0): E.none
        }
        # Before v4 a new member joins in one step.
        with WireClient(group_broker.bootstrap) as old:
            assert join(old, new_group(), version=3).error_code == E.none


def test_second_member_triggers_rebalance_in_progress(group_broker, topic):
    group = new_group()
    with WireClient(group_broker.bootstrap) as a, WireClient(group_broker.bootstrap) as b:
        first = join_dynamic(a, group)
        sync(a, group, 1, first.member_id, [(first.member_id, assignment(topic, [0, 1, 2]))])
        b_first = join(b, group)
        assert b_first.error_code == E.member_id_required
        b.send(join_request(group, b_first.member_id))  # parks until the rebalance completes
        wait_for_group_state(a, group, "PreparingRebalance")
        assert heartbeat(a, group, 1, first.member_id) == E.rebalance_in_progress
        assert sync(a, group, 1, first.member_id).error_code == E.rebalance_in_progress
        # Commits of the old generation are still accepted while members rejoin.
        assert commit(a, group, 1, first.member_id, {(topic, 0): (3, "")}) == {(topic, 0): E.none}
        rejoined = join(a, group, first.member_id)
        _, b_joined = b.receive(JOIN, 5)
        assert rejoined.generation_id == b_joined.generation_id == 2
        assert rejoined.leader == first.member_id
        assert sorted(m.member_id for m in rejoined.members) == sorted(
            [first.member_id, b_first.member_id]
        )
        assert b_joined.members == ()
        # CompletingRebalance: commits wait for the assignment.
        assert commit(a, group, 2, first.member_id, {(topic, 0): (4, "")}) == {
            (topic, 0): E.rebalance_in_progress
        }
        b.send(
            request(
                14,
                3,
                group_id=group,
                generation_id=2,
                member_id=b_first.member_id,
                group_instance_id=None,
                assignments=(),
            )
        )
        a_sync = sync(
            a,
            group,
            2,
            first.member_id,
            [
                (first.member_id, assignment(topic, [0, 1])),
                (b_first.member_id, assignment(topic, [2])),
            ],
        )
        _, b_sync = b.receive(14, 3)
        assert a_sync.assignment == assignment(topic, [0, 1])
        assert b_sync.assignment == assignment(topic, [2])
        # A leave makes the remaining member rebalance alone.
        left = b.call(request(13, 1, group_id=group, member_id=b_first.member_id))
        assert left.error_code == E.none
        assert heartbeat(a, group, 2, first.member_id) == E.rebalance_in_progress
        assert join(a, group, first.member_id).generation_id == 3


def test_a_leader_that_never_syncs_is_removed_after_the_rebalance_timeout(group_broker, topic):
    """Kafka's pending-sync expiry: members of a new generation that send no SyncGroup
    within the rebalance timeout are removed and the group rebalances without them, even
    if they keep heartbeating (a long session timeout would not free the group)."""
    group = new_group()
    timeouts = {"session": 60000, "rebalance": 1500}
    with WireClient(group_broker.bootstrap) as a, WireClient(group_broker.bootstrap) as b:
        first = join_dynamic(a, group, **timeouts)
        sync(a, group, 1, first.member_id, [(first.member_id, assignment(topic, [0, 1, 2]))])
        b_first = join(b, group, **timeouts)
        b.send(join_request(group, b_first.member_id, **timeouts))
        wait_for_group_state(a, group, "PreparingRebalance")
        assert heartbeat(a, group, 1, first.member_id) == E.rebalance_in_progress
        rejoined = join(a, group, first.member_id, **timeouts)
        _, b_joined = b.receive(JOIN, 5)
        assert rejoined.leader == first.member_id and b_joined.generation_id == 2
        # The follower syncs and waits for an assignment the leader never sends; the leader
        # heartbeats (CompletingRebalance answers NONE) but never syncs.
        b.send(sync_request(group, 2, b_first.member_id))
        assert heartbeat(a, group, 2, first.member_id) == E.none
        _, b_sync = b.receive(14, 3)
        assert b_sync.error_code == E.rebalance_in_progress
        assert heartbeat(a, group, 2, first.member_id) == E.unknown_member_id
        alone = join(b, group, b_first.member_id, **timeouts)
        assert (alone.error_code, alone.generation_id, alone.leader) == (
            E.none,
            3,
            b_first.member_id,
        )
        assert [m.member_id for m in alone.members] == [b_first.member_id]
        synced = sync(b, group, 3, b_first.member_id, [(b_first.member_id, b"x")])
        assert synced.error_code == E.none
    assert "did not sync generation 2" in group_broker.output


def test_static_member_replacement_fences_the_old_instance(group_broker, topic):
    group = new_group()
    with WireClient(group_broker.bootstrap) as a, WireClient(group_broker.bootstrap) as b:
        joined = join(a, group, instance_id="instance-1")  # static: no MEMBER_ID_REQUIRED
        assert joined.error_code == E.none and joined.member_id.startswith("instance-1-")
        mine = assignment(topic, [0, 1, 2])
        sync(a, group, 1, joined.member_id, [(joined.member_id, mine)], instance_id="instance-1")
        # The instance restarts: a new member id, the same generation, no rebalance.
        again = join(b, group, instance_id="instance-1")
        assert again.error_code == E.none
        assert again.generation_id == 1 and again.member_id != joined.member_id
        resynced = sync(b, group, 1, again.member_id, instance_id="instance-1")
        assert (resynced.error_code, resynced.assignment) == (E.none, mine)
        assert heartbeat(b, group, 1, again.member_id, "instance-1") == E.none
        # The old incarnation is fenced everywhere.
        assert heartbeat(a, group, 1, joined.member_id, "instance-1") == E.fenced_instance_id
        assert commit(
            a, group, 1, joined.member_id, {(topic, 0): (1, "")}, instance_id="instance-1"
        ) == {(topic, 0): E.fenced_instance_id}
        assert (
            join(a, group, joined.member_id, instance_id="instance-1").error_code
            == E.fenced_instance_id
        )
        # Batched leave: per-member answers.
        response = a.call(
            request(
                13,
                4,
                group_id=group,
                members=(
                    nested(
                        13,
                        4,
                        "MemberIdentity",
                        member_id=joined.member_id,
                        group_instance_id="instance-1",
                    ),
                    nested(
                        13, 4, "MemberIdentity", member_id="", group_instance_id="unknown-instance"
                    ),
                    nested(13, 4, "MemberIdentity", member_id="", group_instance_id="instance-1"),
                ),
            )
        )
        assert response.error_code == E.none
        assert [m.error_code for m in response.members] == [
            E.fenced_instance_id,
            E.unknown_member_id,
            E.none,
        ]
        describe = a.call(request(15, 5, groups=(group,), include_authorized_operations=False))
        assert describe.groups[0].group_state == "Empty"


def test_invalid_session_timeout_and_inconsistent_protocol(group_broker):
    group = new_group()
    with WireClient(group_broker.bootstrap) as client:
        assert join(client, group, session=1000).error_code == E.invalid_session_timeout
        joined = join_dynamic(client, group)
        other = request(
            JOIN,
            5,
            group_id=group,
            session_timeout=_ms(6000),
            rebalance_timeout=_ms(6000),
            member_id="",
            group_instance_id=None,
            protocol_type="connect",
            protocols=(nested(JOIN, 5, "JoinGroupRequestProtocol", name="range", metadata=b""),),
        )
        assert client.call(other).error_code == E.inconsistent_group_protocol
        assert joined.error_code == E.none


def test_group_max_size(make_broker):
    broker = make_broker(group_max_size="2", group_initial_rebalance_delay_ms="0").start()
    group = new_group()
    with (
        WireClient(broker.bootstrap) as a,
        WireClient(broker.bootstrap) as b,
        WireClient(broker.bootstrap) as c,
    ):
        ready_coordinator(a, group)
        a_joined = join(a, group, instance_id="a")
        b.send(join_request(group, instance_id="b"))
        wait_for_group_state(a, group, "PreparingRebalance")  # b's join parked
        rejoin = join(a, group, a_joined.member_id, instance_id="a")
        _, b_joined = b.receive(JOIN, 5)
        assert rejoin.generation_id == b_joined.generation_id == 2
        c_first = join(c, group, instance_id="c")
        assert c_first.error_code == E.group_max_size_reached
        assert heartbeat(a, group, 2, a_joined.member_id, "a") == E.none


# Admin APIs ---------------------------------------------------------------------------------------
def test_list_describe_delete_and_offset_delete(group_broker, topic):
    active, standalone = new_group(), new_group()
    with WireClient(group_broker.bootstrap) as client:
        member = join_dynamic(client, active, topics=(topic,))
        sync(client, active, 1, member.member_id, [(member.member_id, assignment(topic, [0]))])
        commit(client, active, 1, member.member_id, {(topic, 0): (5, "")})
        commit(client, active, 1, member.member_id, {("__consumer_offsets", 0): (5, "")})
        commit(client, standalone, -1, "", {(topic, 1): (9, "")})

        listed = client.call(request(16, 4, states_filter=()))
        states = {g.group_id: (g.protocol_type, g.group_state) for g in listed.groups}
        assert states[active] == ("consumer", "Stable")
        assert states[standalone] == ("", "Empty")
        only_stable = client.call(request(16, 4, states_filter=("Stable",)))
        assert standalone not in {g.group_id for g in only_stable.groups}

        described = client.call(
            request(15, 5, groups=(active, "never-seen"), include_authorized_operations=True)
        )
        group, missing = described.groups
        assert (group.group_state, group.protocol_type, group.protocol_data) == (
            "Stable",
            "consumer",
            "range",
        )
        (row,) = group.members
        assert (row.member_id, row.client_id, row.client_host) == (
            member.member_id,
            "wire-test",
            "/127.0.0.1",
        )
        assert row.member_assignment == assignment(topic, [0])
        assert row.member_metadata == subscription(topic)
        assert group.authorized_operations > 0
        assert (missing.error_code, missing.group_state) == (E.none, "Dead")
        v6 = client.call(
            request(15, 6, groups=("never-seen",), include_authorized_operations=False)
        )
        assert v6.groups[0].error_code == E.group_id_not_found

        # Offsets of a subscribed topic stay while the group is active; others may go.
        deleted = client.call(
            request(
                47,
                0,
                group_id=active,
                topics=(
                    nested(
                        47,
                        0,
                        "OffsetDeleteRequestTopic",
                        name=topic,
                        partitions=(
                            nested(47, 0, "OffsetDeleteRequestPartition", partition_index=0),
                        ),
                    ),
                    nested(
                        47,
                        0,
                        "OffsetDeleteRequestTopic",
                        name="__consumer_offsets",
                        partitions=(
                            nested(47, 0, "OffsetDeleteRequestPartition", partition_index=0),
                        ),
                    ),
                ),
            )
        )
        errors = {t.name: t.partitions[0].error_code for t in deleted.topics}
        assert errors == {topic: E.group_subscribed_to_topic, "__consumer_offsets": E.none}

        result = client.call(request(42, 2, groups_names=(active, standalone, "never-seen")))
        assert [r.error_code for r in result.results] == [
            E.non_empty_group,
            E.none,
            E.group_id_not_found,
        ]
        assert (
            fetch(client, standalone, [(topic, 1)]).topics[0].partitions[0].committed_offset == -1
        )

        client.call(request(13, 1, group_id=active, member_id=member.member_id))
        assert client.call(request(42, 1, groups_names=(active,))).results[0].error_code == E.none
        listed = client.call(request(16, 0))
        assert active not in {g.group_id for g in listed.groups}


def test_coordinator_partition_matches_the_formula(group_broker):
    # Every group maps to a partition of the 50 this broker leads; the formula is shared.
    assert partition_for("polygenelubricants", 50) == 0
    with WireClient(group_broker.bootstrap) as client:
        response = client.call(request(10, 1, key="polygenelubricants", key_type=0))
        assert response.error_code == E.none


def test_shutdown_answers_parked_joins_with_not_coordinator(make_broker):
    broker = make_broker(group_initial_rebalance_delay_ms="0").start()
    group = new_group()
    with WireClient(broker.bootstrap) as a, WireClient(broker.bootstrap, timeout=30) as b:
        ready_coordinator(a, group)
        join(a, group, instance_id="a")
        b.send(join_request(group, instance_id="b"))  # parks: a has not rejoined
        wait_for_group_state(a, group, "PreparingRebalance")
        assert broker.terminate() == 0
        _, parked = b.receive(JOIN, 5)
        assert parked.error_code == E.not_coordinator
