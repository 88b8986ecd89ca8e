"""Reassigning many partitions at once costs a bounded number of ZooKeeper round trips and
one controller request per broker per step.

The Reassigner over a real ZooKeeper (its requests to brokers recorded): moving every
partition of two topics writes each topic znode once and every state in one pipelined
batch of fenced writes, at the start and at the completion alike; LeaderAndIsr, StopReplica
and UpdateMetadata go out grouped per broker. The code before went one partition at a time,
four or five round trips and a request per broker each.
"""

from __future__ import annotations

import pytest

from brokerd.coordination import zk_data
from brokerd.coordination.partition_states import PartitionStateWriter
from brokerd.coordination.reassignment import Reassigner
from brokerd.coordination.zk_client import ZkClient
from brokerd.protocol.errors import ErrorCode
from tests.harness import java_available

from .controller_parts import build
from .test_zk_round_trips import RoundTrips

pytestmark = pytest.mark.skipif(not java_available(), reason="needs Debian's zookeeper")

LIVE = {1: 101, 2: 102, 3: 103}
SIZES = {"big": 300, "small": 50}


@pytest.fixture
async def parts(zookeeper):
    made = await build(zookeeper, LIVE)
    yield made
    await made.close()


@pytest.fixture
async def own_session(parts):
    """A Reassigner (and state writer) of the same controller on a ZooKeeper session of its
    own, so only its round trips are counted (not the metadata cache's watch reads)."""
    zk = ZkClient(parts.zk.hosts, parts.zk.chroot, 6000, connect_ms=10000)
    await zk.start()

    async def superseded() -> None:
        parts.superseded.append(True)

    states = PartitionStateWriter(zk, parts.cache, parts.context, superseded)
    reassigner = Reassigner(
        zk,
        parts.cache,
        parts.context,
        parts.requests,
        states,
        on_superseded=superseded,
        schedule_event=parts.scheduled.append,
    )
    yield zk, reassigner
    await zk.stop()


async def test_moving_many_partitions_is_a_few_batches_and_a_request_per_broker(
    parts, own_session, monkeypatch
):
    zk, reassigner = own_session
    for topic, count in SIZES.items():
        await parts.create_topic(topic, {p: [1, 2] for p in range(count)})
    keys = [(topic, p) for topic, count in SIZES.items() for p in range(count)]
    counter = RoundTrips(zk, monkeypatch)

    results = await reassigner.alter(dict.fromkeys(keys, [1, 3]))

    assert results == dict.fromkeys(keys, (ErrorCode.none, None))
    started = counter.total
    # The legacy znode, the topic znodes read and written, the states read and written;
    # one partition at a time was four or five round trips per partition (1,400 here).
    assert started < 12, started
    for topic, count in SIZES.items():
        znode = await parts.topic_znode(topic)
        assert all(znode["partitions"][str(p)] == [1, 3, 2] for p in range(count))
        assert znode["adding_replicas"] == {str(p): [3] for p in range(count)}
    sent = parts.requests.take()
    # One LeaderAndIsr per replica's broker, naming every partition (epoch 1, RS).
    assert [(kind, broker) for kind, broker, *_ in sent] == [("LeaderAndIsr", b) for b in (1, 3, 2)]
    for _kind, _broker, entries in sent:
        assert sorted((t, i) for t, i, *_ in entries) == sorted(keys)
        assert {(leader, epoch, tuple(rs)) for _t, _i, leader, epoch, _isr, rs in entries} == {
            (1, 1, (1, 3, 2))
        }
    assert len(reassigner.list()) == len(keys)

    # Every leader took broker 3 into its ISR (as leaders write it, in one batch here).
    current = await parts.zk.get_json_many([zk_data.partition_state_path(*k) for k in keys])
    written = await parts.zk.set_many(
        [
            (
                zk_data.partition_state_path(*key),
                zk_data.encode({**data, "isr": [1, 2, 3]}),
                version,
            )
            for key, (data, version) in zip(keys, current, strict=True)
        ]
    )
    assert all(isinstance(v, int) for v in written)
    before = counter.total

    await reassigner.isr_changed(keys)

    completed = counter.total - before
    assert completed < 12, completed  # one at a time was five per partition (1,750)
    for topic, count in SIZES.items():
        znode = await parts.topic_znode(topic)
        assert all(znode["partitions"][str(p)] == [1, 3] for p in range(count))
        assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
    states = await parts.zk.get_json_many([zk_data.partition_state_path(*k) for k in keys])
    assert {(d["leader"], d["leader_epoch"], tuple(d["isr"])) for d, _v in states} == {
        (1, 2, (1, 3))
    }
    sent = parts.requests.take()
    kinds = [(kind, broker) for kind, broker, *_ in sent]
    assert kinds == [
        ("LeaderAndIsr", 1),
        ("LeaderAndIsr", 3),
        ("StopReplica", 2),
        ("StopReplica", 2),
        *[("UpdateMetadata", b) for b in LIVE],
    ]
    stops = {entry[2]: entry[3] for entry in sent if entry[0] == "StopReplica"}
    assert stops == {topic: list(range(count)) for topic, count in SIZES.items()}
    assert reassigner.list() == {}
    assert parts.cache.topic("big").assignment[299] == [1, 3]


