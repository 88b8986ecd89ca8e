"""The Spark loads REST API: launch (queued on a real Celery broker, Redis), validation with
4xx messages, roles, cancel, log tail, pagination, audit. Running the jobs is covered by
tests/spark/test_celery_load.py and the browser test."""

from __future__ import annotations

import json

import pytest
import redis

from tasks.spark import job_arguments

BASE = "/api/v3/clusters/local/spark-loads"


@pytest.fixture
def celery_queue(settings, tmp_path, redis_server, channel_layer_on_redis):
    """Celery's producer and the data root on this test's redis-server and tmp dir; yields a
    Redis client to look at the queue. The queue is in a Redis database of its own: the live
    dashboard's worker (a session fixture) consumes the default one's, and would take the
    loads as soon as they are queued whenever it is up."""
    from dashboard.celery import app

    settings.VAR_DIR = tmp_path / "var"
    settings.SPARK_DATA_ROOT = str(tmp_path / "data")
    queue_url = redis_server.rsplit("/", 1)[0] + "/5"
    connection = redis.Redis.from_url(queue_url)
    connection.delete("celery")
    previous = app.conf.broker_url
    app.conf.broker_url = queue_url
    app._pool = None  # the producer pool was made for the previous URL
    try:
        yield connection
    finally:
        connection.delete("celery")
        app.conf.broker_url = previous
        app._pool = None


def queued_load_ids(connection) -> list[int]:
    """The load ids of run_spark_load messages waiting in Celery's queue."""
    ids = []
    for raw in connection.lrange("celery", 0, -1):
        message = json.loads(raw)
        if message["headers"]["task"] == "tasks.spark.run_spark_load":
            ids.append(int(json.loads(message["headers"]["argsrepr"])[0]))
    return ids


def make_topic(broker, name: str, partitions: int = 2) -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    admin.close()
    return name


def test_operator_launches_an_export_and_reads_it_back(
    kafka_cluster, broker, operator_api, celery_queue, topic_name, tmp_path
):
    from dashboard.core.models import AuditLog, SparkLoad

    make_topic(broker, topic_name)
    response = operator_api.post(
        BASE, {"load_type": "export", "topic_name": topic_name, "output_path": "exports/a"},
        format="json",
    )  # fmt: skip
    assert response.status_code == 202, response.json()
    body = response.json()
    load_id = body["load_id"]
    assert body["kind"] == "KafkaSparkLoad"
    assert body["metadata"]["self"] == f"http://testserver{BASE}/{load_id}"
    assert response["Location"] == body["metadata"]["self"]
    assert body["status"] == "queued" and body["range"] == {"mode": "incremental"}
    assert body["output_path"] == str(tmp_path / "data" / "exports" / "a")
    assert body["progress"] == {
        "fraction": 0.0,
        "percent": 0,
        "tasks_done": 0,
        "tasks_total": 0,
        "stages_done": 0,
        "stages_total": 0,
        "text": "",
    }
    assert body["requested_by"] == "otto"
    assert queued_load_ids(celery_queue) == [load_id]  # really handed to Celery

    load = SparkLoad.objects.get(pk=load_id)
    job, arguments = job_arguments(load)
    assert job == "load_topic" and "--from-timestamp" not in arguments
    entry = AuditLog.objects.get(action="spark_load.launch")
    assert (entry.username, entry.target, entry.succeeded) == ("otto", topic_name, True)

    detail = operator_api.get(f"{BASE}/{load_id}").json()
    assert detail["status"] == "queued" and detail["topic_name"] == topic_name
    assert detail["log"]["related"].endswith(f"{BASE}/{load_id}/log")
    listing = operator_api.get(BASE).json()
    assert listing["kind"] == "KafkaSparkLoadList"
    assert [d["load_id"] for d in listing["data"]] == [load_id]


def test_export_from_a_timestamp_and_an_ingest(
    kafka_cluster, broker, operator_api, celery_queue, topic_name, tmp_path
):
    from dashboard.core.models import SparkLoad

    make_topic(broker, topic_name)
    response = operator_api.post(
        BASE,
        {"load_type": "export", "topic_name": topic_name, "output_path": "again",
         "from_timestamp": 1_700_000_000_000, "records_per_task": 500},
        format="json",
    )  # fmt: skip
    assert response.status_code == 202, response.json()
    load = SparkLoad.objects.get(pk=response.json()["load_id"])
    assert load.range == {"start": {"timestamp": 1_700_000_000_000}, "records_per_task": 500}
    assert response.json()["range"] == {
        "mode": "from_timestamp",
        "from_timestamp": 1_700_000_000_000,
    }
    assert response.json()["options"] == {"records_per_task": 500}
    arguments = job_arguments(load)[1]
    assert arguments[-4:] == [
        "--from-timestamp",
        "1700000000000",
        "--max-records-per-partition",
        "500",
    ]

    (tmp_path / "data" / "in").mkdir(parents=True)
    (tmp_path / "data" / "in" / "rows.csv").write_text("id,payload\n1,a\n")
    response = operator_api.post(
        BASE,
        {"load_type": "ingest", "topic_name": topic_name, "input_path": "in/rows.csv",
         "format": "csv", "key_column": "id", "value_column": "payload"},
        format="json",
    )  # fmt: skip
    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["load_type"] == "ingest" and body["input_path"].endswith("in/rows.csv")
    job, arguments = job_arguments(SparkLoad.objects.get(pk=body["load_id"]))
    assert job == "ingest" and ["--format", "csv"] == arguments[-6:-4]
    assert len(queued_load_ids(celery_queue)) == 2


