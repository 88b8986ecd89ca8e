"""Long ids never widen the console past the screen (issue 17): a topic with Kafka's longest
name (249 characters) and a group with a ~200-character id, a long client id and the member
ids Kafka builds from it, on every page that shows them, in a real browser (Debian's
chromium) at 1440x900 and 1920x1080: no horizontal scrolling, the whole id on hover (title)
and, selected and copied, the whole id on the clipboard."""

from __future__ import annotations

import uuid

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from playwright.sync_api import expect

from .conftest import ARTIFACTS, wait_until
from .test_browser import browser_page, log_in  # noqa: F401 - browser_page is a fixture

COPY = """(selector) => {
  const node = document.querySelector(selector);
  const range = document.createRange();
  range.selectNodeContents(node);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  return selection.toString();
}"""


def _fits(page) -> tuple[int, int]:
    return page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")


def _copied(page, selector: str) -> str:
    """Selects the element's text as a user does, copies it (Ctrl+C) and reads the clipboard."""
    selected = page.evaluate(COPY, selector)
    page.keyboard.press("Control+C")
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert copied == selected
    return copied


def test_long_topic_and_group_ids_fit_the_screen_and_copy_whole(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.set_viewport_size({"width": 1440, "height": 900})
    bootstrap = live_dashboard.broker.bootstrap
    stem = f"long-{uuid.uuid4().hex[:8]}-"
    topic = (stem + "t" * 249)[:249]
    group = (f"group-{uuid.uuid4().hex[:8]}-" + "g" * 200)[:200]
    client = "client-" + "c" * 120
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(5):
        producer.send(topic, b"value-%d" % i, partition=0)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=client,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        wait_until(lambda: consumer.poll(200) is not None and consumer.assignment(), 30)
        consumer.commit()
        log_in(page, live_dashboard)
        c = f"{live_dashboard.url}/clusters/local"
        too_wide = {}

        def check(name: str, path: str) -> None:
            page.goto(f"{c}{path}")
            page.wait_for_load_state("load")
            width, viewport = _fits(page)
            if width > viewport:
                too_wide[name] = width
            page.screenshot(path=str(ARTIFACTS / f"long-ids-{name}-1440x900.png"))
            page.set_viewport_size({"width": 1920, "height": 1080})  # the same page, wider
            width, viewport = _fits(page)
            if width > viewport:
                too_wide[f"{name}@1920"] = width
            page.set_viewport_size({"width": 1440, "height": 900})

        # Topics list: the name wraps, whole on hover and when copied.
        check("topics", "/topics/")
        link = f"#topic-list tr[data-topic='{topic}'] a"
        assert page.get_attribute(link, "title") == topic
        assert _copied(page, link) == topic

        check("overview", "/")
        expect(page.locator("#topics a", has_text=topic)).to_have_attribute("title", topic)
        check("topic", f"/topics/{topic}/")
        check("segments", f"/topics/{topic}/partitions/0/segments/")
        check("messages", f"/topics/{topic}/messages/")
        check("topic-configs", f"/topics/{topic}/configs/")
        check("broker", "/brokers/1/")

        # Groups list: the group id and its topic, each whole on hover and when copied.
        check("groups", f"/groups/?q={group[:20]}")
        row = f"#group-list tr[data-group='{group}']"
        assert page.get_attribute(f"{row} td.id a", "title") == group
        assert _copied(page, f"{row} td.id a") == group
        assert page.get_attribute(f"{row} td.topics a", "title") == topic

        # The group page, re-rendered live: topic, member id and client id whole.
        page.goto(f"{c}/groups/{group}/")
        expect(page.locator("#live-status")).to_have_text("live")
        expect(page.locator("#members tbody tr:not(.empty-state)")).to_have_count(1)
        page.wait_for_function("() => document.body.dataset.updated")
        width, viewport = _fits(page)
        if width > viewport:
            too_wide["group"] = width
        page.screenshot(path=str(ARTIFACTS / "long-ids-group-1440x900.png"), full_page=True)
        member = page.locator("#members tbody tr td").first.locator(".long-id")
        member_id = member.get_attribute("title")
        assert member_id.startswith(client + "-") and member.text_content() == member_id
        assert _copied(page, "#members tbody tr td .long-id") == member_id
        lag_row = page.locator(f"#lags tr[data-partition='{topic}:0']")
        assert lag_row.locator("td").first.locator(".long-id").get_attribute("title") == topic
        assert _copied(page, "#lags tbody tr td .long-id") == topic
        assert page.get_attribute("h1", "title") == group
        assert not too_wide, f"pages wider than the 1440 px screen: {too_wide}"
    finally:
        consumer.close()
