"""ZkClient's kazoo connection writes a pipelined batch in a few socket writes (issue 15).

kazoo's own loop wrote one request per turn (and opened a selector for every socket wait),
so a batch of N requests cost N turns of its thread: the controller's 1,000-partition
batches spent seconds there. Against a real ZooKeeper: the requests of a batch go out in a
few writes, every answer still matches its request (values, missing znodes, refused
conditional writes, in order), watches set by a batch fire, and a batch cut by a ZooKeeper
restart completes once it is back.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time

import pytest
from kazoo.exceptions import BadVersionError

from brokerd.coordination.zk_client import ZkClient
from tests.harness import ZooKeeper, java_available

pytestmark = pytest.mark.skipif(not java_available(), reason="needs Debian's zookeeper")

COUNT = 400


@pytest.fixture
async def zk(zookeeper):
    client = ZkClient(zookeeper.connect, "/zk-connection", 20000, connect_ms=60000)
    await client.start()
    yield client
    await client.stop()


def count_writes(client: ZkClient, monkeypatch) -> list[int]:
    """The sizes of the connection's socket writes from now on. The first write holds the
    connection thread for a moment, so that the rest of a batch queued meanwhile is waiting
    for it (otherwise how many requests share a write depends on thread timing)."""
    connection = client._kazoo._connection
    writes: list[int] = []
    original = connection._write

    def counted(msg, timeout):
        if not writes:
            time.sleep(0.3)
        writes.append(len(msg))
        return original(msg, timeout)

    monkeypatch.setattr(connection, "_write", counted)
    return writes


async def test_a_batch_goes_out_in_a_few_writes_and_every_answer_matches(zk, monkeypatch):
    await zk.ensure_path("/batch")
    created = await zk.create_many([(f"/batch/n{i}", str(i).encode()) for i in range(COUNT)])
    assert created == [None] * COUNT
    writes = count_writes(zk, monkeypatch)

    paths = [f"/batch/n{i}" if i % 3 else f"/batch/missing{i}" for i in range(COUNT)]
    found = await zk.get_many(paths)

    assert len(writes) < COUNT // 10, len(writes)  # kazoo's loop: one write per request
    for i, answer in enumerate(found):
        assert answer == ((str(i).encode(), 0) if i % 3 else None), (i, answer)
    # Conditional writes: every other one at a wrong version, refused alone.
    results = await zk.set_many(
        [(f"/batch/n{i}", b"new", 0 if i % 2 else 5) for i in range(1, COUNT)]
    )
    for i, result in enumerate(results, start=1):
        if i % 2:
            assert result == 1, (i, result)
        else:
            assert isinstance(result, BadVersionError), (i, result)


async def test_watches_set_by_a_batch_fire(zookeeper, zk):
    await zk.ensure_path("/watched")
    await zk.create_many([(f"/watched/n{i}", b"0") for i in range(COUNT)])
    fired: set[str] = set()
    every = asyncio.Event()

    def watcher(path: str):
        def fire(event) -> None:
            fired.add(event.path)
            if len(fired) == COUNT:
                every.set()

        return fire

    await zk.get_many([f"/watched/n{i}" for i in range(COUNT)], watch=watcher)
    other = ZkClient(zookeeper.connect, "/zk-connection", 20000, connect_ms=60000)
    await other.start()
    try:
        await other.set_many([(f"/watched/n{i}", b"1", 0) for i in range(COUNT)])
        await asyncio.wait_for(every.wait(), 60)
    finally:
        await other.stop()
    assert len(fired) == COUNT


async def test_a_batch_cut_by_a_zookeeper_restart_completes(tmp_path):
    server = ZooKeeper(tmp_path).start()
    client = ZkClient(server.connect, "/cut", 20000, connect_ms=60000)
    await client.start()
    try:
        await client.ensure_path("/cut")
        count = 3000
        batch = asyncio.create_task(
            client.create_many([(f"/cut/n{i}", b"x") for i in range(count)])
        )
        # Stop ZooKeeper once part of the batch is out (kazoo's pending list holds it).
        while not batch.done() and not client._kazoo._pending:
            await asyncio.sleep(0)
        server.stop()  # kill -9: the connection drops, the session lives on disk
        await asyncio.sleep(0.5)
        await asyncio.to_thread(server.start)
        results = await asyncio.wait_for(batch, 120)
        # Each created once: those whose answer was lost meet their own NodeExistsError.
        assert all(r is None or type(r).__name__ == "NodeExistsError" for r in results)
        names = await client.children("/cut")
        assert sorted(names) == sorted(f"n{i}" for i in range(count))
    finally:
        await client.stop()
        server.stop()


async def test_requests_queued_by_other_threads_during_a_batch_break_nothing(zookeeper):
    """Threads queue requests while the connection thread writes a batch (a broker's
    to_thread calls do): the connection stays up and every answer matches. Iterating
    kazoo's queue while encoding ended the connection with "deque mutated during
    iteration" (ConnectionLoss for all pending requests, seen in CI)."""
    client = ZkClient(zookeeper.connect, "/zk-connection", 20000, connect_ms=60000)
    await client.start()
    await client.ensure_path("/threads")
    await client.create_many([(f"/threads/n{i}", str(i).encode()) for i in range(COUNT)])
    kazoo = client._kazoo
    results: dict[int, list[bool] | BaseException] = {}

    def reader(k: int) -> None:
        offset = k * 37
        try:
            pending = [
                (i, kazoo.get_async(f"/threads/n{(i + offset) % COUNT}")) for i in range(COUNT)
            ]
            results[k] = [
                answer.get(timeout=60)[0] == str((i + offset) % COUNT).encode()
                for i, answer in pending
            ]
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            results[k] = error

    # Daemon threads joined with a deadline: if the connection thread died, kazoo's
    # get_async blocks for ever on its full wake-up socket, and the test must still end.
    readers = [threading.Thread(target=reader, args=(k,), daemon=True) for k in range(6)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads interleave as on a loaded machine
    try:
        for thread in readers:
            thread.start()
        await asyncio.to_thread(lambda: [thread.join(120) for thread in readers])
    finally:
        sys.setswitchinterval(switch)

    alive = kazoo._connection._connection_routine
    connection_up = alive is not None and alive.is_alive() and kazoo.connected
    if connection_up and not any(thread.is_alive() for thread in readers):
        await client.stop()  # stopping a client whose connection died would block too
    assert connection_up
    assert sorted(results) == list(range(6)), results
    for k, answers in results.items():
        assert isinstance(answers, list) and all(answers), (k, answers)
