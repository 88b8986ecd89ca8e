"""A real browser (Debian's chromium, headless, driven by Playwright) on a live daphne: log in,
open the overview, create a topic with kafka-python, and watch the open page change."""

from __future__ import annotations

import contextlib
import uuid

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from playwright.sync_api import expect, sync_playwright

from .conftest import ARTIFACTS

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@contextlib.contextmanager
def chromium_context(timeout_ms: int = 20_000, expect_timeout_ms: int | None = None):
    """A browser context on Debian's chromium (its pages share one login); artifacts dir made.
    `expect_timeout_ms` lengthens Playwright's (process-wide) expect timeout for this
    context only; it is put back to Playwright's 5 s default afterwards."""
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            context = browser.new_context()
            context.set_default_timeout(timeout_ms)
            if expect_timeout_ms is not None:
                expect.set_options(timeout=expect_timeout_ms)
            yield context
        finally:
            if expect_timeout_ms is not None:
                expect.set_options(timeout=5_000)
            browser.close()


# Live pages change on the collector's next round, which a loaded 2-core machine can delay
# well past Playwright's 5 s default.
LIVE_EXPECT_TIMEOUT_MS = 20_000


@pytest.fixture
def browser_page(live_dashboard):
    with chromium_context(expect_timeout_ms=LIVE_EXPECT_TIMEOUT_MS) as context:
        yield context.new_page()


def submit_and_reload(page, button) -> None:
    """Clicks a form's submit button and returns once the redirected page replaced this
    document (the same URL, so only a marker on the old document tells them apart)."""
    page.evaluate("() => { window.__beforeSubmit = true; }")
    button.click()
    page.wait_for_function("() => window.__beforeSubmit === undefined")
    page.wait_for_load_state()


def log_in(page, live_dashboard) -> None:
    page.goto(f"{live_dashboard.url}/")
    assert "/login/" in page.url  # every page needs a user
    page.fill("input[name=username]", live_dashboard.username)
    page.fill("input[name=password]", live_dashboard.password)
    page.click("#login-submit")
    page.wait_for_url(f"{live_dashboard.url}/")


def test_overview_updates_live_when_a_topic_is_created(browser_page, live_dashboard):
    page = browser_page
    log_in(page, live_dashboard)
    expect(page.locator("#live-status")).to_have_text("live")
    expect(page.locator("h1")).to_have_text("Cluster local")
    count = page.locator("#topic-count")
    expect(count).not_to_have_text("–")
    before = int(count.inner_text())
    marker = page.evaluate("() => { window.__noReload = true; return 1; }")
    assert marker == 1

    topic = f"browser-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=live_dashboard.broker.bootstrap)
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
    admin.close()

    expect(count).to_have_text(str(before + 1))
    expect(page.locator("#topics")).to_contain_text(topic)
    assert page.evaluate("() => window.__noReload === true")  # same document: no reload
    page.screenshot(path=str(ARTIFACTS / "overview-live.png"), full_page=True)

    # The topic page: HW and per-replica LEO move while it is open.
    page.click(f"#topics a:text-is('{topic}')")
    expect(page.locator("#live-status")).to_have_text("live")
    expect(page.locator("#partitions tbody tr")).to_have_count(2)
    page.evaluate("() => { window.__noReload = true; }")
    producer = KafkaProducer(bootstrap_servers=live_dashboard.broker.bootstrap)
    for i in range(3):
        producer.send(topic, b"v%d" % i, partition=1)
    producer.flush()
    producer.close()
    row = page.locator("#partitions tbody tr[data-partition='1']")
    expect(row.locator("td.hw")).to_have_text("3")
    expect(row.locator("td.leo")).to_contain_text("1: 3")
    assert page.evaluate("() => window.__noReload === true")
    page.screenshot(path=str(ARTIFACTS / "topic-live.png"), full_page=True)


