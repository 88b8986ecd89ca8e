"""DynamicBrokerConfigs over a real ZooKeeper: both entities read into the config's layers,
a change to either reloaded through its watch, and nothing reloaded once closed."""

import asyncio
import itertools
import logging

import pytest

from brokerd.coordination import zk_data
from brokerd.coordination.zk_client import ZkClient
from brokerd.server.dynamic_broker_config import DynamicBrokerConfigs
from brokerd.util.background import BackgroundTasks
from tests.unit.server.handler_context import broker_config

_chroots = itertools.count(1)


@pytest.fixture
async def zk(zookeeper):
    client = ZkClient(zookeeper.connect, f"/dynamic-configs-{next(_chroots)}", 6000, 10000)
    await client.start()
    yield client
    await client.stop()


async def _until(condition, timeout=10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "not reloaded in time"
        await asyncio.sleep(0.02)


async def test_layers_load_and_follow_changes_until_closed(zk):
    config = broker_config()
    background = BackgroundTasks(logging.getLogger(__name__), "reload failed")
    reloads = []
    configs = DynamicBrokerConfigs(
        config, 1, zk, spawn=background.spawn, on_reloaded=lambda: reloads.append(True)
    )
    default_path = zk_data.broker_config_path(zk_data.DEFAULT_BROKER_ENTITY)
    await zk.upsert_json(default_path, zk_data.entity_config({"log.retention.ms": "1000"}))
    await configs.load()
    assert config.get("log.retention.ms") == 1000
    assert reloads == []  # loading is not a change

    # The per-broker entity overrides the cluster-wide default, and its watch reloads.
    own_path = zk_data.broker_config_path("1")
    await zk.upsert_json(own_path, zk_data.entity_config({"log.retention.ms": "2000"}))
    await _until(lambda: config.get("log.retention.ms") == 2000)
    await _until(lambda: len(reloads) == 1)
    await zk.upsert_json(default_path, zk_data.entity_config({"log.retention.ms": "3000"}))
    await _until(lambda: len(reloads) == 2)
    assert config.get("log.retention.ms") == 2000

    configs.close()
    await zk.upsert_json(own_path, zk_data.entity_config({}))
    await asyncio.sleep(0.5)  # a watch that fires now must not reload
    assert config.get("log.retention.ms") == 2000 and len(reloads) == 2
    background.cancel_all()
