"""A replica manager of its own per test: a LogManager in a temporary directory over the
session's ZooKeeper (tests/unit/replication's set-up), started and shut down around it."""

import asyncio
import itertools

import pytest

from brokerd.coordination.metadata import MetadataCache
from brokerd.coordination.zk_client import ZkClient
from tests.unit.replication.test_replica_manager import Setup

_chroots = itertools.count(1)


@pytest.fixture
async def replicas(zookeeper, tmp_path):
    zk = ZkClient(zookeeper.connect, f"/server-handlers-{next(_chroots)}", 6000, 10000)
    await zk.start()
    metadata = MetadataCache(zk)
    await metadata.load()
    made = Setup(zk, metadata, tmp_path)
    await asyncio.to_thread(made.log_manager.startup)
    await made.replicas.start()
    yield made
    await made.replicas.shutdown()
    made.background.cancel_all()
    await asyncio.to_thread(made.log_manager.shutdown)
    await zk.stop()
