"""A ReplicaManager built on its own for unit tests: a real LogManager in a temporary
directory, a real ZooKeeper (the session's, one chroot per use) behind the metadata cache,
and the controller's requests called directly."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging

from brokerd.client.connection import PLAINTEXT
from brokerd.config import BrokerConfig, LogConfig
from brokerd.coordination import zk_data
from brokerd.coordination.metadata import MetadataCache
from brokerd.coordination.zk_client import ZkClient
from brokerd.coordination.zk_data import PartitionState
from brokerd.log.manager import LogManager
from brokerd.replication.replica_manager import ReplicaManager
from brokerd.util.background import BackgroundTasks

LOCAL, PEER = 1, 2
CONTROLLER_EPOCH = 3
_chroots = itertools.count(1)


class Setup:
    def __init__(self, zk: ZkClient, metadata: MetadataCache, tmp_path):
        self.zk = zk
        self.metadata = metadata
        # No delay before a deleted partition's directory goes.
        self.log_config = LogConfig(file_delete_delay_ms=0)
        self.log_manager = LogManager([tmp_path / "logs"], self.log_config)
        self.background = BackgroundTasks(logging.getLogger(__name__), "test task failed")
        self.isr_changes: list[bool] = []
        config = BrokerConfig(
            {
                "broker.id": str(LOCAL),
                "zookeeper.connect": "127.0.0.1:2181",
                "log.dirs": str(tmp_path / "logs"),
                "replica.lag.time.max.ms": "200",
            }
        )
        self.replicas = ReplicaManager(
            LOCAL,
            self.log_manager,
            metadata,
            zk,
            config.replication,
            inter_broker_listener_name="PLAINTEXT",
            retention_check_interval_ms=300000,
            offset_checkpoint_interval_ms=60000,
            topic_log_config=lambda topic: self.log_config,
            default_log_config=lambda: self.log_config,
            security_for=lambda endpoint: PLAINTEXT,
            spawn=self.background.spawn,
        )
        self.replicas.isr_change_listeners.append(self.isr_changes.append)

    async def create_topic(self, name: str, replicas: list[int], isr: list[int]) -> PartitionState:
        await self.zk.create_json(
            zk_data.topic_path(name),
            zk_data.topic_assignment(zk_data.new_kafka_uuid(), {0: replicas}),
        )
        state = PartitionState(replicas[0], 0, isr, CONTROLLER_EPOCH)
        await self.zk.create_json(zk_data.partition_state_path(name, 0), state.to_json())
        state.zk_version = 0
        await self.metadata.refresh_topic(name)
        return state

    async def become(self, name: str, state: PartitionState, replicas: list[int], epoch=None):
        return await self.replicas.become_leader_or_follower(
            0, CONTROLLER_EPOCH if epoch is None else epoch, [(name, 0, state, replicas)]
        )


@contextlib.asynccontextmanager
async def started_setup(zookeeper, tmp_path, chroot_prefix: str):
    """A Setup whose log manager and replica manager run for the block, then shut down."""
    zk = ZkClient(zookeeper.connect, f"/{chroot_prefix}-{next(_chroots)}", 6000, 10000)
    await zk.start()
    metadata = MetadataCache(zk)
    await metadata.load()
    made = Setup(zk, metadata, tmp_path)
    await asyncio.to_thread(made.log_manager.startup)
    await made.replicas.start()
    try:
        yield made
    finally:
        await made.replicas.shutdown()
        made.background.cancel_all()
        await asyncio.to_thread(made.log_manager.shutdown)
        await zk.stop()
