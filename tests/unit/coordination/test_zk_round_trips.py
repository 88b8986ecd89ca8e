"""No per-partition ZooKeeper round trips in series: the controller and the metadata cache
over a real ZooKeeper, with every round trip counted.

A round trip is either one blocking kazoo call (get, create, a multi's commit: the caller
waits for its answer before sending the next) or one pipelined batch of ZkClient
(`ZkClient.batches`: all its requests sent, then all answers awaited). A topic of many
partitions must cost about as many round trips as a topic of a few; the code before the
batches made three per partition (the partition znode, the fenced state, the read back).
"""

from __future__ import annotations

import pytest
from kazoo.client import TransactionRequest

from brokerd.coordination import zk_data
from brokerd.coordination.controller import Controller
from brokerd.coordination.metadata import MetadataCache
from brokerd.coordination.zk_client import ZkClient
from tests.harness import java_available

from .controller_parts import build

pytestmark = pytest.mark.skipif(not java_available(), reason="needs Debian's zookeeper")

BLOCKING = ("get", "get_children", "exists", "create", "set", "delete", "ensure_path")


class RoundTrips:
    """Counts the blocking kazoo calls of one ZkClient, plus its pipelined batches."""

    def __init__(self, zk: ZkClient, monkeypatch):
        self.zk = zk
        self.blocking = 0
        kazoo = zk._kazoo
        for name in BLOCKING:
            monkeypatch.setattr(kazoo, name, self._counted(getattr(kazoo, name)))
        commit = TransactionRequest.commit

        def counted_commit(txn, *args, **kwargs):
            if txn.client is kazoo:
                self.blocking += 1
            return commit(txn, *args, **kwargs)

        monkeypatch.setattr(TransactionRequest, "commit", counted_commit)

    def _counted(self, call):
        def counted(*args, **kwargs):
            self.blocking += 1
            return call(*args, **kwargs)

        return counted

    @property
    def total(self) -> int:
        return self.blocking + self.zk.batches


async def _controller(zookeeper, chroot: str) -> tuple[Controller, ZkClient]:
    zk = ZkClient(zookeeper.connect, chroot, 6000, connect_ms=10000)
    await zk.start()
    cache = MetadataCache(zk)
    await cache.load()
    controller = Controller(zk, 1, cache)
    assert await controller.elect()
    return controller, zk


async def _round_trips_of_creating(zookeeper, monkeypatch, chroot: str, partitions: int) -> int:
    controller, zk = await _controller(zookeeper, chroot)
    try:
        counter = RoundTrips(zk, monkeypatch)
        assignment = {p: [1] for p in range(partitions)}
        info = await controller.create_topic("wide", assignment, {})
        assert info is not None and sorted(info.states) == list(range(partitions))
        assert all(state.leader == 1 for state in info.states.values())
        stored = await zk.children(zk_data.partitions_path("wide"))
        assert len(stored) == partitions
        return counter.total
    finally:
        await controller.stop()
        await zk.stop()


async def test_creating_a_topic_costs_round_trips_independent_of_its_partitions(
    zookeeper, monkeypatch
):
    few = await _round_trips_of_creating(zookeeper, monkeypatch, "/round-trips-few", 10)
    many = await _round_trips_of_creating(zookeeper, monkeypatch, "/round-trips-many", 400)
    assert many <= few + 5, (few, many)  # watches may fire in one burst or two
    assert many < 40, many  # one per partition in series would be at least 400


async def test_elections_for_a_dead_broker_cost_a_bounded_number_of_round_trips(
    zookeeper, monkeypatch
):
    parts = await build(zookeeper, {1: 11, 2: 12, 3: 13})
    try:
        count = 300
        await parts.create_topic("led-by-2", {p: [2, 1, 3] for p in range(count)})
        counter = RoundTrips(parts.zk, monkeypatch)
        del parts.context.live[2]
        changed = await parts.machine.elect_offline({1, 3}, {2})
        assert len(changed) == count
        # One batch of fenced writes; the cache's own watches may add a few reads meanwhile.
        assert counter.total < 20, counter.total  # a write per partition would be 300
        for index in (0, count - 1):
            state = await parts.state("led-by-2", index)
            assert (state.leader, state.isr, state.leader_epoch) == (1, [1, 3], 1)
    finally:
        await parts.close()


async def test_a_changed_assignment_reads_only_the_new_partitions(zookeeper, monkeypatch):
    parts = await build(zookeeper, {1: 11})
    try:
        await parts.create_topic("growing", {p: [1] for p in range(300)})
        data = await parts.topic_znode("growing")
        data["partitions"]["300"] = [1]
        before = parts.zk.reads
        await parts.zk.set_json(zk_data.topic_path("growing"), data)
        await parts.zk.create_json(
            zk_data.partition_state_path("growing", 300),
            zk_data.PartitionState(1, 0, [1], parts.context.epoch).to_json(),
        )

        async def grown() -> bool:
            info = parts.cache.topic("growing")
            return info is not None and 300 in info.states

        await _eventually(grown)
        assert parts.zk.reads - before < 10, parts.zk.reads - before  # not 301 states
    finally:
        await parts.close()


async def _eventually(check, timeout: float = 20.0) -> None:
    import asyncio

    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)
