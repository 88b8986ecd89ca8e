"""The message browser's live tail over Channels on the real Redis layer and a real broker:
armed, then the records a real client produces, each viewer by its own partition and
filters; the collector tails the topic only while a viewer listens."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from channels.db import database_sync_to_async
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from dashboard.live import collector as collectors
from dashboard.live import tail as tails

from .conftest import make_user
from .test_live import communicator

pytestmark = pytest.mark.django_db(transaction=True)


async def next_tail(connection, timeout: float = 15.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, "no tail message in time"
        message = await connection.receive_json_from(timeout=remaining)
        if message["kind"] == "tail":
            return message["data"]


async def records_until(connection, count: int) -> list[dict]:
    seen: list[dict] = []
    while len(seen) < count:
        data = await next_tail(connection)
        assert data["error"] is None
        seen += data["records"]
    return seen


def produce(bootstrap: str, topic: str, records) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for partition, key, value in records:
        producer.send(topic, value, key=key, partition=partition, headers=[("h", b"1")])
    producer.flush()
    producer.close()


async def test_tail_pushes_new_records_per_viewer_filters_and_stops_with_the_last_viewer(
    kafka_cluster, channel_layer_on_redis, broker, topic_name, monkeypatch
):
    monkeypatch.setattr(collectors, "STOP_GRACE_S", 0.05)
    await asyncio.to_thread(_create, broker.bootstrap, topic_name)
    await asyncio.to_thread(produce, broker.bootstrap, topic_name, [(0, b"old", b"{}")])
    user = await database_sync_to_async(make_user)("tina", "viewer")
    base = f"/ws/clusters/local/topics/{topic_name}/messages/"
    everything = communicator(base, user)
    assert (await everything.connect())[0]
    armed = await next_tail(everything)
    assert armed == {"records": [], "skipped": 0, "error": None}
    filtered = communicator(f"{base}?partition=1&filter=%24.n%20%3E%3D%202", user)
    assert (await filtered.connect())[0]
    assert await next_tail(filtered) == armed  # the tail is armed already: told at once
    collector = collectors.collector_for("local")
    assert collector.tail_armed(topic_name)

    docs = [(i % 2, b"k%d" % i, json.dumps({"n": i}).encode()) for i in range(6)]
    await asyncio.to_thread(produce, broker.bootstrap, topic_name, docs)
    seen = await records_until(everything, 6)
    assert sorted((r["partition_id"], r["key"]["data"]) for r in seen) == sorted(
        (p, k.decode()) for p, k, _ in docs
    )  # not the record produced before the tail was armed
    assert seen[0]["headers"] == [{"name": "h", "value": "MQ=="}]
    mine = await records_until(filtered, 2)
    assert [(r["partition_id"], r["value"]["data"]) for r in mine] == [
        (1, '{"n": 3}'),
        (1, '{"n": 5}'),
    ]

    await everything.disconnect()
    assert ("tail", topic_name) in collector.watches  # one viewer is left
    await filtered.disconnect()
    assert ("tail", topic_name) not in collector.watches and not collector.tails
    async with asyncio.timeout(15):
        while "local" in collectors._registry():
            await asyncio.sleep(0.05)
    assert not collector.running


async def test_a_fast_topic_is_skipped_ahead_and_bad_filters_are_refused(
    kafka_cluster, channel_layer_on_redis, broker, topic_name, monkeypatch
):
    monkeypatch.setattr(tails, "MAX_RECORDS_PER_PARTITION", 5)
    await asyncio.to_thread(_create, broker.bootstrap, topic_name)
    user = await database_sync_to_async(make_user)("fay", "viewer")
    base = f"/ws/clusters/local/topics/{topic_name}/messages/"
    bad = communicator(f"{base}?filter=%24.a%20%3D%3D", user)
    connected, code = await bad.connect()
    assert not connected and code == 4400

    connection = communicator(f"{base}?partition=0", user)
    assert (await connection.connect())[0]
    await next_tail(connection)
    await asyncio.to_thread(
        produce, broker.bootstrap, topic_name, [(0, None, b"v%d" % i) for i in range(12)]
    )
    # Whatever rounds the 12 records fall into, none pushes more than 5 and every record is
    # either pushed or counted as skipped; the newest always arrive.
    shown, skipped = [], 0
    while "v11" not in shown:
        data = await next_tail(connection)
        assert len(data["records"]) <= 5
        shown += [r["value"]["data"] for r in data["records"]]
        skipped += data["skipped"]
    assert skipped > 0 and len(shown) + skipped == 12
    assert shown[-5:] == [f"v{i}" for i in range(7, 12)]
    await connection.disconnect()


def _create(bootstrap: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 2, 1)])
    admin.close()
