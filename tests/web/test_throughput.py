"""Throughput in the console from the brokers' own counters (Kafka's BrokerTopicMetrics on the
admin API): bytes in/out and records in per second on the overview, broker and topic pages,
live, changing when a real producer and a real consumer start and stop; and the history the
platform records (beat's task, run here through manage.py) charted with readable axes."""

from __future__ import annotations

import re
import threading
import uuid

import pytest
from django.test import Client
from django.utils import timezone
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from playwright.sync_api import expect

from .conftest import ARTIFACTS, _manage, make_user, wait_until
from .test_browser import browser_page, log_in  # noqa: F401 - browser_page is a fixture

BYTES_RATE = re.compile(r"^[\d,]+(\.\d)? (B|KiB|MiB|GiB)/s$")
RECORDS_RATE = re.compile(r"^[\d,]+(\.\d)? records/s$")


class Load:
    """A real producer (about 1 KiB records, steadily) and a real consumer on one topic,
    each in a thread, until stopped."""

    def __init__(self, bootstrap: str, topic: str):
        self.bootstrap, self.topic = bootstrap, topic
        self.stopping = threading.Event()
        self.produced = self.consumed = 0
        self.threads = [
            threading.Thread(target=f, daemon=True) for f in (self._produce, self._consume)
        ]

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for thread in self.threads:
            thread.join(30)

    def _produce(self):
        producer = KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5)
        while not self.stopping.is_set():
            for _ in range(20):
                producer.send(self.topic, b"v" * 1000)
            producer.flush()
            self.produced += 20
            self.stopping.wait(0.02)
        producer.close()

    def _consume(self):
        consumer = KafkaConsumer(self.topic, bootstrap_servers=self.bootstrap,
                                 auto_offset_reset="earliest", fetch_max_wait_ms=100)  # fmt: skip
        while not self.stopping.is_set():
            for records in consumer.poll(200).values():
                self.consumed += len(records)
        consumer.close()


def rate(page, selector: str) -> float | None:
    value = page.locator(selector).get_attribute("data-value")
    return float(value) if value else None


def make_topic(bootstrap: str) -> str:
    topic = f"tput-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    return topic


