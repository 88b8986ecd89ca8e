"""A Spark load's page over Channels on the real Redis layer: the current state on joining,
then every state the Celery task side publishes to `spark_load_group(id)`; roles and unknown
loads refused."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from .conftest import make_user
from .test_live import communicator

pytestmark = pytest.mark.django_db(transaction=True)


def new_load(cluster, **fields):
    from dashboard.core.models import SparkLoad

    return SparkLoad.objects.create(cluster=cluster, topic="orders", output="/o", **fields)


async def test_load_page_gets_the_current_state_then_pushes(kafka_cluster, channel_layer_on_redis):
    from dashboard.core.live_updates import publish_load as publish
    from dashboard.core.models import SparkLoad
    from dashboard.core.spark_loads import cancel_load

    load = await database_sync_to_async(new_load)(kafka_cluster)
    user = await database_sync_to_async(make_user)("val", "viewer")
    connection = communicator(f"/ws/clusters/local/spark-loads/{load.id}/", user)
    assert (await connection.connect())[0]
    first = await connection.receive_json_from(timeout=10)
    assert first["kind"] == "spark_load"
    assert (first["data"]["id"], first["data"]["status"]) == (load.id, "queued")

    def progress():  # what the task's on_progress stores and publishes
        SparkLoad.objects.filter(pk=load.id).update(
            status="running", progress=0.5, tasks_done=1, tasks_total=2
        )
        load.refresh_from_db()
        publish(load)

    await database_sync_to_async(progress)()
    pushed = (await connection.receive_json_from(timeout=10))["data"]
    assert (pushed["status"], pushed["progress"]) == ("running", 0.5)
    assert (pushed["tasks_done"], pushed["tasks_total"]) == (1, 2)

    assert await database_sync_to_async(cancel_load)(load)
    pushed = (await connection.receive_json_from(timeout=10))["data"]
    assert pushed["status"] == "cancelling"
    await connection.disconnect()


async def test_unknown_load_and_missing_role_are_refused(kafka_cluster, channel_layer_on_redis):
    from django.contrib.auth.models import AnonymousUser

    from dashboard.core.models import Cluster

    load = await database_sync_to_async(new_load)(kafka_cluster)
    other = await database_sync_to_async(Cluster.objects.create)(
        name="other", bootstrap_servers="127.0.0.1:1"
    )
    user = await database_sync_to_async(make_user)("vince", "viewer")
    nobody = await database_sync_to_async(make_user)("nora", None)
    for path, who, code in [
        (f"/ws/clusters/local/spark-loads/{load.id + 1}/", user, 4404),
        (f"/ws/clusters/{other.name}/spark-loads/{load.id}/", user, 4404),  # not its cluster
        (f"/ws/clusters/local/spark-loads/{load.id}/", nobody, 4403),
        (f"/ws/clusters/local/spark-loads/{load.id}/", AnonymousUser(), 4403),
    ]:
        connection = communicator(path, who)
        connected, close_code = await connection.connect()
        assert (connected, close_code) == (False, code), path


async def test_loads_list_gets_the_changing_loads_then_every_load_pushed(
    kafka_cluster, channel_layer_on_redis
):
    from dashboard.core.live_updates import publish_load as publish
    from dashboard.core.models import SparkLoad

    old = await database_sync_to_async(new_load)(kafka_cluster, status="succeeded")
    active = await database_sync_to_async(new_load)(kafka_cluster, status="running")
    user = await database_sync_to_async(make_user)("lisa", "viewer")
    connection = communicator("/ws/clusters/local/spark-loads/", user)
    assert (await connection.connect())[0]
    first = await connection.receive_json_from(timeout=10)
    assert (first["kind"], first["data"]["id"]) == ("spark_load", active.id)  # not the old one
    assert await connection.receive_nothing(timeout=0.5)

    def progress_then_new_load():
        SparkLoad.objects.filter(pk=active.id).update(
            progress=0.5, tasks_done=3, tasks_total=6, stages_done=1, stages_total=3
        )
        active.refresh_from_db()
        publish(active)
        publish(new_load(kafka_cluster))

    await database_sync_to_async(progress_then_new_load)()
    pushed = (await connection.receive_json_from(timeout=10))["data"]
    assert (pushed["id"], pushed["progress_text"]) == (active.id, "stage 2 of 3, tasks 3/6")
    pushed = (await connection.receive_json_from(timeout=10))["data"]
    assert pushed["id"] > active.id and pushed["status"] == "queued" and old.id != pushed["id"]
    await connection.disconnect()
