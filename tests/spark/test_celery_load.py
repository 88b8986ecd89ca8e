"""The Celery task behind the UI's Spark loads: spark-submit, progress, result, log, cancel."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest
from asgiref.sync import async_to_sync

from spark_jobs.launcher import group_alive
from tests.web.conftest import channel_layer_on_redis, redis_server  # noqa: F401 - fixtures

from .conftest import produce_confluent
from .helpers import parquet_records, topic_records


@pytest.fixture
def spark_settings(settings, tmp_path, channel_layer_on_redis):  # noqa: F811
    settings.VAR_DIR = tmp_path / "var"
    settings.SPARK_MASTER = "local[2]"
    return settings


def new_load(broker, topic, output, **fields):
    from dashboard.core.models import Cluster, SparkLoad

    cluster, _ = Cluster.objects.get_or_create(
        name="local", defaults={"bootstrap_servers": broker.bootstrap}
    )
    return SparkLoad.objects.create(cluster=cluster, topic=topic, output=str(output), **fields)


def drain(layer, channel) -> list[dict]:
    async def receive_all():
        found = []
        while True:
            try:
                found.append(await asyncio.wait_for(layer.receive(channel), 1))
            except TimeoutError:
                return found

    return async_to_sync(receive_all)()


def test_export_load_runs_to_the_end_with_progress_and_result(
    transactional_db, spark_settings, broker, client, make_topic, tmp_path
):
    from channels.layers import get_channel_layer

    from dashboard.core.live_updates import spark_load_group
    from tasks.spark import run_spark_load

    topic = make_topic(3)
    produce_confluent(broker.bootstrap, topic, [(b"%d" % i, b"v%d" % i) for i in range(3_000)])
    load = new_load(broker, topic, tmp_path / "out")
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(spark_load_group(load.id), channel)

    assert run_spark_load(load.id)["status"] == "succeeded"

    load.refresh_from_db()
    assert load.status == "succeeded" and load.progress == 1.0
    assert load.result["rows"] == 3_000 and load.result["bytes"] > 0
    assert {p: (r["start"], r["end"]) for p, r in load.result["partitions"].items()} == {
        str(p): (0, end) for p, end in client.admin.high_watermarks(topic).items()
    }
    assert load.result["duration_s"] > 0
    assert parquet_records(tmp_path / "out") == topic_records(client, topic)
    log_text = open(load.log_path).read()
    assert "BROKERD_RESULT" in log_text and "SparkContext" in log_text

    pushed = [m["payload"]["data"] for m in drain(layer, channel)]
    assert pushed[0]["status"] == "running"
    assert any(0 < m["progress"] < 1 for m in pushed), "no progress was pushed"
    assert pushed[-1]["status"] == "succeeded" and pushed[-1]["progress"] == 1.0
    # Stages and tasks as the job's status tracker saw them: one stage of 3 tasks here.
    assert (load.stages_done, load.stages_total, load.tasks_done, load.tasks_total) == (1, 1, 3, 3)
    assert pushed[-1]["progress_text"] == "stage 1 of 1, tasks 3/3"
    assert all(m["stages_total"] == 1 for m in pushed if m["tasks_total"])


def test_cancel_kills_the_spark_job(transactional_db, spark_settings, broker, make_topic, tmp_path):
    from dashboard.core.spark_loads import cancel_load
    from tasks.spark import run_spark_load

    topic = make_topic(1)
    produce_confluent(broker.bootstrap, topic, [(None, b"x")] * 10)
    load = new_load(broker, topic, tmp_path / "out")
    finished = {}
    runner = threading.Thread(target=lambda: finished.update(run_spark_load(load.id)))
    runner.start()
    deadline = time.monotonic() + 60
    while not (load.result or {}).get("pid"):
        assert time.monotonic() < deadline, "spark-submit never started"
        time.sleep(0.2)
        load.refresh_from_db()
    pid = load.result["pid"]
    # Cancel once the JVM runs: spark-submit's scripts end by exec'ing it in the same process.
    while not os.readlink(f"/proc/{pid}/exe").endswith("/java"):
        assert time.monotonic() < deadline, "spark-submit never started its JVM"
        time.sleep(0.1)
    assert group_alive(pid)
    assert cancel_load(load)
    runner.join(60)
    assert not runner.is_alive()
    load.refresh_from_db()
    assert finished["status"] == load.status == "cancelled"
    assert load.result["cancelled"] is True and load.result["pid"] == pid
    assert not group_alive(pid), "processes of the Spark job survived the cancel"
    assert not cancel_load(load)  # a finished load cannot be cancelled again
