"""Kafka's BrokerTopicMetrics on a real broker: bytes and records a real producer sent, bytes a
real consumer read, per topic and for all topics, on the admin API (/v1/topic-metrics) and
on /metrics; a deleted topic's counters go with it."""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.web.conftest import wait_until

from .test_admin_api import admin_for, consume_all, create_topic, metric_samples, produce

RECORDS = 40
VALUE = b"v" * 500


def test_bytes_and_records_in_and_out_per_topic(broker):
    topic = f"tm-{uuid.uuid4().hex[:8]}"
    other = f"{topic}-other"
    create_topic(broker, topic)
    create_topic(broker, other)
    admin = admin_for(broker)
    before = admin.ok("GET", "/v1/topic-metrics")["all_topics"]
    fresh = admin.ok("GET", f"/v1/topic-metrics?topic={topic}&topic=no-such-topic-tm")
    assert fresh["topics"] == {topic: {"bytes_in": 0, "bytes_out": 0, "messages_in": 0}}
    assert admin.ok("GET", "/v1/topic-metrics?totals_only=true")["topics"] == {}

    produce(broker, topic, [(b"k%d" % i, VALUE) for i in range(RECORDS)])
    produce(broker, other, [(None, b"x")])
    counted = admin.ok("GET", f"/v1/topic-metrics?topic={topic}")
    mine = counted["topics"][topic]
    assert mine["messages_in"] == RECORDS
    # The batches as sent: every value, plus headers and keys, but not much more.
    assert RECORDS * len(VALUE) < mine["bytes_in"] < RECORDS * (len(VALUE) + 150)
    assert mine["bytes_out"] == 0  # nothing read yet
    assert counted["taken_at_ms"] > 0 and counted["broker_id"] == broker.broker_id

    assert len(consume_all(broker, topic)) == RECORDS
    read = admin.ok("GET", f"/v1/topic-metrics?topic={topic}")["topics"][topic]
    assert read["bytes_out"] >= mine["bytes_in"]  # every batch went out at least once
    assert read["messages_in"] == RECORDS and read["bytes_in"] == mine["bytes_in"]

    everything = admin.ok("GET", "/v1/topic-metrics")
    assert everything["topics"][other]["messages_in"] == 1
    total = everything["all_topics"]
    # Other tests share the broker: all topics grew by at least what these two did.
    assert total["messages_in"] - before["messages_in"] >= RECORDS + 1
    assert total["bytes_in"] - before["bytes_in"] >= mine["bytes_in"]
    assert total["bytes_out"] - before["bytes_out"] >= read["bytes_out"]

    status, text = admin.get("/metrics", token=None)
    samples = metric_samples(text)
    assert samples[("brokerd_topic_messages_in_total", (("topic", topic),))] == RECORDS
    assert samples[("brokerd_topic_bytes_in_total", (("topic", topic),))] == mine["bytes_in"]
    assert samples[("brokerd_topic_bytes_out_total", (("topic", topic),))] >= read["bytes_out"]
    assert samples[("brokerd_messages_in_total", ())] >= total["messages_in"]

    client = AdminClient({"bootstrap.servers": broker.bootstrap})
    client.delete_topics([other])[other].result(15)
    wait_until(lambda: other not in admin.ok("GET", "/v1/topic-metrics")["topics"], 30)


def test_metrics_forgets_a_deleted_topic_without_the_admin_route(broker):
    """/metrics alone (a Prometheus scraper, nobody reading /v1/topic-metrics) drops a
    deleted topic's series."""
    topic = f"tm-gone-{uuid.uuid4().hex[:8]}"
    create_topic(broker, topic)
    produce(broker, topic, [(None, b"x")])
    admin = admin_for(broker)
    series = ("brokerd_topic_messages_in_total", (("topic", topic),))

    def scraped():
        return metric_samples(admin.get("/metrics", token=None)[1])

    assert scraped()[series] == 1
    client = AdminClient({"bootstrap.servers": broker.bootstrap})
    client.delete_topics([topic])[topic].result(15)
    wait_until(lambda: series not in scraped(), 30)


def test_coordinator_appends_count_as_bytes_in(broker):
    """As Kafka's appendToLocalLog: a group's offset commit, appended by the group
    coordinator to __consumer_offsets, counts in BytesIn and MessagesIn like a produce."""
    topic = f"tm-commit-{uuid.uuid4().hex[:8]}"
    create_topic(broker, topic)
    admin = admin_for(broker)
    zero = {"bytes_in": 0, "messages_in": 0}  # before the first group, no __consumer_offsets
    before = admin.ok("GET", "/v1/topic-metrics?topic=__consumer_offsets")["topics"].get(
        "__consumer_offsets", zero
    )
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}",
         "enable.auto.commit": False}
    )  # fmt: skip
    try:
        for offset in (3, 5):
            consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        consumer.close()
    after = admin.ok("GET", "/v1/topic-metrics?topic=__consumer_offsets")["topics"][
        "__consumer_offsets"
    ]
    assert after["messages_in"] - before["messages_in"] >= 2, (before, after)  # per commit
    assert after["bytes_in"] > before["bytes_in"]
