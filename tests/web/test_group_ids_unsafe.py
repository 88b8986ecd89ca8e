"""Consumer group ids with "/" and other URL-unsafe characters (Kafka allows any string) work
in the REST API, the pages and the live WebSocket: a real kafka-python member makes the group,
and every link the platform hands out leads back to it."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from channels.db import database_sync_to_async
from django.test import Client
from django.urls import reverse
from django.utils.html import escape
from kafka import KafkaConsumer, TopicPartition

from .conftest import make_user, wait_until
from .test_groups_api import make_topic
from .test_live import communicator

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v3/clusters/local"
UNSAFE = "team/orders v2?x=1#frag%41&ü/lags"  # ends like a sub-resource on purpose


def join_and_commit(broker, topic: str, group: str, records: int) -> KafkaConsumer:
    """Joins `group` and commits once the member has consumed all `records` of partition 0
    (an assignment alone can come before the first fetch, and would commit offset 0)."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    partition = TopicPartition(topic, 0)

    def consumed_all() -> bool:
        consumer.poll(200)
        return partition in consumer.assignment() and consumer.position(partition) == records

    wait_until(consumed_all, 30)
    consumer.commit()
    return consumer


def test_unsafe_group_id_in_rest_paths(
    group_cluster, group_broker, viewer_api, operator_api, topic_name
):
    make_topic(group_broker, topic_name, 1, {0: 4})
    group = f"{UNSAFE}-{topic_name}"
    consumer = join_and_commit(group_broker, topic_name, group, 4)
    try:
        listed = viewer_api.get(f"{API}/consumer-groups?size=1000").json()["data"]
        resource = next(g for g in listed if g["consumer_group_id"] == group)
        self_url = resource["metadata"]["self"]
        assert quote(group, safe="") in self_url

        detail = viewer_api.get(self_url)
        assert detail.status_code == 200, detail.json()
        assert detail.json()["consumer_group_id"] == group
        assert detail.json()["state"] == "STABLE"
        # With its "/" left unencoded the id reaches the same group.
        slashes = f"{API}/consumer-groups/{quote(group, safe='/')}"
        assert viewer_api.get(slashes).json()["consumer_group_id"] == group

        lags = viewer_api.get(resource["lags"]["related"]).json()["data"]
        assert [(r["consumer_group_id"], r["current_offset"], r["lag"]) for r in lags] == [
            (group, 4, 0)
        ]
        summary = viewer_api.get(resource["lag_summary"]["related"])
        assert summary.status_code == 200 and summary.json()["consumer_group_id"] == group
        members = viewer_api.get(resource["consumers"]["related"]).json()["data"]
        assert len(members) == 1
        member = viewer_api.get(members[0]["metadata"]["self"])
        assert member.status_code == 200 and member.json()["consumer_group_id"] == group
    finally:
        consumer.close()

    reset = f"{API}/consumer-groups/{quote(group, safe='')}/offsets:reset"
    done = operator_api.post(reset, {"to": "earliest"}, format="json")
    assert done.status_code == 200, done.json()
    assert [r["new_offset"] for r in done.json()["data"]] == [0]
    assert operator_api.delete(self_url).status_code == 204
    assert viewer_api.get(self_url).status_code == 404


async def test_unsafe_group_id_on_pages_and_live(
    group_cluster, group_broker, channel_layer_on_redis, topic_name
):
    make_topic(group_broker, topic_name, 1, {0: 3})
    group = f"{UNSAFE}-{topic_name}"
    consumer = join_and_commit(group_broker, topic_name, group, 3)
    try:
        user = await database_sync_to_async(make_user)("una", "viewer")

        def pages() -> tuple[str, int, str]:
            browser = Client()
            browser.force_login(user)
            listing = browser.get("/clusters/local/groups/?size=1000").content.decode()
            link = reverse("group-page", args=["local", group])
            page = browser.get(link)
            return listing, page.status_code, page.content.decode()

        listing, status, html = await database_sync_to_async(pages)()
        link = reverse("group-page", args=["local", group])
        assert f'href="{escape(link)}"' in listing
        assert status == 200
        ws_path = f"/ws/clusters/local/groups/{quote(group, safe='')}/"
        assert f'data-ws="{ws_path}"' in html

        connection = communicator(ws_path, user)
        assert (await connection.connect())[0]
        while True:
            message = await connection.receive_json_from(timeout=15)
            if message["kind"] == "group" and message["data"].get("lags"):
                break
        assert message["data"]["error"] is None
        assert message["data"]["lags"][0]["current_offset"] == 3
        await connection.disconnect()
    finally:
        consumer.close()
