"""Loads whose Celery worker died are ended (tasks/spark_reconcile.py), with real processes
standing in for the worker and for spark-submit's process group: a live worker's load is left
alone; a dead local worker's load fails and the job it left running is killed; a worker on
another host is judged by its heartbeat; a pending cancel ends cancelled; the list's Channels
group hears of it. The real thing (a Celery worker killed mid-load) is in
test_spark_worker_lost.py."""

from __future__ import annotations

import datetime
import os
import signal
import socket
import subprocess
import sys

import pytest
from asgiref.sync import async_to_sync

from spark_jobs.launcher import group_alive, start_ticks
from tests.spark.test_celery_load import drain

pytestmark = pytest.mark.django_db(transaction=True)

# A process group like spark-submit's: a leader and a child of its own.
JOB_SCRIPT = "import subprocess, time; subprocess.Popen(['sleep', '300']); time.sleep(300)"


@pytest.fixture
def processes():
    started: list[subprocess.Popen] = []

    def start(*argv: str) -> subprocess.Popen:
        process = subprocess.Popen(argv, start_new_session=True)
        started.append(process)
        return process

    yield start
    for process in started:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(10)


def running_load(cluster, *, status="running", host=None, worker=None, job=None, beat_age_s=0):
    from django.utils import timezone

    from dashboard.core.models import SparkLoad

    runner = {"host": host or socket.gethostname()}
    if worker is not None:
        runner.update(pid=worker.pid, started=start_ticks(worker.pid))
    if job is not None:
        runner.update(job_pid=job.pid, job_started=start_ticks(job.pid))
    beat = timezone.now() - datetime.timedelta(seconds=beat_age_s)
    return SparkLoad.objects.create(
        cluster=cluster,
        topic="orders",
        output="/o",
        status=status,
        runner=runner,
        started_at=beat,
        heartbeat_at=beat,
        result={"pid": job.pid} if job else {},
    )


def test_a_dead_local_worker_fails_its_load_and_its_orphaned_job_is_killed(
    kafka_cluster, channel_layer_on_redis, processes
):
    from channels.layers import get_channel_layer

    from dashboard.core.live_updates import spark_loads_group
    from dashboard.core.spark_reconcile import reconcile_loads

    worker = processes("sleep", "300")
    job = processes(sys.executable, "-c", JOB_SCRIPT)
    load = running_load(kafka_cluster, worker=worker, job=job)
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(spark_loads_group("local"), channel)

    assert reconcile_loads() == []  # the worker lives: nothing to do
    load.refresh_from_db()
    assert load.status == "running" and group_alive(job.pid)

    worker.kill()
    worker.wait(10)
    assert reconcile_loads() == [load.id]
    load.refresh_from_db()
    assert load.status == "failed" and load.finished_at is not None
    assert load.result["worker_lost"] is True and load.result["pid"] == job.pid
    error = load.result["error"]
    assert f"pid {worker.pid} on {socket.gethostname()}" in error and "is gone" in error
    assert "its Spark job was stopped" in error
    assert not group_alive(job.pid), "the orphaned job survived"
    pushed = [m["payload"]["data"] for m in drain(layer, channel)]
    assert [(m["id"], m["status"]) for m in pushed] == [(load.id, "failed")]
    assert reconcile_loads() == []  # ended once


def test_a_reused_pid_is_not_the_worker(kafka_cluster, processes):
    from dashboard.core.spark_reconcile import reconcile_loads

    worker = processes("sleep", "300")
    load = running_load(kafka_cluster, worker=worker)
    load.runner["started"] -= 1  # the pid now names a process that started later
    load.save()
    assert reconcile_loads() == [load.id]


def test_a_remote_worker_is_judged_by_its_heartbeat(kafka_cluster, settings, processes):
    from dashboard.core.models import SparkLoad
    from tasks.spark_reconcile import RECONCILE_TASK, reconcile_spark_loads

    settings.SPARK_HEARTBEAT_STALE_S = 30
    worker = processes("sleep", "300")  # a pid here means nothing for another host
    elsewhere = "worker-7.elsewhere.example"
    fresh = running_load(kafka_cluster, host=elsewhere, worker=worker, beat_age_s=5)
    silent = running_load(kafka_cluster, host=elsewhere, worker=worker, beat_age_s=120)
    cancelling = running_load(kafka_cluster, status="cancelling", host=elsewhere, beat_age_s=120)
    ended = running_load(kafka_cluster, status="succeeded", host=elsewhere, beat_age_s=900)

    # What beat runs (settings.CELERY_BEAT_SCHEDULE), here through Celery's own apply.
    assert settings.CELERY_BEAT_SCHEDULE["reconcile-spark-loads"]["task"] == RECONCILE_TASK
    assert sorted(reconcile_spark_loads.apply().get()) == [silent.id, cancelling.id]

    statuses = dict(SparkLoad.objects.values_list("pk", "status"))
    assert statuses == {
        fresh.id: "running",
        silent.id: "failed",
        cancelling.id: "cancelled",
        ended.id: "succeeded",
    }
    silent.refresh_from_db()
    assert (
        f"its Celery worker (pid {worker.pid} on {elsewhere}) sent no heartbeat for"
        in (silent.result["error"])
    )
    assert "Spark job was stopped" not in silent.result["error"]  # not ours to kill
    cancelling.refresh_from_db()
    assert cancelling.result["cancelled"] is True
