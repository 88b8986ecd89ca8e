"""The live collector follows a change of a cluster's security settings without a restart of
the platform: registered with a wrong SASL password, its overview says the cluster is
unreachable; once the stored password is corrected (what editing the cluster does) the same
running collector reconnects with it and the brokers come back. A real SASL_PLAINTEXT broker
(PLAIN users in the listener's JAAS config), Channels on Redis."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async

from dashboard.core.models import Cluster
from dashboard.live import collector as collectors
from tests.conftest import new_broker
from tests.sasl_support import USERS, sasl_broker
from tests.web.conftest import broker_admin_token_ref

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def sasl_plaintext(zookeeper, tmp_path_factory):
    process = sasl_broker(new_broker, zookeeper, tmp_path_factory, num_partitions="1")
    yield process
    process.kill()


def register(broker, password: str) -> Cluster:
    cluster = Cluster(
        name="secured",
        bootstrap_servers=broker.bootstrap,
        zookeeper_connect=broker.props["zookeeper.connect"],
        admin_token_ref=broker_admin_token_ref(broker),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_username="alice",
    )
    cluster.set_sasl_password(password)
    cluster.full_clean()
    cluster.save()
    return cluster


async def overview_where(collector, condition, timeout: float = 60) -> dict:
    async with asyncio.timeout(timeout):
        while True:
            overview = collector.latest_overview
            if overview is not None and condition(overview):
                return overview
            await asyncio.sleep(0.05)


async def test_a_corrected_password_is_used_without_a_restart(
    sasl_plaintext, channel_layer_on_redis
):
    cluster = await database_sync_to_async(register)(sasl_plaintext, "not-alice-secret")
    collector = collectors.collector_for("secured")
    collector.subscribe()
    try:
        refused = await overview_where(collector, lambda o: o["error"])
        assert "unreachable" in refused["error"]
        task = collector._task

        def correct() -> None:
            cluster.set_sasl_password(USERS["alice"])
            cluster.save()

        await database_sync_to_async(correct)()
        served = await overview_where(collector, lambda o: o["error"] is None)
        assert [b["broker_id"] for b in served["brokers"]] == [sasl_plaintext.broker_id]
        assert collector._task is task  # the same collector, not a new one
    finally:
        await collector.stop()
        collectors._registry().pop("secured", None)