async def test_one_refused_partition_does_not_hold_back_the_others(parts):
    await parts.create_topic("mixed", {p: [1, 2] for p in range(3)})

    results = await parts.reassigner.alter(
        {("mixed", 0): [1, 3], ("mixed", 1): [1, 4], ("mixed", 7): [1, 3], ("mixed", 2): [2, 3]}
    )

    assert results[("mixed", 0)] == (ErrorCode.none, None)
    assert results[("mixed", 2)] == (ErrorCode.none, None)
    assert results[("mixed", 1)][0] == ErrorCode.invalid_replica_assignment
    assert results[("mixed", 7)][0] == ErrorCode.unknown_topic_or_partition
    znode = await parts.topic_znode("mixed")
    assert znode["partitions"] == {"0": [1, 3, 2], "1": [1, 2], "2": [2, 3, 1]}
    assert znode["adding_replicas"] == {"0": [3], "2": [3]}
    assert znode["removing_replicas"] == {"0": [2], "2": [1]}


async def test_a_topic_whose_znode_keeps_changing_fails_only_its_own_partitions(parts, own_session):
    """Another writer changes topic "busy"'s znode before each of the reassigner's writes:
    every write of it clashes. Its partitions are refused; those of "calm", written in the
    same batches, are answered NONE and their reassignment goes on (every partition of the
    request was failed before, though "calm" had been written)."""
    zk, reassigner = own_session
    await parts.create_topic("busy", {p: [1, 2] for p in range(3)})
    await parts.create_topic("calm", {p: [1, 2] for p in range(3)})
    original = zk.fenced_set_many

    async def clashing(writes, fence):
        busy = zk_data.topic_path("busy")
        if any(path == busy for path, _data, _version in writes):
            data, _version = await parts.zk.get(busy)
            await parts.zk.set_raw(busy, data)  # same content, a newer version
        return await original(writes, fence)

    zk.fenced_set_many = clashing
    keys = [(topic, p) for topic in ("busy", "calm") for p in range(3)]

    results = await reassigner.alter(dict.fromkeys(keys, [1, 3]))

    for p in range(3):
        assert results[("calm", p)] == (ErrorCode.none, None)
        code, message = results[("busy", p)]
        assert code == ErrorCode.unknown_server_error
        assert "busy" in message
    calm = await parts.topic_znode("calm")
    assert calm["partitions"] == {str(p): [1, 3, 2] for p in range(3)}
    assert calm["adding_replicas"] == {str(p): [3] for p in range(3)}
    busy = await parts.topic_znode("busy")
    assert busy["partitions"] == {str(p): [1, 2] for p in range(3)}
    assert sorted(reassigner.list()) == [("calm", p) for p in range(3)]
    sent = parts.requests.take()
    assert sent and all(kind == "LeaderAndIsr" for kind, *_ in sent)
    for _kind, _broker, entries in sent:
        assert sorted((t, i) for t, i, *_ in entries) == [("calm", p) for p in range(3)]
