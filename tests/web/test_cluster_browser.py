"""A real browser on a live dashboard watching a three-broker cluster: kill -9 a follower and
watch, without reloading, the ISR shrink on the open topic page and the overview show the
partition under-replicated and the broker down; restart it and watch the ISR grow back with
every replica's LEO caught up to the high watermark.

The brokers (tests/cluster's Cluster: one ZooKeeper chroot, replica.lag.time.max.ms 3000,
a 4 s ZooKeeper session) share one admin token, so the dashboard reaches every broker's
admin API, discovered from /brokers/ids; a restarted broker's admin API comes back on a
new port.
"""

from __future__ import annotations

import re
import uuid

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from playwright.sync_api import expect

from tests.cluster.conftest import Cluster

from .conftest import ARTIFACTS, running_dashboard, wait_until
from .test_browser import chromium_context, log_in

ADMIN_TOKEN = "cluster-browser-test-admin-token"
# ISR shrink: replica.lag.time.max.ms (3 s) after the kill, plus a collector round or two.
LIVE_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def cluster_dashboard(zookeeper, tmp_path_factory, redis_server):
    cluster = Cluster(zookeeper, tmp_path_factory, admin_token=ADMIN_TOKEN).start()
    token_file = tmp_path_factory.mktemp("cluster-token") / "admin.token"
    token_file.write_text(ADMIN_TOKEN + "\n")
    zookeeper_connect = cluster.brokers[1].props["zookeeper.connect"]
    try:
        with running_dashboard(
            tmp_path_factory,
            redis_server,
            cluster.bootstrap,
            zookeeper_connect,
            f"file:{token_file}",
        ) as dashboard:
            yield cluster, dashboard
    finally:
        cluster.kill_all()


def broker_ids(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"\d+", text)}


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=0)
    for i in range(count):
        producer.send(topic, b"value-%d" % i, partition=0)
    producer.flush()
    producer.close()


def test_isr_shrinks_and_grows_live_when_a_follower_dies_and_returns(cluster_dashboard):
    cluster, dashboard = cluster_dashboard
    topic = f"isr-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3)])
    admin.close()
    cluster.wait_full_isr(topic)
    produce(cluster.bootstrap, topic, 5)
    leader = cluster.leader_of(topic)
    victim = next(b for b in sorted(cluster.brokers) if b != leader)

    with chromium_context(LIVE_TIMEOUT_S * 1000, LIVE_TIMEOUT_S * 1000) as context:
        page = context.new_page()
        log_in(page, dashboard)
        page.goto(f"{dashboard.url}/clusters/local/topics/{topic}/")
        expect(page.locator("#live-status")).to_have_text("live")
        row = page.locator("#partitions tbody tr[data-partition='0']")
        isr = row.locator("td.isr")
        # Every replica's LEO, from the leader and from the followers' own admin APIs.
        for broker_id in (1, 2, 3):
            expect(row.locator(f"td.leo span[data-broker='{broker_id}']")).to_have_text(
                f"{broker_id}: 5"
            )
        # Full since wait_full_isr, unless a follower lagged past replica.lag.time.max.ms (3 s)
        # on a busy machine meanwhile: then it comes back.
        wait_until(lambda: broker_ids(isr.inner_text()) == {1, 2, 3}, LIVE_TIMEOUT_S)
        expect(row.locator("td.state")).to_have_text("ok")
        page.evaluate("() => { window.__noReload = true; }")
        page.screenshot(path=str(ARTIFACTS / "cluster-topic-full-isr.png"), full_page=True)

        overview = context.new_page()
        overview.goto(f"{dashboard.url}/clusters/local/")
        expect(overview.locator("#live-status")).to_have_text("live")
        expect(overview.locator("#brokers-up")).to_have_text("3")
        expect(overview.locator("#urp")).to_have_text("0")
        overview.evaluate("() => { window.__noReload = true; }")

        # kill -9 a follower: the open topic page shows it down, then out of the ISR.
        cluster.brokers[victim].kill()
        victim_leo = row.locator(f"td.leo span[data-broker='{victim}']")
        expect(victim_leo).to_contain_text("(down)")
        wait_until(lambda: broker_ids(isr.inner_text()) == {1, 2, 3} - {victim}, LIVE_TIMEOUT_S)
        expect(row.locator("td.state")).to_have_text("under-replicated")
        # The leader goes on; the dead follower's LEO stays where it stopped.
        produce(cluster.bootstrap, topic, 3)
        expect(row.locator("td.hw")).to_have_text("8")
        expect(row.locator(f"td.leo span[data-broker='{leader}']")).to_have_text(f"{leader}: 8")
        # (unknown, "?", once a controller's LeaderAndIsr has reset the leader's view)
        expect(victim_leo).to_have_text(re.compile(rf"^{victim}: (5|\?) \(down\)$"))
        page.screenshot(path=str(ARTIFACTS / "cluster-topic-isr-shrunk.png"), full_page=True)
        # A freshly rendered page and the REST API tolerate the dead broker too.
        fresh = context.request.get(f"{dashboard.url}/clusters/local/topics/{topic}/")
        assert fresh.status == 200 and "(down)" in fresh.text()
        replicas = context.request.get(
            f"{dashboard.url}/api/v3/clusters/local/topics/{topic}/partitions/0/replicas"
        )
        assert replicas.status == 200, replicas.text()
        states = {r["broker_id"]: r["is_up"] for r in replicas.json()["data"]}
        assert states == {1: True, 2: True, 3: True, victim: False}

        # The overview: the broker down, the partition under-replicated.
        broker_row = overview.locator(f"#brokers tbody tr[data-broker='{victim}']")
        expect(broker_row.locator("td.state")).to_have_text("down")
        expect(broker_row.locator("td.admin")).to_have_text("unreachable")
        expect(overview.locator("#brokers-down")).to_have_text("1")
        expect(overview.locator("#urp")).not_to_have_text("0")
        problem = overview.locator(f"#problems tbody tr[data-partition='{topic}:0']")
        expect(problem.locator("td.state")).to_have_text("under-replicated")
        assert victim not in broker_ids(problem.locator("td.isr").inner_text())
        overview.screenshot(
            path=str(ARTIFACTS / "cluster-overview-broker-down.png"), full_page=True
        )

        # Restart it: it catches up and the ISR grows back, on both open pages.
        cluster.brokers[victim].start()
        wait_until(lambda: broker_ids(isr.inner_text()) == {1, 2, 3}, LIVE_TIMEOUT_S)
        expect(row.locator("td.state")).to_have_text("ok")
        for broker_id in (1, 2, 3):
            expect(row.locator(f"td.leo span[data-broker='{broker_id}']")).to_have_text(
                f"{broker_id}: 8"
            )
        page.screenshot(path=str(ARTIFACTS / "cluster-topic-isr-grown.png"), full_page=True)
        expect(broker_row.locator("td.state")).to_have_text("up")
        expect(overview.locator("#brokers-down")).to_have_text("0")
        expect(problem).to_have_count(0)
        overview.screenshot(path=str(ARTIFACTS / "cluster-overview-recovered.png"), full_page=True)
        assert page.evaluate("() => window.__noReload === true")
        assert overview.evaluate("() => window.__noReload === true")