@pytest.mark.parametrize(
    "body, field",
    [
        ({"load_type": "export", "topic_name": "t"}, "output_path"),
        ({"load_type": "export", "topic_name": "t", "output_path": "/etc/cron.d"}, "output_path"),
        ({"load_type": "export", "topic_name": "t", "output_path": "../../escape"}, "output_path"),
        ({"load_type": "export", "topic_name": "t", "output_path": "."}, "output_path"),
        ({"load_type": "export", "topic_name": "t", "output_path": "s3a://b/x"}, "output_path"),
        (
            {"load_type": "export", "topic_name": "t", "output_path": "x", "from_timestamp": -1},
            "from_timestamp",
        ),
        ({"load_type": "export", "topic_name": "t", "output_path": "x", "format": "csv"}, "format"),
        (
            {"load_type": "export", "topic_name": "t", "output_path": "x", "records_per_task": 0},
            "records_per_task",
        ),
        ({"load_type": "ingest", "topic_name": "t", "input_path": "missing.csv"}, "input_path"),
        ({"load_type": "ingest", "topic_name": "t", "output_path": "x"}, "output_path"),
        ({"load_type": "copy", "topic_name": "t", "output_path": "x"}, "load_type"),
        ({"load_type": "export", "topic_name": "bad name", "output_path": "x"}, "topic_name"),
    ],
)
def test_bad_launches_get_400_with_the_field(
    kafka_cluster, operator_api, celery_queue, body, field
):
    from dashboard.core.models import SparkLoad

    response = operator_api.post(BASE, body, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["message"] and field in response.json()["errors"]
    assert not SparkLoad.objects.exists() and queued_load_ids(celery_queue) == []


def test_unknown_topic_and_cluster_are_404(kafka_cluster, operator_api, celery_queue):
    body = {"load_type": "export", "topic_name": "no-such-topic-here", "output_path": "x"}
    response = operator_api.post(BASE, body, format="json")
    assert response.status_code == 404 and "no-such-topic-here" in response.json()["message"]
    assert operator_api.get("/api/v3/clusters/nope/spark-loads").status_code == 404
    assert operator_api.get(f"{BASE}/12345").status_code == 404
    assert operator_api.post(f"{BASE}/12345:cancel").status_code == 404


def test_viewer_reads_but_cannot_launch_or_cancel(
    kafka_cluster, broker, viewer_api, operator_api, celery_queue, topic_name
):
    from dashboard.core.models import SparkLoad

    make_topic(broker, topic_name)
    body = {"load_type": "export", "topic_name": topic_name, "output_path": "v"}
    denied = viewer_api.post(BASE, body, format="json")
    assert denied.status_code == 403 and "role" in denied.json()["message"]
    assert not SparkLoad.objects.exists()
    load_id = operator_api.post(BASE, body, format="json").json()["load_id"]
    assert viewer_api.get(f"{BASE}/{load_id}").status_code == 200
    assert viewer_api.get(f"{BASE}/{load_id}/log").status_code == 200
    assert viewer_api.post(f"{BASE}/{load_id}:cancel").status_code == 403
    assert SparkLoad.objects.get(pk=load_id).status == "queued"
    from rest_framework.test import APIClient

    assert APIClient().get(BASE).status_code == 401


def test_cancel_a_queued_load_then_again(
    kafka_cluster, broker, operator_api, celery_queue, topic_name
):
    from dashboard.core.models import AuditLog

    make_topic(broker, topic_name)
    body = {"load_type": "export", "topic_name": topic_name, "output_path": "c"}
    load_id = operator_api.post(BASE, body, format="json").json()["load_id"]
    response = operator_api.post(f"{BASE}/{load_id}:cancel")
    assert response.status_code == 202
    assert response.json()["status"] == "cancelled"
    assert response.json()["result"]["cancelled"] is True
    again = operator_api.post(f"{BASE}/{load_id}:cancel")
    assert again.status_code == 409 and "already ended" in again.json()["message"]
    outcomes = list(
        AuditLog.objects.filter(action="spark_load.cancel")
        .order_by("timestamp")
        .values_list("succeeded", flat=True)
    )
    assert outcomes == [True, False]

    # The queued task, when a worker takes it, finds the load cancelled and does nothing.
    from tasks.spark import run_spark_load

    assert run_spark_load(load_id)["status"] == "cancelled"


def test_log_tail_and_pagination(kafka_cluster, operator_api, celery_queue, tmp_path):
    from dashboard.core.models import SparkLoad

    log = tmp_path / "load.log"
    log.write_text("".join(f"line {i}\n" for i in range(150)))
    loads = [
        SparkLoad.objects.create(cluster=kafka_cluster, topic="t", output=f"/o/{i}")
        for i in range(3)
    ]
    SparkLoad.objects.filter(pk=loads[0].pk).update(log_path=str(log), status="running")
    tail = operator_api.get(f"{BASE}/{loads[0].pk}/log?lines=10").json()
    assert tail["kind"] == "KafkaSparkLoadLog" and tail["active"] is True
    assert tail["lines"] == [f"line {i}" for i in range(140, 150)] and tail["truncated"]
    assert operator_api.get(f"{BASE}/{loads[1].pk}/log").json()["lines"] == []
    assert operator_api.get(f"{BASE}/{loads[0].pk}/log?lines=0").status_code == 400

    first = operator_api.get(f"{BASE}?page_size=2").json()
    assert [d["load_id"] for d in first["data"]] == [loads[2].pk, loads[1].pk]
    second = operator_api.get(first["metadata"]["next"]).json()
    assert [d["load_id"] for d in second["data"]] == [loads[0].pk]
    assert second["metadata"]["next"] is None
    assert operator_api.get(f"{BASE}?page_size=0").status_code == 400
