"""The topics and consumer-groups lists update live (issue 17: "updates live like the other
pages; today its status pill stays blank"): chromium keeps a list open, a real client creates
a topic, commits a group's offsets and produces more; the rows appear and the lag grows
without a reload, the header's pill says live, and the search and order stay applied."""

from __future__ import annotations

import uuid

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from playwright.sync_api import expect

from .test_browser import browser_page, log_in  # noqa: F401 - browser_page is a fixture
from .test_groups_api import commit


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(count):
        producer.send(topic, b"v%d" % i, partition=0)
    producer.flush()
    producer.close()


def test_lists_update_live(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    bootstrap = live_dashboard.broker.bootstrap
    prefix = f"livelist-{uuid.uuid4().hex[:6]}"
    log_in(page, live_dashboard)

    page.goto(f"{live_dashboard.url}/clusters/local/topics/?q={prefix}&sort=name&dir=desc")
    expect(page.locator("#live-status")).to_have_text("live")
    expect(page.locator("#topic-list tbody .empty-row")).to_contain_text(f"matching {prefix}")
    page.evaluate("() => { window.__noReload = true; }")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(f"{prefix}-a", 1, 1), NewTopic(f"{prefix}-b", 1, 1)])
    admin.close()
    rows = page.locator("#topic-list tbody tr[data-topic]")
    expect(rows).to_have_count(2)
    # The order asked for (name, descending) holds in the refreshed rows.
    assert [r.get_attribute("data-topic") for r in rows.all()] == [f"{prefix}-b", f"{prefix}-a"]
    produce(bootstrap, f"{prefix}-a", 5)
    expect(page.locator(f"#topic-list tr[data-topic='{prefix}-a'] td.records")).to_have_text("5")
    assert page.evaluate("() => window.__noReload === true")

    page.goto(f"{live_dashboard.url}/clusters/local/groups/?q={prefix}")
    expect(page.locator("#live-status")).to_have_text("live")
    page.evaluate("() => { window.__noReload = true; }")
    group = f"{prefix}-group"
    commit(live_dashboard.broker, group, {(f"{prefix}-a", 0): 2})
    row = page.locator(f"#group-list tr[data-group='{group}']")
    expect(row.locator("td.lag")).to_have_text("3")
    expect(row.locator("td.topics")).to_contain_text(f"{prefix}-a")
    produce(bootstrap, f"{prefix}-a", 4)
    expect(row.locator("td.lag")).to_have_text("7")
    assert page.evaluate("() => window.__noReload === true")