def test_rates_follow_a_real_producer_and_consumer(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    bootstrap = live_dashboard.broker.bootstrap
    topic = make_topic(bootstrap)
    log_in(page, live_dashboard)
    base = f"{live_dashboard.url}/clusters/local"
    total_in = "#cluster-throughput [data-rate=bytes_in_per_s]"
    expect(page.locator("#live-status")).to_have_text("live")
    # Measured after two collector rounds, as numbers with their unit.
    expect(page.locator(total_in)).to_have_text(BYTES_RATE)
    expect(page.locator("#broker-throughput tbody tr[data-broker]")).to_have_count(1)

    with Load(bootstrap, topic) as load:
        wait_until(lambda: load.consumed > 100, 60)
        wait_until(lambda: (rate(page, total_in) or 0) > 5_000, 60)  # ~1 KiB records
        wait_until(
            lambda: (rate(page, "#cluster-throughput [data-rate=records_in_per_s]") or 0) > 5, 30
        )
        wait_until(
            lambda: (rate(page, "#cluster-throughput [data-rate=bytes_out_per_s]") or 0) > 0, 30
        )
        expect(page.locator("#cluster-throughput [data-rate=records_in_per_s]")).to_have_text(
            RECORDS_RATE
        )
        assert BYTES_RATE.match(page.locator(total_in).inner_text())
        row = page.locator("#broker-throughput tbody tr[data-broker] [data-rate=bytes_in_per_s]")
        wait_until(lambda: float(row.get_attribute("data-value") or 0) > 0, 30)
        page.screenshot(path=str(ARTIFACTS / "throughput-overview-live.png"), full_page=True)

        page.goto(f"{base}/brokers/{live_dashboard.broker.broker_id}/")
        broker_in = "#broker-throughput [data-rate=bytes_in_per_s]"
        wait_until(lambda: (rate(page, broker_in) or 0) > 0, 30)
        assert BYTES_RATE.match(page.locator(broker_in).inner_text())
        # One broker: nothing replicates, and the replication cards say so with a unit.
        for name in ("replication_bytes_in_per_s", "replication_bytes_out_per_s"):
            expect(page.locator(f"#broker-throughput [data-rate={name}]")).to_have_text("0 B/s")

        page.goto(f"{base}/topics/{topic}/")
        topic_in = "#topic-throughput [data-rate=bytes_in_per_s]"
        topic_out = "#topic-throughput [data-rate=bytes_out_per_s]"
        wait_until(lambda: (rate(page, topic_in) or 0) > 5_000, 60)
        wait_until(lambda: (rate(page, topic_out) or 0) > 0, 60)
        expect(page.locator("#topic-throughput [data-rate=records_in_per_s]")).to_have_text(
            RECORDS_RATE
        )

    # The load stopped: the rates fall to zero, still with their units.
    wait_until(lambda: rate(page, topic_in) == 0 and rate(page, topic_out) == 0, 30)
    expect(page.locator(topic_in)).to_have_text("0 B/s")
    expect(page.locator("#topic-throughput [data-rate=records_in_per_s]")).to_have_text(
        "0 records/s"
    )
    page.goto(f"{base}/")
    wait_until(lambda: rate(page, total_in) == 0, 30)


def test_recorded_throughput_is_charted(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    bootstrap = live_dashboard.broker.bootstrap
    topic = make_topic(bootstrap)
    record = "from tasks.history import record_history; print(record_history())"
    _manage(live_dashboard.env, "shell", "-c", record)
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for _ in range(200):
        producer.send(topic, b"x" * 2000)
    producer.flush()
    producer.close()
    _manage(live_dashboard.env, "shell", "-c", record)  # the second round has rates

    log_in(page, live_dashboard)
    page.set_viewport_size({"width": 1440, "height": 900})
    base = f"{live_dashboard.url}/clusters/local"
    for path, chart in [
        (f"{base}/", "cluster-bytes-chart"),
        (f"{base}/brokers/{live_dashboard.broker.broker_id}/", "broker-bytes-chart"),
        (f"{base}/topics/{topic}/", "topic-bytes-chart"),
    ]:
        page.goto(path)
        expect(page.locator(f"#{chart} canvas")).to_have_count(1)
        assert int(page.locator(f"#{chart}").get_attribute("data-points")) >= 1
        axes = page.evaluate(f"() => window.HistoryCharts['{chart}'].axes.map((a) => a.label)")
        assert axes == ["time (your zone)", "bytes/s"]
        series = page.evaluate(f"() => window.HistoryCharts['{chart}'].series.map((s) => s.label)")
        assert series[1:] == ["bytes in/s", "bytes out/s"]
        # The newest bytes-in point counts the 200 records of ~2 KB since the first round.
        newest = page.evaluate(
            "(id) => { const d = window.HistoryCharts[id].data[1]; return d[d.length - 1]; }", chart
        )
        assert newest > 0
        page.screenshot(path=str(ARTIFACTS / f"throughput-{chart}.png"), full_page=True)
    # The page is on the topic: its records/s from high-watermark growth beside the bytes.
    assert page.evaluate("() => window.RateChart.axes.map((a) => a.label)") == [
        "time (your zone)", "records/s"
    ]  # fmt: skip
    assert int(page.locator("#throughput-chart").get_attribute("data-points")) >= 1
    page.goto(f"{base}/")
    page.emulate_media(color_scheme="dark")  # the theme follows the system: axes in its colours
    page.reload()
    expect(page.locator("#cluster-bytes-chart")).to_have_attribute("data-axis-colour", "#dbe3ec")
    page.screenshot(path=str(ARTIFACTS / "throughput-overview-dark.png"), full_page=True)
    axes = page.evaluate(
        "() => window.HistoryCharts['cluster-records-chart'].axes.map((a) => a.label)"
    )
    assert axes == ["time (your zone)", "records/s"]


@pytest.mark.django_db(transaction=True)
def test_topics_list_and_pages_show_recorded_rates_with_units(kafka_cluster, broker, topic_name):
    from dashboard.core.models import HistorySample

    make = lambda kind, value, **where: HistorySample(  # noqa: E731
        cluster=kafka_cluster, kind=kind, value=value, timestamp=timezone.now(), **where
    )
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(topic_name, 1, 1)])
    admin.close()
    HistorySample.objects.bulk_create(
        [make("throughput", 1234.5, topic=topic_name), make("bytes_in", 3 * 1024 * 1024.0, topic=topic_name),
         make("bytes_out", 1536.0, topic=topic_name), make("bytes_in", 2048.0, broker=broker.broker_id),
         make("records_in", 7.0, broker=broker.broker_id)]
    )  # fmt: skip
    client = Client()
    client.force_login(make_user("tina", "viewer"))
    page = client.get(f"/clusters/local/topics/?q={topic_name}")
    (row,) = page.context["rows"]
    assert (row["records_per_s"], row["bytes_in_per_s"], row["bytes_out_per_s"]) == (
        1234.5, 3 * 1024 * 1024.0, 1536.0
    )  # fmt: skip
    html = page.content.decode()
    assert "1,234 records/s" in html or "1,235 records/s" in html
    assert "3.0 MiB/s" in html and "1.5 KiB/s" in html
    topic_page = client.get(f"/clusters/local/topics/{topic_name}/")
    series = topic_page.context["throughput_bytes"]["series"]
    assert [s["label"] for s in series] == ["bytes in/s", "bytes out/s"]
    assert [p[1] for p in series[0]["points"]] == [3 * 1024 * 1024.0]
    broker_page = client.get(f"/clusters/local/brokers/{broker.broker_id}/")
    assert [p[1] for p in broker_page.context["throughput_records"]["series"][0]["points"]] == [7.0]
    overview = client.get("/clusters/local/")
    assert (
        overview.context["throughput_bytes"]["series"][0]["points"][0][1] == 2048.0
    )  # brokers summed


