"""The topics and consumer-groups lists update live (issue 17: "updates live like the other
pages; today its status pill stays blank"): chromium keeps a list open, a real client creates
a topic, commits a group's offsets and produces more; the rows appear and the lag grows
without a reload, the header's pill says live, and the search and order stay applied."""

from __future__ import annotations

import time
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


# Counts the list's row requests as list-refresh.js makes them (a refresh calls fetch at
# once) and lets the test say whether the tab is hidden.
COUNT_ROW_REQUESTS = """
(() => {
  window.__rowRequests = 0;
  const original = window.fetch;
  window.fetch = (resource, options) => {
    if (String(resource).includes("rows=1")) window.__rowRequests += 1;
    return original(resource, options);
  };
  window.__hidden = false;
  Object.defineProperty(document, "visibilityState", {
    get: () => (window.__hidden ? "hidden" : "visible"),
  });
  Object.defineProperty(document, "hidden", { get: () => window.__hidden });
})();
"""
ROWS = "**/topics/?*rows=1*"


def test_refreshes_wait_for_the_previous_one_and_pause_while_hidden(
    browser_page,  # noqa: F811
    live_dashboard,
):
    """A slow server gets one row request at a time (the next 5 s after the previous answer,
    not every 5 s regardless), and a hidden tab asks for nothing until it is shown. The
    page's clock is Playwright's, moved on by the test; the server's answers are held back
    until the test lets them through."""
    page = browser_page
    log_in(page, live_dashboard)
    held = []
    page.route(ROWS, lambda route: held.append(route))
    page.add_init_script(COUNT_ROW_REQUESTS)
    page.clock.install()
    page.goto(f"{live_dashboard.url}/clusters/local/topics/")

    def requests() -> int:
        return page.evaluate("() => window.__rowRequests")

    def answer_held(count: int) -> None:
        deadline = time.monotonic() + 30
        while len(held) < count:  # Playwright hands routes over while the page is asked
            assert time.monotonic() < deadline, f"{len(held)} of {count} requests routed"
            page.evaluate("() => 0")
        page.evaluate("() => { document.querySelector('table tbody').dataset.old = '1'; }")
        held[count - 1].continue_()
        # The body swapped: the refresh finished and set its timer (the same JS turn).
        expect(page.locator("#topic-list tbody:not([data-old])")).to_have_count(1)

    assert requests() == 1  # the first, at once
    page.clock.run_for(25_000)  # five periods with the answer still out (patience: 30 s)
    assert requests() == 1
    answer_held(1)
    expect(page.locator("#live-status")).to_have_text("live")
    page.clock.run_for(4_000)
    assert requests() == 1  # 5 s after the answer, not sooner
    page.clock.run_for(1_000)
    assert requests() == 2
    answer_held(2)

    page.evaluate("() => { window.__hidden = true; }")
    page.clock.run_for(60_000)
    assert requests() == 2  # nothing while hidden
    page.evaluate(
        "() => { window.__hidden = false; document.dispatchEvent(new Event('visibilitychange')); }"
    )
    assert requests() == 3  # shown again: at once
    answer_held(3)
    page.clock.run_for(5_000)
    assert requests() == 4  # and on every 5 s again
