"""A controller taking office does not miss an ISR change a leader writes meanwhile.

Kafka's onControllerFailover watches /isr_change_notification (and deletes the notifications
already there) before it reads the partition states. The code before read the states first
and armed the watch after: a leader's ISR change written in between (its state znode and its
notification) was never seen, so the controller's cache, and the Metadata every broker
answers from its UpdateMetadata, kept the old ISR for good. Here the change is written at the
controller's "failover" probe, after its states were read.
"""

from __future__ import annotations

import asyncio

import pytest

from brokerd.config import Endpoint
from brokerd.coordination import zk_client, zk_data
from brokerd.coordination.controller import Controller
from brokerd.coordination.metadata import MetadataCache
from brokerd.coordination.zk_client import ZkClient
from brokerd.coordination.zk_data import PartitionState
from tests.harness import free_port, java_available

pytestmark = pytest.mark.skipif(not java_available(), reason="needs Debian's zookeeper")


class ChangeIsrAtFailover:
    """The failure probe: at "failover" a leader (broker 1) drops broker 2 from the ISR."""

    def __init__(self, zk: ZkClient):
        self.zk = zk
        self.done = False

    async def reached(self, module: str, point: str) -> None:
        if (module, point) != ("controller", "failover") or self.done:
            return
        self.done = True
        path = zk_data.partition_state_path("t", 0)
        data, version = await self.zk.get_json(path)
        await self.zk.set_json(path, {**data, "isr": [1]}, version)
        await self.zk.create_json(
            zk_data.ISR_CHANGE_PREFIX,
            zk_data.isr_change_notification([("t", 0)]),
            sequence=True,
        )


async def test_an_isr_change_written_while_taking_office_reaches_the_cache(zookeeper):
    zk = ZkClient(zookeeper.connect, "/failover-isr-notifications", 6000, connect_ms=10000)
    await zk.start()
    controller = None
    try:
        for broker_id in (1, 2):  # both live: the election leaves the partition alone
            nowhere = Endpoint("INTERNAL", "PLAINTEXT", "127.0.0.1", free_port())
            await zk_client.register_broker(
                zk, broker_id, zk_data.broker_registration([nowhere], None), wait_ms=0
            )
        await zk.create_json(
            zk_data.topic_path("t"),
            zk_data.topic_assignment(zk_data.new_kafka_uuid(), {0: [1, 2]}),
        )
        await zk.create_json(
            zk_data.partition_state_path("t", 0), PartitionState(1, 0, [1, 2], 1).to_json()
        )
        cache = MetadataCache(zk)
        await cache.load()
        probe = ChangeIsrAtFailover(zk)
        controller = Controller(zk, 1, cache, probes=probe)
        assert await controller.elect()
        assert probe.done

        deadline = asyncio.get_running_loop().time() + 20
        while cache.topic("t").states[0].isr != [1]:
            assert asyncio.get_running_loop().time() < deadline, cache.topic("t").states[0]
            await asyncio.sleep(0.05)
        # The notification was taken (and deleted) as any other.
        while await zk.children(zk_data.ISR_CHANGE_NOTIFICATION):
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)
    finally:
        if controller is not None:
            await controller.stop()
        await zk.stop()
