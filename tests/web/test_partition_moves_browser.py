"""A real browser on the topic page of a three-broker cluster: an operator elects a partition's
preferred leader and sees the outcome and the leader move; then moves the partition to other
brokers from the form and watches the new replica catch up and the old one leave, all
without reloading the page."""

from __future__ import annotations

import re

import pytest
from kafka import KafkaProducer
from playwright.sync_api import expect

from tests.cluster.conftest import Cluster
from tests.cluster.test_reassignment import create_placed_topic, wait_placed

from .conftest import ARTIFACTS, running_dashboard
from .test_browser import chromium_context, log_in
from .test_partition_moves_api import paused, reorder

ADMIN_TOKEN = "partition-moves-browser-admin-token"
LIVE_TIMEOUT_S = 30
RECORDS = 20
PAUSE_SAFE_SESSION_MS = 30_000


@pytest.fixture(scope="module")
def moves_dashboard(zookeeper, tmp_path_factory, redis_server):
    cluster = Cluster(
        zookeeper,
        tmp_path_factory,
        admin_token=ADMIN_TOKEN,
        auto_leader_rebalance_enable="false",
        # A broker is paused (SIGSTOP) for a few seconds: it must keep its session.
        zookeeper_session_timeout_ms=str(PAUSE_SAFE_SESSION_MS),
    ).start()
    token_file = tmp_path_factory.mktemp("moves-browser-token") / "admin.token"
    token_file.write_text(ADMIN_TOKEN)
    try:
        with running_dashboard(
            tmp_path_factory,
            redis_server,
            cluster.bootstrap,
            cluster.brokers[1].props["zookeeper.connect"],
            f"file:{token_file}",
        ) as dashboard:
            yield cluster, dashboard
    finally:
        cluster.kill_all()


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    for i in range(count):
        producer.send(topic, b"value-%d" % i, partition=0)
    producer.flush()
    producer.close()


def test_elect_preferred_leader_then_reassign_from_the_topic_page(moves_dashboard, topic_name):
    cluster, dashboard = moves_dashboard
    create_placed_topic(cluster, topic_name, [1, 2])
    produce(cluster.bootstrap, topic_name, RECORDS)
    reorder(cluster, topic_name, [2, 1])  # broker 2 preferred, broker 1 still leads

    with chromium_context(LIVE_TIMEOUT_S * 1000, LIVE_TIMEOUT_S * 1000) as context:
        page = context.new_page()
        log_in(page, dashboard)
        page.goto(f"{dashboard.url}/clusters/local/topics/{topic_name}/")
        expect(page.locator("#live-status")).to_have_text("live")
        row = page.locator("#partitions tbody tr[data-partition='0']")
        expect(row.locator("td.leader")).to_have_text("1")
        expect(row.locator("td.replicas")).to_have_text("2, 1")
        page.evaluate("() => { window.__noReload = true; }")

        # Elect the preferred leader: the outcome, then the leader moving live.
        row.locator("button.elect-preferred").click()
        result = page.locator("#action-result")
        expect(result).to_contain_text("Partition 0: ELECTED")
        expect(row.locator("td.leader")).to_have_text("2")
        expect(row.locator("td.leo span.replica.leader")).to_have_text(f"2: {RECORDS}")
        page.screenshot(path=str(ARTIFACTS / "moves-preferred-elected.png"), full_page=True)
        row.locator("button.elect-preferred").click()
        expect(result).to_contain_text("ELECTION_NOT_NEEDED")

        # Move the partition from brokers 2, 1 to 3, 2. Broker 3 is paused at first, so
        # the move is seen in progress; then it catches up and broker 1 leaves.
        page.fill("#reassign input[name=partition]", "0")
        page.fill("#reassign input[name=replicas]", "3, 2")
        with paused(cluster.brokers[3]):
            page.click("#reassign-submit")
            expect(result).to_contain_text("Partition 0: moving to 3, 2 (copying to 3)")
            expect(row.locator("td.reassignment")).to_have_text("to 3, 2; adding 3; removing 1")
            expect(row.locator("td.replicas")).to_have_text("3, 2, 1")
            expect(row.locator("td.leo span[data-broker='3']")).to_have_count(1)
            expect(row.locator("button.cancel-reassignment")).to_have_count(1)
            expect(row.locator("td.state")).to_have_text("ok")  # copying, as KIP-352
            page.screenshot(path=str(ARTIFACTS / "moves-in-progress.png"), full_page=True)
            # The overview agrees: copying to a new replica is no under-replication.
            overview = context.new_page()
            overview.goto(f"{dashboard.url}/clusters/local/")
            expect(overview.locator("#live-status")).to_have_text("live")
            expect(overview.locator("#brokers-down")).to_have_text("1")  # the paused one
            expect(overview.locator("#urp")).to_have_text("0")
            overview.close()
        expect(row.locator("td.replicas")).to_have_text("3, 2")
        expect(row.locator("td.reassignment")).to_have_text("")
        expect(row.locator("td.leo span[data-broker='3']")).to_have_text(f"3: {RECORDS}")
        expect(row.locator("td.leo span[data-broker='1']")).to_have_count(0)
        expect(row.locator("td.isr")).to_have_text(re.compile(r"^(2, 3|3, 2)$"))
        wait_placed(cluster, topic_name, [3, 2])
        page.screenshot(path=str(ARTIFACTS / "moves-reassigned.png"), full_page=True)

        # Bad input is refused with Kafka's reason, on the page.
        page.fill("#reassign input[name=replicas]", "3, 99")
        page.click("#reassign-submit")
        expect(result).to_contain_text("INVALID_REPLICA_ASSIGNMENT")
        assert page.evaluate("() => window.__noReload === true")
