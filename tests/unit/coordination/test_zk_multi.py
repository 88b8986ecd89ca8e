"""Many znodes per ZooKeeper request (zk_multi): multi-reads and batched write multis.

Every request ZkClient sends to a real ZooKeeper is counted (kazoo's KazooClient._call,
which queues each one). The code before sent one request per znode: reading or writing
1,000 partition states cost 1,000 requests, each with its own cost at both ends.
Per znode the outcome stays its own: a missing znode, a version clash or a missing parent
fails only that znode, and a failed controller fence fails the lot.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from brokerd.coordination import zk_multi
from brokerd.coordination.zk_client import ControllerMovedError, ZkClient
from tests.harness import java_available

pytestmark = pytest.mark.skipif(not java_available(), reason="needs Debian's zookeeper")

COUNT = 1000
_chroots = itertools.count(1)


class Requests:
    """Counts the requests one ZkClient queues on its connection."""

    def __init__(self, zk: ZkClient, monkeypatch):
        self.count = 0
        call = zk._kazoo._call

        def counted(request, async_object):
            self.count += 1
            return call(request, async_object)

        monkeypatch.setattr(zk._kazoo, "_call", counted)

    def take(self) -> int:
        count, self.count = self.count, 0
        return count


@pytest.fixture
async def zk(zookeeper):
    client = ZkClient(zookeeper.connect, f"/zk-multi-{next(_chroots)}", 10000, connect_ms=30000)
    await client.start()
    yield client
    await client.stop()


def _paths(parent: str) -> list[str]:
    return [f"{parent}/{i}" for i in range(COUNT)]


async def test_reads_of_many_znodes_take_few_requests(zk, monkeypatch):
    await zk.ensure_path("/states")
    paths = _paths("/states")
    requests = Requests(zk, monkeypatch)
    created = await zk.create_many([(p, f"state {i}".encode()) for i, p in enumerate(paths)])
    assert created == [None] * COUNT
    assert requests.take() <= COUNT // zk_multi.WRITES_PER_REQUEST + 1  # a request each before

    found = await zk.get_many(paths + ["/states/missing", "/no/such/parent"])
    assert requests.take() <= COUNT // zk_multi.READS_PER_REQUEST + 1  # 1,002 before
    assert found[:COUNT] == [(f"state {i}".encode(), 0) for i in range(COUNT)]
    assert found[COUNT:] == [None, None]

    listed = await zk.children_many(["/states", "/states/0", "/missing"])
    assert requests.take() == 1
    assert sorted(listed[0], key=int) == [str(i) for i in range(COUNT)]
    assert listed[1:] == [[], None]

    # A read with a watcher is a request of its own (multi-read sets no watches), and the
    # watch is set.
    fired = []
    await zk.get_many(paths[:3], watch=lambda path: fired.append)
    assert requests.take() == 3
    await zk.set_raw(paths[0], b"changed")
    for _ in range(200):
        if fired:
            break
        await asyncio.sleep(0.05)
    assert fired


async def test_fenced_writes_share_requests_and_a_clash_fails_only_its_znode(zk, monkeypatch):
    await zk.create_raw("/epoch", b"1")
    fence = ("/epoch", 0)
    await zk.ensure_path("/states")
    paths = _paths("/states")
    await zk.create_many([(p, b"v0") for p in paths])
    clashed, gone = 123, 777
    await zk.set_raw(paths[clashed], b"a leader's ISR write")  # now at version 1
    await zk.delete(paths[gone])

    requests = Requests(zk, monkeypatch)
    results = await zk.fenced_set_many([(p, b"v1", 0) for p in paths], fence)
    assert isinstance(results[clashed], BadVersionError)
    assert isinstance(results[gone], NoNodeError)
    assert [r for i, r in enumerate(results) if i not in (clashed, gone)] == [1] * (COUNT - 2)
    # 5 multis of 200; each of the two that failed sends the writes before the failing one
    # as one multi and those after as two.
    sent = requests.take()
    assert sent <= COUNT // zk_multi.WRITES_PER_REQUEST + 2 * 3, sent
    stored = await zk.get_many(paths)
    assert stored[clashed] == (b"a leader's ISR write", 1)
    assert stored[gone] is None
    assert {s for i, s in enumerate(stored) if i not in (clashed, gone)} == {(b"v1", 1)}
    requests.take()

    # Without clashes: one request per multi.
    again = [(p, b"v2", 1) for i, p in enumerate(paths) if i not in (clashed, gone)]
    assert await zk.fenced_set_many(again, fence) == [2] * len(again)
    assert requests.take() <= COUNT // zk_multi.WRITES_PER_REQUEST + 1

    # Clashes everywhere (a leader changed every tenth ISR meanwhile): still far fewer
    # requests than writes, and each outcome its own.
    versions = {i: 2 for i in range(COUNT) if i not in (clashed, gone)}
    versions[clashed] = 1
    moved = [i for i in versions if i % 10 == 0]
    await zk.set_many([(paths[i], b"leader", versions[i]) for i in moved])
    requests.take()
    results = await zk.fenced_set_many([(paths[i], b"v3", v) for i, v in versions.items()], fence)
    sent = requests.take()
    assert sent < COUNT // 2, sent  # 1 per write before (998); here about 370
    by_index = dict(zip(versions, results, strict=True))
    assert all(isinstance(by_index[i], BadVersionError) for i in moved)
    assert all(by_index[i] == versions[i] + 1 for i in versions if i not in moved)
    stored = await zk.get_many(paths)
    assert all(stored[i] == (b"leader", versions[i] + 1) for i in moved)
    assert all(stored[i] == (b"v3", versions[i] + 1) for i in versions if i not in moved)
    requests.take()
    again = [(paths[i], b"v3", versions[i] + 1) for i in versions]

    # Another controller took office: nothing is written.
    await zk.set_raw("/epoch", b"2")
    with pytest.raises(ControllerMovedError):
        await zk.fenced_set_many([(p, b"v4", v) for p, _d, v in again], fence)
    assert {s[0] for s in await zk.get_many([p for p, _d, _v in again])} == {b"v3", b"leader"}


async def test_fenced_creates_and_deletes_in_multis(zk, monkeypatch):
    await zk.create_raw("/epoch", b"1")
    fence = ("/epoch", 0)
    await zk.ensure_path("/created")
    paths = _paths("/created")
    await zk.create_raw(paths[5], b"made before")
    requests = Requests(zk, monkeypatch)
    results = await zk.fenced_create_many(
        [(p, b"new") for p in paths] + [("/no-parent/x", b"new")], fence
    )
    assert isinstance(results[5], NodeExistsError)
    assert isinstance(results[COUNT], NoNodeError)
    assert [r for i, r in enumerate(results[:COUNT]) if i != 5] == [None] * (COUNT - 1)
    assert requests.take() < COUNT // 2
    stored = await zk.get_many(paths)
    assert stored[5] == (b"made before", 0)
    assert {s for i, s in enumerate(stored) if i != 5} == {(b"new", 0)}
    requests.take()

    assert await zk.delete_many(paths) == [None] * COUNT
    assert requests.take() <= COUNT // zk_multi.WRITES_PER_REQUEST + 1
    assert await zk.children_many(["/created"]) == [[]]


async def test_without_multi_read_a_request_per_znode(zk, monkeypatch):
    """What a ZooKeeper before 3.6 gets (ZkClient clears multi_read when one is refused)."""
    await zk.ensure_path("/old")
    paths = _paths("/old")[:50]
    await zk.create_many([(p, b"x") for p in paths])
    zk.multi_read = False
    requests = Requests(zk, monkeypatch)
    assert await zk.get_many(paths + ["/old/missing"]) == [(b"x", 0)] * 50 + [None]
    assert await zk.children_many(["/old/0", "/nope"]) == [[], None]
    assert requests.take() == 53
