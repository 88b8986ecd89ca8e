"""The topic and group actions in a real browser (Debian's chromium, Playwright) on a live
daphne and a real broker, each checked with a real client: a topic created from the form
(replication factor, configs), a config edited (a refusal beside its form first) and reset as
confluent-kafka's DescribeConfigs sees it, the topic deleted after typing its name; a group's
offsets previewed and reset where a real consumer then reads them, the group deleted.
Screenshots at 1440x900 land in tests/web/artifacts/."""

from __future__ import annotations

import re
import uuid

from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from playwright.sync_api import expect

from .conftest import ARTIFACTS, wait_until
from .test_browser import browser_page, commit_standalone, log_in, produce_to  # noqa: F401

TOPIC_OVERRIDE = ConfigSource.DYNAMIC_TOPIC_CONFIG.value


def describe(bootstrap: str, topic: str) -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([resource])[resource].result(15)


def test_topic_created_configured_and_deleted_in_the_ui(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    bootstrap = live_dashboard.broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    log_in(page, live_dashboard)
    topic = f"console-{uuid.uuid4().hex[:8]}"

    # Create: the broker's refusal stays beside the form with what was typed.
    page.goto(f"{live_dashboard.url}/clusters/local/topics/")
    page.fill("#create-topic [name=topic_name]", topic)
    page.fill("#create-topic [name=partitions]", "2")
    page.fill("#create-topic [name=replication_factor]", "1")
    page.fill("#create-topic [name=configs]", "cleanup.policy=sometimes")
    with page.expect_navigation():
        page.click("#create-topic-submit")
    expect(page.locator("#create-topic-error")).to_contain_text("(INVALID_CONFIG)")
    expect(page.locator("#create-topic [name=topic_name]")).to_have_value(topic)
    page.fill("#create-topic [name=configs]", "cleanup.policy=compact\nretention.ms=60000")
    page.click("#create-topic-submit")
    page.wait_for_url(f"**/clusters/local/topics/{topic}/")
    expect(page.locator("ul.messages li.success")).to_have_text(f"Topic {topic} created.")
    expect(page.locator("#partitions tbody tr")).to_have_count(2)
    assert len(admin.list_topics(topic, timeout=15).topics[topic].partitions) == 2
    assert describe(bootstrap, topic)["cleanup.policy"].value == "compact"

    # Configs: a refused value, then a good one, then a reset; a real client sees each.
    page.click("#configs-link")
    row = page.locator("#configs tr[data-config='retention.ms']")
    expect(row.locator("td.source")).to_contain_text("topic override")
    expect(page.locator("#configs tr[data-config='segment.bytes'] td.doc")).not_to_be_empty()
    row.locator("input[name=value]").fill("soon")
    with page.expect_navigation():
        row.locator("button.config-set").click()
    row = page.locator("#configs tr[data-config='retention.ms']")
    expect(row.locator(".config-error")).to_contain_text("(INVALID_CONFIG)")
    expect(row.locator(".config-error")).not_to_contain_text("ConfigResource")
    expect(row.locator("input[name=value]")).to_have_value("soon")
    page.screenshot(path=str(ARTIFACTS / "topic-configs-error.png"))
    row.locator("input[name=value]").fill("7200000")
    with page.expect_navigation():
        row.locator("button.config-set").click()
    expect(page.locator("ul.messages li.success")).to_have_text(
        f"{topic}: retention.ms set to 7200000."
    )
    entry = describe(bootstrap, topic)["retention.ms"]
    assert (entry.value, entry.source) == ("7200000", TOPIC_OVERRIDE)
    page.select_option("#config-filter", "override")
    expect(page.locator("#configs tbody tr:visible")).to_have_count(2)
    page.screenshot(path=str(ARTIFACTS / "topic-configs-1440x900.png"))
    with page.expect_navigation():
        page.locator("#configs tr[data-config='retention.ms'] button.config-reset").click()
    expect(page.locator("ul.messages li.success")).to_contain_text("retention.ms reset")
    entry = describe(bootstrap, topic)["retention.ms"]
    assert entry.source != TOPIC_OVERRIDE and entry.value == "604800000"
    expect(page.locator("#configs tr[data-config='retention.ms'] td.source")).to_have_text(
        "default"
    )

    # Delete: the wrong name is refused; the right one deletes.
    page.goto(f"{live_dashboard.url}/clusters/local/topics/{topic}/")
    page.fill("#delete-topic [name=confirm]", "something-else")
    with page.expect_navigation():
        page.click("#delete-topic-submit")
    expect(page.locator("#delete-topic-error")).to_contain_text("to delete it")
    page.fill("#delete-topic [name=confirm]", topic)
    page.click("#delete-topic-submit")
    page.wait_for_url("**/clusters/local/topics/")
    expect(page.locator("ul.messages li.success")).to_have_text(f"Topic {topic} deleted.")
    wait_until(lambda: topic not in admin.list_topics(timeout=15).topics, 30)


def test_group_offsets_reset_and_group_deleted_in_the_ui(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    bootstrap = live_dashboard.broker.bootstrap
    topic = f"console-g-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    produce_to(bootstrap, topic, 6, partition=0)
    group = f"console-group-{topic}"
    commit_standalone(bootstrap, group, {(topic, 0): 5})
    log_in(page, live_dashboard)
    page.goto(f"{live_dashboard.url}/clusters/local/groups/{group}/")
    expect(page.locator("#live-status")).to_have_text("live")
    # Empty tables say so, also once the live snapshot has redrawn them.
    expect(page.locator("#members tbody tr.empty-state")).to_have_text(
        "no members: the group is inactive"
    )

    # Preview a shift back by 3: the table shows it, nothing is committed.
    page.select_option("#reset-offsets [name=to]", "shift")
    page.fill("#reset-offsets [name=value]", "-3")
    page.fill("#reset-offsets [name=topic]", topic)
    with page.expect_navigation():
        page.click("#reset-preview-submit")
    preview = page.locator(f"#reset-preview tr[data-partition='{topic}:0']")
    expect(preview.locator("td.previous")).to_have_text("5")
    expect(preview.locator("td.new")).to_have_text("2")
    page.screenshot(path=str(ARTIFACTS / "group-reset-preview.png"), full_page=True)
    expect(page.locator("#reset-offsets [name=value]")).to_have_value("-3")

    # Execute: a real consumer of the group resumes at offset 2.
    with page.expect_navigation():
        page.click("#reset-submit")
    expect(page.locator("ul.messages li.success")).to_have_text("Reset the offsets of 1 partition.")
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    consumer.assign([tp])
    records = consumer.poll(timeout_ms=10_000, max_records=1)[tp]
    consumer.close()
    assert [r.offset for r in records] == [2] and records[0].value == b"value-2"

    # Delete the group after typing its id.
    page.fill("#delete-group [name=confirm]", group)
    page.click("#delete-group-submit")
    page.wait_for_url("**/clusters/local/groups/")
    expect(page.locator("ul.messages li.success")).to_have_text(f"Consumer group {group} deleted.")
    listed = AdminClient({"bootstrap.servers": bootstrap}).list_consumer_groups().result()
    assert group not in [g.group_id for g in listed.valid]


def test_readable_sizes_and_dark_mode(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    bootstrap = live_dashboard.broker.bootstrap
    topic = f"console-d-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    produce_to(bootstrap, topic, 1500, partition=0)
    log_in(page, live_dashboard)
    page.goto(f"{live_dashboard.url}/clusters/local/topics/{topic}/")
    expect(page.locator("#live-status")).to_have_text("live")
    row = page.locator("#partitions tbody tr[data-partition='0']")
    expect(row.locator("td.hw")).to_have_text("1,500")  # thousands separator, live too
    size = row.locator("td.size")
    expect(size).to_have_text(re.compile(r"^\d+(\.\d)? KiB$"))  # ~1500 small records
    assert int(size.get_attribute("data-bytes")) > 1024
    assert size.get_attribute("title").endswith(" bytes")
    page.screenshot(path=str(ARTIFACTS / "topic-light-1440x900.png"))

    # Dark mode: the toggle overrides the system setting and is remembered.
    background = "() => getComputedStyle(document.body).backgroundColor"
    light = page.evaluate(background)
    page.click("#theme-toggle")
    expect(page.locator("#theme-toggle")).to_have_text("Theme: dark")
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
    dark = page.evaluate(background)
    assert dark != light and sum(map(int, re.findall(r"\d+", dark)[:3])) < 100
    page.reload()
    expect(page.locator("#theme-toggle")).to_have_text("Theme: dark")
    assert page.evaluate(background) == dark
    page.screenshot(path=str(ARTIFACTS / "topic-dark-1440x900.png"))
    page.goto(f"{live_dashboard.url}/clusters/local/topics/{topic}/configs/")
    page.screenshot(path=str(ARTIFACTS / "topic-configs-dark-1440x900.png"))
    # With the choice back on auto, a system in dark mode gets dark too.
    page.click("#theme-toggle")  # light
    page.click("#theme-toggle")  # auto
    expect(page.locator("#theme-toggle")).to_have_text("Theme: auto")
    page.emulate_media(color_scheme="dark")
    assert page.evaluate(background) == dark
    page.emulate_media(color_scheme="light")
    assert page.evaluate(background) == light