def test_rates_between_two_reads_of_the_counters():
    from dashboard.core.throughput import rates

    def read(ms, totals, topics, complete=True):
        return {"taken_at_ms": ms, "complete": complete,
                "all_topics": dict(zip(("bytes_in", "bytes_out", "messages_in"), totals, strict=True)),
                "topics": {t: dict(zip(("bytes_in", "bytes_out", "messages_in"), c, strict=True))
                           for t, c in topics.items()}}  # fmt: skip

    assert rates(None, {1: read(0, (0, 0, 0), {})}) == {"brokers": {}, "topics": {}, "total": None}
    before = {1: read(1000, (1000, 0, 10), {"a": (1000, 0, 10)}),
              2: read(1000, (5000, 0, 50), {"a": (5000, 0, 50)})}  # fmt: skip
    after = {1: read(3000, (3000, 4000, 30), {"a": (2000, 4000, 20), "b": (1000, 0, 10)}),
             # Broker 2 restarted: its counters start again from zero.
             2: read(3000, (800, 0, 8), {"a": (800, 0, 8)}),
             3: read(3000, (9, 9, 9), {})}  # fmt: skip  # no earlier read: no rate
    found = rates(before, after)
    no_replication = {"replication_bytes_in_per_s": 0.0, "replication_bytes_out_per_s": 0.0}
    assert found["brokers"] == {
        1: {"bytes_in_per_s": 1000.0, "bytes_out_per_s": 2000.0, "records_in_per_s": 10.0,
            **no_replication},
        2: {"bytes_in_per_s": 400.0, "bytes_out_per_s": 0.0, "records_in_per_s": 4.0,
            **no_replication},
    }  # fmt: skip
    assert found["topics"]["a"] == {
        "bytes_in_per_s": 900.0, "bytes_out_per_s": 2000.0, "records_in_per_s": 9.0
    }  # fmt: skip
    assert found["topics"]["b"]["bytes_in_per_s"] == 500.0  # new since a complete read
    assert found["total"]["bytes_in_per_s"] == 1400.0
    # After a narrowed read (only the watched topics), a topic it did not ask about has no
    # rate yet rather than its whole count since start-up.
    # A broker's replication traffic, from its all-topics counters.
    first, second = read(1000, (0, 0, 0), {}), read(3000, (0, 0, 0), {})
    first["all_topics"].update(replication_bytes_in=100, replication_bytes_out=0)
    second["all_topics"].update(replication_bytes_in=4100, replication_bytes_out=600)
    assert rates({1: first}, {1: second})["brokers"][1] == {
        "bytes_in_per_s": 0.0, "bytes_out_per_s": 0.0, "records_in_per_s": 0.0,
        "replication_bytes_in_per_s": 2000.0, "replication_bytes_out_per_s": 300.0,
    }  # fmt: skip
    narrowed = {1: read(1000, (0, 0, 0), {"a": (0, 0, 0)}, complete=False)}
    later = {1: read(2000, (10, 0, 1), {"a": (0, 0, 0), "b": (10, 0, 1)}, complete=False)}
    assert set(rates(narrowed, later)["topics"]) == {"a"}
