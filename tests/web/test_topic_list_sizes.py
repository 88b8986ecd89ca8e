"""The topics list's size on disk (the leaders' replicas, DescribeLogDirs) and records per
second (the newest recent history sample), through Django's test client on a real broker;
and its columns sorted by a click in chromium (size, then records, both ways)."""

from __future__ import annotations

import datetime
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
    assert "12.5 records/s" in html and 'class="sortable"' in html
    assert f'data-bytes="{rows[big]["size_bytes"]}"' in html


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
    page.click("#topic-list th:has-text('Size') button")
    assert order() == ["c", "a", "b"]
    expect(page.locator("#topic-list th:has-text('Size')")).to_have_attribute(
        "aria-sort", "ascending"
    )
    page.click("#topic-list th:has-text('Size') button")
    assert order() == ["b", "a", "c"]
    page.click("#topic-list th:has-text('Records') >> nth=0 >> button")
    assert order() == ["c", "a", "b"]


@pytest.mark.django_db(transaction=True)
def test_topic_page_charts_its_recorded_throughput(kafka_cluster, broker, topic_name):
    from dashboard.core.models import HistorySample

    fill(broker.bootstrap, {topic_name: (3, 10)})
    now = timezone.now()
    HistorySample.objects.bulk_create(
        [
            HistorySample(cluster=kafka_cluster, kind="throughput", topic=topic_name, value=v,
                          timestamp=now - datetime.timedelta(seconds=30 * (3 - i)))
            for i, v in enumerate([1.0, 250.0, 4200.0])
        ]
        + [HistorySample(cluster=kafka_cluster, kind="throughput", topic="other", value=7.0,
                         timestamp=now)]
    )  # fmt: skip
    client = Client()
    client.force_login(make_user("tess", "viewer"))
    page = client.get(f"/clusters/local/topics/{topic_name}/")
    assert [v for _t, v in page.context["throughput"]] == [1.0, 250.0, 4200.0]
    html = page.content.decode()
    assert 'id="throughput-history"' in html and "rate-chart.js" in html
    assert 'id="throughput-empty" class="muted" hidden' in html


def test_throughput_chart_has_labelled_axes(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    topic = f"chart-{uuid.uuid4().hex[:6]}"
    fill(live_dashboard.broker.bootstrap, {topic: (1, 10)})
    log_in(page, live_dashboard)
    page.goto(f"{live_dashboard.url}/clusters/local/topics/{topic}/")
    expect(page.locator("#throughput-chart canvas")).to_have_count(1)
    expect(page.locator("#throughput-empty")).to_be_visible()  # nothing recorded yet
    # uPlot draws the axes on its canvas: their labels (units, the time zone) from its state.
    axes = page.evaluate("() => window.RateChart.axes.map((a) => a.label)")
    assert axes == ["time (your zone)", "records/s"]
    assert page.locator("#throughput-chart").get_attribute("data-points") == "0"
