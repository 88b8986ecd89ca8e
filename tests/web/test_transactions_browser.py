"""The transactions page in chromium on a live dashboard over a broker that coordinates
transactions: a confluent-kafka transaction shows as Ongoing with its partition, then as
CompleteCommit once committed, without a reload; the topic page shows the LSO held at the
open transaction. Screenshots of the transactions, broker and topics pages at 1440x900 in
light and dark mode land in tests/web/artifacts/."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import expect

from .conftest import ARTIFACTS, dashboard_on_own_broker
from .test_browser import LIVE_EXPECT_TIMEOUT_MS, chromium_context, log_in
from .test_transactions_console import open_transaction


@pytest.fixture(scope="module")
def txn_dashboard(zookeeper, tmp_path_factory, redis_server):
    with dashboard_on_own_broker(
        zookeeper,
        tmp_path_factory,
        redis_server,
        num_partitions="2",
        offsets_topic_num_partitions="3",
        offsets_topic_replication_factor="1",
        transaction_state_log_num_partitions="3",
        transaction_state_log_replication_factor="1",
        transaction_state_log_min_isr="1",
    ) as dashboard:
        yield dashboard


def shoot(page, name: str) -> None:
    page.emulate_media(color_scheme="light")
    page.screenshot(path=str(ARTIFACTS / f"{name}-light-1440x900.png"))
    page.emulate_media(color_scheme="dark")  # the theme follows the system setting
    page.screenshot(path=str(ARTIFACTS / f"{name}-dark-1440x900.png"))
    page.emulate_media(color_scheme="light")


def test_transactions_page_follows_a_commit_live(txn_dashboard):
    topic = f"txn-browser-{uuid.uuid4().hex[:6]}"
    tid = f"browser-{uuid.uuid4().hex[:6]}"
    producer = open_transaction(txn_dashboard.broker.bootstrap, topic, tid)
    with chromium_context(expect_timeout_ms=LIVE_EXPECT_TIMEOUT_MS) as context:
        page = context.new_page()
        page.set_viewport_size({"width": 1440, "height": 900})
        log_in(page, txn_dashboard)
        page.click("nav >> text=Transactions")
        row = page.locator(f"#transactions tbody tr[data-id='{tid}']")
        expect(row.locator("td.state")).to_have_text("Ongoing")
        expect(row.locator("td.partitions")).to_have_text(f"{topic}-0")
        expect(row.locator("td.started")).to_contain_text(" UTC (")
        expect(page.locator("#txn-status")).to_have_text("live")
        shoot(page, "transactions")

        page.evaluate("() => { window.__noReload = true; }")
        producer.commit_transaction(30)
        expect(row.locator("td.state")).to_have_text("CompleteCommit")
        expect(row.locator("td.partitions")).to_have_text("–")
        assert page.evaluate("() => window.__noReload") is True  # updated in place

        page.goto(f"{txn_dashboard.url}/clusters/local/topics/{topic}/")
        p0 = page.locator("#partitions tbody tr[data-partition='0']")
        expect(p0.locator("td.lso")).to_have_text("7")
        expect(p0.locator("td.open-txns")).to_have_text("–")

        page.goto(f"{txn_dashboard.url}/clusters/local/brokers/{txn_dashboard.broker.broker_id}/")
        expect(page.locator("#log-dirs tbody tr[data-state='online']")).to_have_count(1)
        shoot(page, "broker")
        page.goto(f"{txn_dashboard.url}/clusters/local/topics/")
        shoot(page, "topics")


def test_an_operator_aborts_a_hanging_transaction(txn_dashboard):
    """A confluent-kafka producer leaves its transaction open (alive, never committing):
    the operator presses "Abort…" on its row, confirms by typing the id, and the page shows
    the id fenced under a new epoch with nothing open; the producer's commit then fails."""
    from confluent_kafka import KafkaException

    topic = f"txn-hang-{uuid.uuid4().hex[:6]}"
    tid = f"hanging-{uuid.uuid4().hex[:6]}"
    producer = open_transaction(txn_dashboard.broker.bootstrap, topic, tid)
    with chromium_context(expect_timeout_ms=LIVE_EXPECT_TIMEOUT_MS) as context:
        page = context.new_page()
        page.set_viewport_size({"width": 1440, "height": 900})
        log_in(page, txn_dashboard)
        page.click("nav >> text=Transactions")
        row = page.locator(f"#transactions tbody tr[data-id='{tid}']")
        expect(row.locator("td.state")).to_have_text("Ongoing")
        epoch = int(row.locator("td.epoch").inner_text())
        row.locator("a.abort").click()
        panel = page.locator("#abort-panel")
        expect(panel.locator("h2")).to_contain_text(tid)
        page.fill("#abort-form input[name=confirm]", "not-the-id")
        page.click("#abort-submit")
        expect(page.locator("#abort-error")).to_contain_text("type the transactional id")
        expect(row.locator("td.state")).to_have_text("Ongoing")  # nothing done
        page.fill("#abort-form input[name=confirm]", tid)
        shoot(page, "transactions-abort")
        page.click("#abort-submit")
        expect(page.locator(".messages")).to_contain_text(f"The transaction of {tid} is aborted")
        expect(row.locator("td.state")).to_have_text("Empty")
        expect(row.locator("td.partitions")).to_have_text("–")
        expect(row.locator("td.epoch")).not_to_have_text(str(epoch))
        assert int(row.locator("td.epoch").inner_text()) > epoch  # fenced: a newer epoch
        expect(row.locator("a.abort")).to_have_count(0)
    with pytest.raises(KafkaException):
        producer.commit_transaction(30)
