"""Every empty table of the console says what is empty, and what to do where that helps
(issue 17), on a cluster of its own that has no topic, group, transaction, ACL or run yet, in
a real browser (Debian's chromium) on a live daphne; and a list emptied by a live update
(the overview's topics, the group page's members) shows its empty state again rather than
an empty table."""

from __future__ import annotations

import re
import uuid

import pytest
from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient, NewTopic
from playwright.sync_api import expect

from .conftest import ARTIFACTS, dashboard_on_own_broker, wait_until
from .test_browser import LIVE_EXPECT_TIMEOUT_MS, chromium_context, log_in


@pytest.fixture(scope="module")
def empty_dashboard(zookeeper, tmp_path_factory, redis_server):
    """A live dashboard on a broker of its own that nothing else touches."""
    with dashboard_on_own_broker(
        zookeeper,
        tmp_path_factory,
        redis_server,
        num_partitions="1",
        group_initial_rebalance_delay_ms="0",
    ) as dashboard:
        yield dashboard


@pytest.fixture
def page(empty_dashboard):
    with chromium_context(expect_timeout_ms=LIVE_EXPECT_TIMEOUT_MS) as context:
        page = context.new_page()
        page.set_viewport_size({"width": 1440, "height": 900})
        log_in(page, empty_dashboard)
        yield page


# page, the empty state's selector, words it must contain
EMPTY_PAGES = [
    ("topics", "/topics/", "#topic-list tbody tr td.empty-row", "no topics yet: create one"),
    ("groups", "/groups/", "#group-list tbody tr td.empty-row", "groups appear when a consumer"),
    (
        "transactions",
        "/transactions/",
        "#transactions tbody tr.empty-state",
        "no transactional ids yet: they appear when a producer",
    ),
    ("maintenance", "/maintenance/", "#schedules tbody .empty-row", "no schedules yet"),
    ("maintenance-runs", "/maintenance/", "#runs tbody tr.empty-state", "no runs yet: runs"),
    ("security-acls", "/security/", "#acls tbody .empty-row", "no ACLs"),
    ("security-users", "/security/", "#users tbody .empty-row", "no SCRAM users yet"),
    ("spark-loads", "/spark-loads/", "#loads tbody tr.empty-state", "no loads yet: launch one"),
    ("broker-led", "/brokers/1/", "#led tbody tr.empty-state", "leads no partition"),
    ("broker-followed", "/brokers/1/", "#followed tbody tr.empty-state", "follows no partition"),
]


def test_every_empty_table_says_so(page, empty_dashboard):
    c = f"{empty_dashboard.url}/clusters/local"
    for name, path, selector, words in EMPTY_PAGES:
        page.goto(f"{c}{path}")
        empty = page.locator(selector)
        expect(empty, name).to_have_count(1)
        expect(empty, name).to_contain_text(words)
    page.screenshot(path=str(ARTIFACTS / "empty-broker-1440x900.png"), full_page=True)


def test_live_updates_that_empty_a_list_show_the_empty_state(page, empty_dashboard):
    bootstrap = empty_dashboard.broker.bootstrap
    page.goto(f"{empty_dashboard.url}/clusters/local/")
    expect(page.locator("#live-status")).to_have_text("live")
    page.wait_for_function("() => document.body.dataset.updated")
    topics_empty = page.locator("#topics li.empty-state")
    expect(topics_empty).to_contain_text("No topics yet")
    expect(page.locator("#problems tbody tr.empty-state")).to_contain_text("every partition")

    # A topic appears live, and when it is deleted the empty state comes back live.
    topic = f"empty-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1)])
    expect(page.locator("#topics a", has_text=topic)).to_have_count(1)
    expect(topics_empty).to_have_count(0)
    admin.delete_topics([topic])
    expect(topics_empty).to_contain_text("No topics yet")
    expect(page.locator("#topics li")).to_have_count(1)

    # The group page: a member joins live, leaves, and the members table says so again
    # (its consumer creates __consumer_offsets: the cluster is no longer empty after this).
    topic = f"empty-g-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    group = f"empty-group-{uuid.uuid4().hex[:6]}"
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    try:
        wait_until(lambda: consumer.poll(200) is not None and consumer.assignment(), 30)
        page.goto(f"{empty_dashboard.url}/clusters/local/groups/{group}/")
        expect(page.locator("#live-status")).to_have_text("live")
        expect(page.locator("#members tbody tr:not(.empty-state)")).to_have_count(1)
    finally:
        consumer.close()
    expect(page.locator("#members tbody tr.empty-state")).to_have_text(
        "no members: the group is inactive"
    )
    # It never committed: once its member left, it has no offsets either.
    expect(page.locator("#lags tbody tr.empty-state")).to_contain_text(
        "they appear when a member of the group commits offsets"
    )


def test_a_spark_load_with_nothing_yet_says_so(kafka_cluster, client):
    """A queued load has no log and no result yet: its page says so (Django's test client)."""
    from dashboard.core.models import SparkLoad

    from .conftest import make_user

    client.force_login(make_user("elsa", "viewer"))
    html = client.get("/clusters/local/spark-loads/").content.decode()
    assert "no loads yet" in html
    load = SparkLoad.objects.create(cluster=kafka_cluster, topic="orders", output="/o/empty")
    html = client.get(f"/clusters/local/spark-loads/{load.pk}/").content.decode()
    assert re.search(r"<p id=\"load-log-empty\" class=\"muted\"\s*>No log lines yet", html)