def commit_standalone(bootstrap: str, group: str, offsets: dict) -> None:
    from brokerd.client.sync import SyncClient

    with SyncClient(bootstrap) as client:
        client.admin.commit_offsets(group, offsets)


def produce_to(bootstrap: str, topic: str, count: int, partition: int, keys: int = 0) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, batch_size=1)
    for i in range(count):
        key = b"key-%d" % (i % keys) if keys else None
        producer.send(topic, b"value-%d" % i, key=key, partition=partition)
        producer.flush()
    producer.close()


def test_topic_created_in_the_ui_and_group_lag_move_live(browser_page, live_dashboard):
    page = browser_page
    bootstrap = live_dashboard.broker.bootstrap
    log_in(page, live_dashboard)
    topic = f"ui-{uuid.uuid4().hex[:8]}"

    # Create the topic from the UI: the form leads to its live page.
    page.click("header nav a:text-is('Topics')")
    page.fill("#create-topic input[name=topic_name]", topic)
    page.fill("#create-topic input[name=partitions]", "2")
    page.click("#create-topic-submit")
    page.wait_for_url(f"**/clusters/local/topics/{topic}/")
    expect(page.locator("#live-status")).to_have_text("live")
    expect(page.locator("#partitions tbody tr")).to_have_count(2)
    page.evaluate("() => { window.__noReload = true; }")
    produce_to(bootstrap, topic, 3, partition=1)
    row = page.locator("#partitions tbody tr[data-partition='1']")
    expect(row.locator("td.hw")).to_have_text("3")
    expect(row.locator("td.leo")).to_contain_text("1: 3")
    assert page.evaluate("() => window.__noReload === true")

    # The group page: committed offset, HW and lag per partition, updated in place.
    group = f"ui-group-{topic}"
    commit_standalone(bootstrap, group, {(topic, 1): 1})
    page.goto(f"{live_dashboard.url}/clusters/local/groups/{group}/")
    expect(page.locator("#live-status")).to_have_text("live")
    lag_row = page.locator(f"#lags tbody tr[data-partition='{topic}:1']")
    expect(lag_row.locator("td.committed")).to_have_text("1")
    expect(lag_row.locator("td.hw")).to_have_text("3")
    expect(lag_row.locator("td.lag")).to_have_text("2")
    page.evaluate("() => { window.__noReload = true; }")
    produce_to(bootstrap, topic, 4, partition=1)
    expect(lag_row.locator("td.hw")).to_have_text("7")
    expect(lag_row.locator("td.lag")).to_have_text("6")
    expect(page.locator("#total-lag")).to_have_text("6")
    commit_standalone(bootstrap, group, {(topic, 1): 7})
    expect(lag_row.locator("td.lag")).to_have_text("0")
    # The chart took a point per snapshot (drawn by uPlot from the npm install).
    chart = page.locator("#lag-chart")
    expect(chart.locator("canvas")).to_have_count(1)
    assert int(chart.get_attribute("data-points")) >= 2  # at least the 6 and the 0
    assert chart.get_attribute("data-last") == "0"
    assert page.evaluate("() => window.__noReload === true")
    page.screenshot(path=str(ARTIFACTS / "group-live.png"), full_page=True)


