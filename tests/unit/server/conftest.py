"""A replica manager of its own per test: a LogManager in a temporary directory over the
session's ZooKeeper (tests/unit/replication's set-up), started and shut down around it."""

import pytest

from tests.unit.replication.replica_setup import started_setup


@pytest.fixture
async def replicas(zookeeper, tmp_path):
    async with started_setup(zookeeper, tmp_path, "server-handlers") as made:
        yield made
