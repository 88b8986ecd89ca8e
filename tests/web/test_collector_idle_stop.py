"""The live collector stops, and leaves the process's registry, once its last subscriber has
gone for the grace period (the stop runs as a background task of the collector)."""

from __future__ import annotations

import asyncio

import pytest

from dashboard.live import collector as collectors

pytestmark = pytest.mark.django_db(transaction=True)


async def test_the_last_unsubscribe_stops_the_collector(
    kafka_cluster, channel_layer_on_redis, monkeypatch
):
    monkeypatch.setattr(collectors, "STOP_GRACE_S", 0.05)
    collector = collectors.collector_for("local")
    collector.subscribe()
    async with asyncio.timeout(15):
        while collector.latest_overview is None:
            await asyncio.sleep(0.05)
    assert collector.running

    collector.unsubscribe()
    async with asyncio.timeout(15):
        while "local" in collectors._registry():
            await asyncio.sleep(0.05)
    assert not collector.running
