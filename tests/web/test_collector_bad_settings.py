"""The live collector outlives cluster settings it cannot build a client from: a bootstrap
address that is not host:port (saved around the form's validation) keeps the running
collector on its old client, and once the address is corrected the same collector
connects with it. A real broker, Channels on Redis."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async

from dashboard.live.collector import ClusterCollector

pytestmark = pytest.mark.django_db(transaction=True)


async def rounds_after(collector: ClusterCollector, rounds: int, timeout: float = 60) -> None:
    """Wait until `rounds` more overviews were collected (or the collector ended)."""
    last, seen = collector.latest_overview, 0
    async with asyncio.timeout(timeout):
        while seen < rounds and collector.running:
            await asyncio.sleep(0.05)
            if collector.latest_overview is not last:
                last, seen = collector.latest_overview, seen + 1


async def test_unusable_settings_keep_the_collector_running(kafka_cluster, channel_layer_on_redis):
    cluster = kafka_cluster
    good = cluster.bootstrap_servers
    collector = ClusterCollector(cluster.name, interval=0.2)
    collector.start()
    try:
        await rounds_after(collector, 1)
        assert collector.latest_overview["error"] is None
        task = collector._task

        def set_bootstrap(servers: str) -> None:
            type(cluster).objects.filter(pk=cluster.pk).update(bootstrap_servers=servers)

        await database_sync_to_async(set_bootstrap)("no-port-here")
        # Two overviews: the second one's round read the row after the change.
        await rounds_after(collector, 2)
        assert collector.running, "the collector ended on settings it could not use"
        assert collector.latest_overview["error"] is None  # the old client still serves

        await database_sync_to_async(set_bootstrap)(f"127.0.0.1:1,{good}")
        await rounds_after(collector, 2)
        assert collector.running and collector._task is task
        assert collector.latest_overview["error"] is None
    finally:
        await collector.stop()
