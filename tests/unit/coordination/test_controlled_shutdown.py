"""ControlledShutdown built from its collaborators (no Broker): a broker registered by this
test asks a real controller (a broker process on the same ZooKeeper chroot) to move the
leadership it holds, as a stopping broker does, and the state znodes show the move."""

from __future__ import annotations

import asyncio

from brokerd.config import BrokerConfig, Endpoint
from brokerd.coordination import zk_client, zk_data
from brokerd.coordination.controlled_shutdown import ControlledShutdown
from brokerd.coordination.metadata import MetadataCache
from brokerd.coordination.zk_client import ZkClient
from brokerd.coordination.zk_data import PartitionState
from tests.harness import free_port

STOPPING = 5


async def _state(client: ZkClient, topic: str) -> PartitionState:
    data, version = await client.get_json(zk_data.partition_state_path(topic, 0))
    return PartitionState.from_json(data, version)


async def _eventually(check, what: str, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.05)


def _shutdown(config, metadata, client, led=()) -> ControlledShutdown:
    return ControlledShutdown(
        STOPPING,
        config,
        metadata,
        client,
        endpoint_for=lambda info: info.endpoint("INTERNAL"),
        led_partitions=lambda: list(led),
    )


async def test_leadership_moves_off_the_stopping_broker(make_broker, tmp_path):
    controller = make_broker().start()
    connect = controller.props["zookeeper.connect"]
    settings = {
        "broker.id": str(STOPPING),
        "zookeeper.connect": connect,
        "log.dirs": str(tmp_path),
        "controlled.shutdown.max.retries": "2",
        "controlled.shutdown.retry.backoff.ms": "50",
    }
    config = BrokerConfig(settings)
    client = ZkClient(config.zookeeper.hosts, config.zookeeper.chroot, 6000, connect_ms=10000)
    await client.start()
    try:
        metadata = MetadataCache(client)
        await metadata.load()
        # Not registered yet: the controller answers BROKER_NOT_AVAILABLE to every retry.
        assert await _shutdown(config, metadata, client).run() is False

        # Broker 5 registers (its listener is never reached: the controller's requests to
        # it are retried in the background) and leads a partition replicated on 1.
        nowhere = Endpoint("INTERNAL", "PLAINTEXT", "127.0.0.1", free_port())
        await zk_client.register_broker(
            client, STOPPING, zk_data.broker_registration([nowhere], None), wait_ms=0
        )
        await metadata.refresh_brokers()
        await client.create_json(
            zk_data.topic_path("moving"),
            zk_data.topic_assignment(zk_data.new_kafka_uuid(), {0: [STOPPING, 1]}),
        )

        async def led_by_the_stopping_broker() -> bool:
            found = await client.get_json(zk_data.partition_state_path("moving", 0))
            return found is not None and found[0]["leader"] == STOPPING

        await _eventually(led_by_the_stopping_broker, "the controller made 5 the leader")

        assert await _shutdown(config, metadata, client).run() is True

        moved = await _state(client, "moving")
        assert (moved.leader, moved.isr, moved.leader_epoch) == (1, [1], 1)

        disabled = BrokerConfig({**settings, "controlled.shutdown.enable": "false"})
        assert await _shutdown(disabled, metadata, client).run() is False
    finally:
        await client.stop()
