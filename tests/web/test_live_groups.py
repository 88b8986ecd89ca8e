"""The consumer-group and segments pages over Channels on the real Redis layer, and the pages
themselves: lag follows produce and commit; segments follow a roll; lists paginate."""

from __future__ import annotations

import asyncio
import time

import pytest
from channels.db import database_sync_to_async
from django.test import Client
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from .conftest import make_user
from .test_groups_api import commit
from .test_live import communicator

pytestmark = pytest.mark.django_db(transaction=True)


async def next_message(connection, kind: str, predicate, timeout: float = 15.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no matching {kind} snapshot in time"
        message = await connection.receive_json_from(timeout=remaining)
        if message["kind"] == kind and predicate(message["data"]):
            return message["data"]


def produce(bootstrap: str, topic: str, count: int, partition: int = 0, **kw) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, **kw)
    for i in range(count):
        producer.send(topic, b"value-%d" % i, key=b"key-%d" % (i % 3), partition=partition)
    producer.flush()
    producer.close()


def create_topic(bootstrap: str, topic: str, partitions: int = 1, configs=None) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})])
    admin.close()


async def test_group_snapshot_follows_produce_and_commits(
    group_cluster, channel_layer_on_redis, group_broker, topic_name
):
    bootstrap = group_broker.bootstrap
    await asyncio.to_thread(create_topic, bootstrap, topic_name, 2)
    await asyncio.to_thread(produce, bootstrap, topic_name, 4)
    group = f"live-{topic_name}"
    await asyncio.to_thread(commit, group_broker, group, {(topic_name, 0): 1, (topic_name, 1): 0})

    user = await database_sync_to_async(make_user)("gina", "viewer")
    connection = communicator(f"/ws/clusters/local/groups/{group}/", user)
    assert (await connection.connect())[0]
    first = await next_message(connection, "group", lambda d: d.get("error") is None)
    assert first["state"] == "Empty" and first["member_list"] == []
    lags = {r["partition_id"]: (r["current_offset"], r["log_end_offset"], r["lag"]) for r in first["lags"]}  # fmt: skip
    assert lags == {0: (1, 4, 3), 1: (0, 0, 0)}

    await asyncio.to_thread(produce, bootstrap, topic_name, 5, partition=1)
    grown = await next_message(connection, "group", lambda d: d["lag_summary"]["total_lag"] == 8)
    assert grown["lag_summary"]["max_lag"] == 5
    assert grown["lag_summary"]["max_lag_partition_id"] == 1
    await asyncio.to_thread(commit, group_broker, group, {(topic_name, 1): 5})
    await next_message(connection, "group", lambda d: d["lag_summary"]["total_lag"] == 3)
    await connection.disconnect()

    missing = communicator(f"/ws/clusters/local/groups/none-{topic_name}/", user)
    assert (await missing.connect())[0]
    gone = await next_message(missing, "group", lambda d: True)
    assert "not found" in gone["error"]
    await missing.disconnect()


async def test_segments_snapshot_follows_a_roll(
    group_cluster, channel_layer_on_redis, group_broker, topic_name
):
    bootstrap = group_broker.bootstrap
    await asyncio.to_thread(create_topic, bootstrap, topic_name, 1, {"segment.bytes": "1024"})
    user = await database_sync_to_async(make_user)("sam", "viewer")
    connection = communicator(
        f"/ws/clusters/local/topics/{topic_name}/partitions/0/segments/", user
    )
    assert (await connection.connect())[0]
    empty = await next_message(connection, "segments", lambda d: d.get("error") is None)
    assert len(empty["segments"]) == 1 and empty["segments"][0]["is_active"]
    assert empty["cleanup_policy"] == "delete"

    await asyncio.to_thread(produce, bootstrap, topic_name, 40, linger_ms=0, batch_size=1)
    # Snapshots taken while the records went in are queued too: wait for the one after all 40.
    rolled = await next_message(connection, "segments", lambda d: d.get("high_watermark") == 40)
    assert len(rolled["segments"]) > 1 and rolled["leader"] == 1
    assert rolled["segments"][0]["base_offset"] == 0 and "retention" in rolled["segments"][0]
    await connection.disconnect()


def test_pages_render_groups_segments_and_paginate(group_cluster, group_broker, topic_name):
    create_topic(group_broker.bootstrap, topic_name, 2)
    produce(group_broker.bootstrap, topic_name, 3)
    groups = [f"page-{topic_name}-{i}" for i in range(3)]
    for group in groups:
        commit(group_broker, group, {(topic_name, 0): 1})
    user = make_user("pat", "viewer")
    browser = Client()
    browser.force_login(user)

    page = browser.get(f"/clusters/local/groups/{groups[0]}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="lag-chart"' in html and "vendor/uplot/uPlot.iife.min.js" in html
    assert f'data-partition="{topic_name}:0"' in html
    assert browser.get(f"/clusters/local/groups/nope-{topic_name}/").status_code == 404

    # Server-side pages: size 2 shows 2 and links to the next page after the last shown.
    after = f"page-{topic_name}-"[:-1]
    first = browser.get(f"/clusters/local/groups/?size=2&after={after}").content.decode()
    assert groups[0] in first and groups[1] in first and groups[2] not in first
    assert f"after={groups[1]}" in first
    second = browser.get(f"/clusters/local/groups/?size=2&after={groups[1]}").content.decode()
    assert groups[2] in second and groups[0] not in second

    topics = browser.get(f"/clusters/local/topics/?size=1&after={topic_name[:-1]}").content
    assert topic_name.encode() in topics and b'id="next-page"' in topics
    segments = browser.get(f"/clusters/local/topics/{topic_name}/partitions/0/segments/")
    assert segments.status_code == 200 and b"segments-initial" in segments.content

    # Static files: the chart library is served from the npm install, not the repository.
    from django.contrib.staticfiles import finders

    assert finders.find("vendor/uplot/uPlot.iife.min.js")


def test_topic_created_from_the_ui_needs_an_operator(group_cluster, group_broker, topic_name):
    viewer, operator = make_user("vin", "viewer"), make_user("opal", "operator")
    browser = Client(enforce_csrf_checks=False)
    browser.force_login(viewer)
    url = "/clusters/local/topics/create"
    assert browser.post(url, {"topic_name": topic_name, "partitions": "2"}).status_code == 403
    browser.force_login(operator)
    made = browser.post(url, {"topic_name": topic_name, "partitions": "2"})
    assert made.status_code == 302 and made.url == f"/clusters/local/topics/{topic_name}/"
    bad = browser.post(url, {"topic_name": "no spaces", "partitions": "2"}, follow=True)
    assert b"a topic name is" in bad.content
