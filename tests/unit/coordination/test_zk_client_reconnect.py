"""ZkClient rides out a dropped ZooKeeper connection, as KafkaZkClient does.

A request sent while the connection is down waits for it and is sent again; a write whose
reply was lost is not applied twice. Seen before: a broker whose ZooKeeper restarted while
its controller election read /admin/delete_topics exited with ConnectionLoss.
"""

from __future__ import annotations

import asyncio

import pytest
from kazoo.exceptions import ConnectionLoss, NodeExistsError

from brokerd.coordination.zk_client import ZkClient
from tests.harness import ZooKeeper, java_available

pytestmark = pytest.mark.skipif(not java_available(), reason="needs Debian's zookeeper")


@pytest.fixture
def own_zookeeper(tmp_path):
    server = ZooKeeper(tmp_path).start()
    yield server
    server.stop()


def client_of(server: ZooKeeper) -> ZkClient:
    # A ZooKeeper just started on a loaded machine can take a while to take its first session.
    return ZkClient(server.connect, "/reconnect", session_timeout_ms=20000, connect_ms=60000)


async def test_reads_and_writes_wait_for_a_restarted_zookeeper(own_zookeeper):
    zk = client_of(own_zookeeper)
    await zk.start()
    try:
        await zk.create_json("/topics/a", {"n": 1})
        await zk.create_json("/topics/read-me", {"r": 1})
        own_zookeeper.stop()  # kill -9: the connection drops, the session lives on disk
        read = asyncio.create_task(zk.get_json("/topics/read-me"))
        write = asyncio.create_task(zk.set_json("/topics/a", {"n": 2}, version=0))
        await asyncio.sleep(1.0)
        assert not read.done() and not write.done()  # waiting, not failed
        await asyncio.to_thread(own_zookeeper.start)
        assert await asyncio.wait_for(read, 30) == ({"r": 1}, 0)
        assert await asyncio.wait_for(write, 30) == 1
        assert await zk.get_json("/topics/a") == ({"n": 2}, 1)
    finally:
        await zk.stop()


async def test_a_write_whose_reply_was_lost_is_not_applied_twice(own_zookeeper):
    zk = client_of(own_zookeeper)
    await zk.start()
    try:
        await zk.ensure_path("/topics")
        lost_replies = []

        def create_then_lose_the_reply():
            # The request reaches ZooKeeper; the connection breaks before its answer.
            zk._kazoo.create("/topics/b", b'{"n":1}')
            if not lost_replies:
                lost_replies.append(True)
                raise ConnectionLoss()
            raise AssertionError("sent again though it had landed")

        landed = await zk._call(
            create_then_lose_the_reply, landed=lambda: zk._holds("/topics/b", b'{"n":1}')
        )
        assert landed.version == 0 and lost_replies == [True]

        # Someone else's node at the path is not mistaken for ours.
        await zk.create_json("/topics/c", {"owner": "other"})
        with pytest.raises(NodeExistsError):
            await zk.create_json("/topics/c", {"owner": "me"})
    finally:
        await zk.stop()


async def test_a_stopped_client_does_not_wait_forever(own_zookeeper):
    zk = client_of(own_zookeeper)
    await zk.start()
    own_zookeeper.stop()
    read = asyncio.create_task(zk.children("/topics"))
    await asyncio.sleep(0.5)
    await zk.stop()
    with pytest.raises(Exception):  # noqa: B017 - whichever kazoo raises once closed
        await asyncio.wait_for(read, 10)
