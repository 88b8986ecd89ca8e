"""The live collector keeps one ZooKeeper session while a broker is down.

With a broker stopped, every collector round finds its admin API unreachable and looks the
brokers' admin endpoints up again in ZooKeeper; that look-up must reuse the process's one
session instead of opening a new one each time. Counted on a ZooKeeper of the test's own
(`mntr`'s zk_connection_request_count), so no other test's clients are in the count.
"""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async

from dashboard.core.admin_api import close_zookeeper_sessions
from dashboard.live.collector import ClusterCollector
from tests.harness import BrokerProcess, ZooKeeper

pytestmark = pytest.mark.django_db(transaction=True)

ADMIN_TOKEN = "collector-zookeeper-test-token"
ROUNDS_WITH_A_BROKER_DOWN = 12


@pytest.fixture
def two_brokers(tmp_path_factory):
    zookeeper = ZooKeeper(tmp_path_factory.mktemp("zk-sessions")).start()
    brokers = [
        BrokerProcess(
            tmp_path_factory.mktemp(f"zk-sessions-broker{broker_id}"),
            zookeeper.connect,
            broker_id=broker_id,
            admin_token=ADMIN_TOKEN,
        )
        for broker_id in (1, 2)
    ]
    try:
        for broker in brokers:
            broker.start()
        yield zookeeper, brokers
    finally:
        close_zookeeper_sessions()  # the dashboard's session to this ZooKeeper
        for broker in brokers:
            if broker.alive():
                broker.kill()
        zookeeper.stop()


def connection_requests(zookeeper: ZooKeeper) -> int:
    return int(zookeeper.monitor()["zk_connection_request_count"])


async def rounds_done(collector: ClusterCollector, predicate, rounds: int, timeout: float = 30):
    """Wait until `rounds` overviews in a row satisfied `predicate`."""
    seen, last = 0, None
    async with asyncio.timeout(timeout):
        while seen < rounds:
            await asyncio.sleep(0.05)
            overview = collector.latest_overview
            if overview is None or overview.get("taken_at_ms") == last:
                continue
            last = overview.get("taken_at_ms")
            seen = seen + 1 if predicate(overview) else 0


def broker_up(overview: dict, broker_id: int) -> bool:
    return any(b["broker_id"] == broker_id and b["up"] for b in overview.get("brokers", []))


async def test_a_stopped_broker_costs_no_new_zookeeper_sessions(
    two_brokers, channel_layer_on_redis, tmp_path
):
    from dashboard.core.models import Cluster

    zookeeper, brokers = two_brokers
    token_file = tmp_path / "admin.token"
    token_file.write_text(ADMIN_TOKEN)
    await database_sync_to_async(Cluster.objects.create)(
        name="zk-sessions",
        bootstrap_servers=",".join(b.bootstrap for b in brokers),
        zookeeper_connect=zookeeper.connect,
        admin_token_ref=f"file:{token_file}",
    )
    collector = ClusterCollector("zk-sessions", interval=0.2)
    collector.start()
    try:
        await rounds_done(collector, lambda o: broker_up(o, 1) and broker_up(o, 2), 2)
        await asyncio.to_thread(brokers[1].terminate)
        await rounds_done(collector, lambda o: broker_up(o, 1) and not broker_up(o, 2), 2)

        before = connection_requests(zookeeper)
        await rounds_done(
            collector,
            lambda o: not broker_up(o, 2) and o["error"] is None,
            ROUNDS_WITH_A_BROKER_DOWN,
        )
        after = connection_requests(zookeeper)
        # Four-letter words are not client connections: any count is the collector's.
        assert after - before == 0, f"{after - before} new ZooKeeper connections"
        assert [b["up"] for b in collector.latest_overview["brokers"]] == [True, False]
    finally:
        await collector.stop()
