"""A real browser (Debian's chromium, headless, driven by Playwright) on a live daphne: log in,
open the overview, create a topic with kafka-python, and watch the open page change."""

from __future__ import annotations

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


@pytest.fixture
def browser_page(live_dashboard):
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        page = browser.new_page()
        page.set_default_timeout(20_000)
        try:
            yield page
        finally:
            browser.close()


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
