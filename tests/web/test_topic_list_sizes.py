"""The topics list's size on disk (the leaders' replicas, DescribeLogDirs) and records per
second (the newest recent history sample), through Django's test client on a real broker;
and its columns sorted by a click in chromium (size, then records, both ways)."""

from __future__ import annotations

import datetime
import re
import uuid

import pytest
from django.test import Client
from django.utils import timezone
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from playwright.sync_api import expect

from .conftest import make_user
from .test_browser import browser_page, log_in  # noqa: F401 - browser_page is a fixture


def fill(bootstrap: str, topics: dict[str, tuple[int, int]]) -> None:
    """topic -> (records, value size), one partition each."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(t, 1, 1) for t in topics])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for topic, (count, size) in topics.items():
        for _ in range(count):
            producer.send(topic, b"v" * size, partition=0)
    producer.flush()
    producer.close()


@pytest.mark.django_db(transaction=True)
def test_sizes_and_rates_on_the_topics_list(kafka_cluster, broker, topic_name):
    from dashboard.core.models import HistorySample

    big, small = f"{topic_name}-big", f"{topic_name}-small"
    fill(broker.bootstrap, {big: (300, 1024), small: (10, 10)})
    now = timezone.now()
    HistorySample.objects.bulk_create(
        [
            HistorySample(cluster=kafka_cluster, kind="throughput", topic=big, value=3.0,
                          timestamp=now - datetime.timedelta(seconds=20)),
            HistorySample(cluster=kafka_cluster, kind="throughput", topic=big, value=12.5,
                          timestamp=now),
            # Too old to be a current rate: not shown.
            HistorySample(cluster=kafka_cluster, kind="throughput", topic=small, value=99.0,
                          timestamp=now - datetime.timedelta(hours=2)),
        ]
    )  # fmt: skip
    client = Client()
    client.force_login(make_user("toby", "viewer"))
    page = client.get(f"/clusters/local/topics/?q={topic_name}")
    rows = {r["name"]: r for r in page.context["rows"]}
    assert rows[big]["size_bytes"] >= 300 * 1024 > rows[small]["size_bytes"] > 10 * 10
    assert rows[big]["records_per_s"] == 12.5 and rows[small]["records_per_s"] is None
    html = page.content.decode()
    assert "12.5 records/s" in html and 'class="server-sorted"' in html
    assert f'data-bytes="{rows[big]["size_bytes"]}"' in html
    # Sorted on the server: by records (asked of the brokers for every match), by records/s
    # (unknown rates last both ways), one a page.
    for sort, direction, page_no, expected in [
        ("records", "asc", 1, small),
        ("records", "desc", 1, big),
        ("records", "desc", 2, small),
        ("records_per_s", "asc", 1, big),
        ("records_per_s", "desc", 2, small),
        ("name", "desc", 1, small),
        ("partitions", "desc", 1, big),
    ]:
        query = f"q={topic_name}&sort={sort}&dir={direction}&size=1&page={page_no}"
        shown = [r["name"] for r in client.get(f"/clusters/local/topics/?{query}").context["rows"]]
        assert shown == [expected], (query, shown)


def test_topics_list_sorts_by_a_click(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    prefix = f"sort-{uuid.uuid4().hex[:6]}"
    sizes = {f"{prefix}-a": (5, 2000), f"{prefix}-b": (40, 2000), f"{prefix}-c": (1, 10)}
    fill(live_dashboard.broker.bootstrap, sizes)
    log_in(page, live_dashboard)
    page.goto(f"{live_dashboard.url}/clusters/local/topics/?q={prefix}")
    shown = page.locator("#topic-list tbody tr")
    expect(shown).to_have_count(3)
    order = lambda: [r.get_attribute("data-topic")[-1] for r in shown.all()]  # noqa: E731
    assert order() == ["a", "b", "c"]  # by name
    # Sorted by the server (every matching topic, not only the page): size, largest first.
    page.click("#topic-list th[data-key=size_bytes] a")
    page.wait_for_url(re.compile(r"sort=size_bytes&dir=desc"))
    assert order() == ["b", "a", "c"]
    expect(page.locator("#topic-list th[data-key=size_bytes]")).to_have_attribute(
        "aria-sort", "descending"
    )
    page.click("#topic-list th[data-key=size_bytes] a")
    page.wait_for_url(re.compile(r"sort=size_bytes&dir=asc"))
    assert order() == ["c", "a", "b"]
    # One a page: the order holds across pages.
    page.goto(
        f"{live_dashboard.url}/clusters/local/topics/?q={prefix}&sort=size_bytes&dir=desc&size=1&page=2"
    )
    assert order() == ["a"]
