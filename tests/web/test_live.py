"""The live overview over Channels on the real Redis layer: a snapshot follows a new topic."""

from __future__ import annotations

import asyncio
import time

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from kafka.admin import KafkaAdminClient, NewTopic

from dashboard.live.routing import websocket_urlpatterns

from .conftest import make_user

pytestmark = pytest.mark.django_db(transaction=True)


def communicator(path: str, user) -> WebsocketCommunicator:
    connection = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    connection.scope["user"] = user
    return connection


async def next_overview(connection, predicate, timeout: float = 15.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, "no matching snapshot in time"
        message = await connection.receive_json_from(timeout=remaining)
        if message["kind"] == "overview" and predicate(message["data"]):
            return message["data"]


async def test_overview_snapshot_is_pushed_after_a_topic_is_created(
    kafka_cluster, channel_layer_on_redis, broker, topic_name
):
    user = await database_sync_to_async(make_user)("vic", "viewer")
    connection = communicator("/ws/clusters/local/overview/", user)
    connected, _ = await connection.connect()
    assert connected
    before = await next_overview(connection, lambda d: d.get("error") is None)
    assert before["brokers"] == [
        {
            "broker_id": 1,
            "address": broker.bootstrap,
            "rack": None,
            "up": True,
            "is_controller": True,
            "admin_state": "ok",  # its admin API answers /v1/health
        }
    ]
    assert before["controller_id"] == 1

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await asyncio.to_thread(
        admin.create_topics, [NewTopic(topic_name, num_partitions=2, replication_factor=1)]
    )
    admin.close()
    after = await next_overview(connection, lambda d: topic_name in d["topics"])
    assert after["topic_count"] >= before["topic_count"] + 1
    assert after["partition_count"] >= before["partition_count"] + 2
    assert (after["under_replicated_partitions"], after["offline_partitions"]) == (0, 0)
    await connection.disconnect()


async def test_topic_page_snapshot_has_hw_and_leo_per_replica(
    kafka_cluster, channel_layer_on_redis, broker, topic_name
):
    from kafka import KafkaProducer

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await asyncio.to_thread(admin.create_topics, [NewTopic(topic_name, 1, 1)])
    admin.close()
    user = await database_sync_to_async(make_user)("tess", "viewer")
    connection = communicator(f"/ws/clusters/local/topics/{topic_name}/", user)
    assert (await connection.connect())[0]

    def produce():
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
        for _ in range(3):
            producer.send(topic_name, b"x", partition=0)
        producer.flush()
        producer.close()

    await asyncio.to_thread(produce)
    deadline = time.monotonic() + 15
    while True:
        message = await connection.receive_json_from(timeout=max(0.1, deadline - time.monotonic()))
        partitions = message["data"].get("partitions") or []
        if message["kind"] == "topic" and partitions and partitions[0]["high_watermark"] == 3:
            break
    (partition,) = partitions
    assert partition["replicas"][0]["log_end_offset"] == 3
    assert partition["replicas"][0]["in_sync"] and partition["isr"] == [1]
    await connection.disconnect()


async def test_websocket_refuses_users_without_a_role(kafka_cluster, channel_layer_on_redis):
    from django.contrib.auth.models import AnonymousUser

    for user in (AnonymousUser(), await database_sync_to_async(make_user)("nils", None)):
        connection = communicator("/ws/clusters/local/overview/", user)
        connected, code = await connection.connect()
        assert not connected and code == 4403
    viewer = await database_sync_to_async(make_user)("vik", "viewer")
    connection = communicator("/ws/clusters/unknown/overview/", viewer)
    connected, code = await connection.connect()
    assert not connected and code == 4404