def test_compaction_from_the_maintenance_page_changes_the_segments_page(
    browser_page, live_dashboard, celery_worker
):
    page = browser_page
    bootstrap = live_dashboard.broker.bootstrap
    log_in(page, live_dashboard)
    topic = f"compact-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    configs = {"cleanup.policy": "compact", "segment.bytes": "1024"}
    admin.create_topics([NewTopic(topic, 1, 1, topic_configs=configs)])
    admin.close()
    produce_to(bootstrap, topic, 60, partition=0, keys=3)

    segments = page.context.new_page()
    segments.goto(f"{live_dashboard.url}/clusters/local/topics/{topic}/partitions/0/segments/")
    expect(segments.locator("#live-status")).to_have_text("live")
    expect(segments.locator("#segments-hw")).to_have_text("60")
    expect(segments.locator("#cleanup-policy")).to_have_text("compact")
    expect(segments.locator("#segments tbody td.next").first).to_contain_text("compaction: dirty")
    size_before = int(segments.locator("#log-size").get_attribute("data-bytes"))
    assert segments.locator("#log-size").inner_text().endswith(("B", "KiB"))  # readable
    segments.evaluate("() => { window.__noReload = true; }")
    segments.screenshot(path=str(ARTIFACTS / "segments-before.png"), full_page=True)

    # Run compaction now from the maintenance page; the worker asks the broker; the run
    # shows up and finishes on the open page.
    page.click("header nav a:text-is('Maintenance')")
    expect(page.locator("#live-status")).to_have_text("live")
    page.select_option("#run-now select[name=action]", "compaction")
    page.fill("#run-now input[name=topic]", topic)
    page.click("#run-now-submit")
    run = page.locator("#runs tbody tr", has_text=topic).first
    expect(run).to_have_attribute("data-status", "succeeded", timeout=30_000)
    expect(run).to_contain_text("records removed")
    page.screenshot(path=str(ARTIFACTS / "maintenance-run.png"), full_page=True)

    # The segments page, never reloaded, shows the compacted log.
    expect(segments.locator("#segments tbody td.next").first).to_contain_text("compaction: clean")
    smaller = segments.locator("#log-size")
    segments.wait_for_function(
        f"() => Number(document.getElementById('log-size').dataset.bytes) < {size_before}"
    )
    assert int(smaller.get_attribute("data-bytes")) < size_before
    assert segments.evaluate("() => window.__noReload === true")
    segments.screenshot(path=str(ARTIFACTS / "segments-after.png"), full_page=True)


def test_a_schedule_is_created_edited_and_disabled_from_the_ui(browser_page, live_dashboard):
    page = browser_page
    log_in(page, live_dashboard)
    page.goto(f"{live_dashboard.url}/clusters/local/maintenance/")
    topic = f"sched-{uuid.uuid4().hex[:8]}"
    page.select_option("#new-schedule select[name=action]", "retention")
    page.fill("#new-schedule input[name=topic]", topic)
    page.fill("#new-schedule input[name=every_seconds]", "600")
    known = page.locator("#schedules tbody tr[data-schedule]").evaluate_all(
        "rows => rows.map(row => row.dataset.schedule)"
    )
    submit_and_reload(page, page.locator("#new-schedule-submit"))
    row = page.locator("#schedules tbody tr[data-schedule]").last
    schedule_id = row.get_attribute("data-schedule")
    assert schedule_id not in known
    expect(row.locator("input[name=every_seconds]")).to_have_value("600")
    row.locator("input[name=every_seconds]").fill("900")
    row.locator("input[name=enabled]").uncheck()
    # Read back from the page the server rendered after saving, not the inputs just typed in.
    submit_and_reload(page, row.locator("button:text-is('Save')"))
    row = page.locator(f"#schedules tbody tr[data-schedule='{schedule_id}']")
    expect(row.locator("input[name=every_seconds]")).to_have_value("900")
    expect(row.locator("input[name=enabled]")).not_to_be_checked()

    # The same target again: a warning beside the form (nothing saved, the typed crontab
    # kept) until "Add anyway".
    page.fill("#new-schedule input[name=topic]", topic)
    page.fill("#new-schedule input[name=crontab]", "30 3 * * sun")
    submit_and_reload(page, page.locator("#new-schedule-submit"))
    expect(page.locator("#new-schedule-warning")).to_contain_text(f"schedule {schedule_id} (")
    expect(page.locator("#new-schedule input[name=crontab]")).to_have_value("30 3 * * sun")
    expect(page.locator("#schedules tbody tr[data-schedule]")).to_have_count(len(known) + 1)
    submit_and_reload(page, page.locator("#new-schedule-anyway"))
    expect(page.locator(".messages")).to_contain_text(f"repeats schedule {schedule_id}")
