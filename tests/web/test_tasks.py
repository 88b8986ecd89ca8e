"""Celery's tasks against a running broker: the task functions called directly here (the
browser test drives them through a real worker). Celery asks, the broker acts: compaction
and retention are done by the broker's admin API and reported back into MaintenanceRun;
runs are pushed to the maintenance page over Channels on the real Redis layer; history
samples record lag and throughput; schedules are django-celery-beat PeriodicTasks."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from channels.db import database_sync_to_async
from kafka import KafkaProducer

from dashboard.core.maintenance import (
    SCHEDULE_TASK,
    create_run,
    delete_schedule,
    sync_periodic_task,
)
from dashboard.core.models import (
    HistorySample,
    MaintenanceRun,
    MaintenanceSchedule,
    RunStatus,
)
from tasks import history, maintenance

from .conftest import make_user, register
from .test_groups_api import commit
from .test_live import communicator
from .test_live_groups import create_topic

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def quiet_broker(zookeeper, tmp_path_factory):
    """A broker whose cleaner thread is off, so only the runs under test compact."""
    from tests.conftest import new_broker

    process = new_broker(
        zookeeper, tmp_path_factory, num_partitions="1", log_cleaner_enable="false"
    )
    process.start()
    yield process
    process.kill()


@pytest.fixture
def quiet_cluster(db, quiet_broker):
    return register(quiet_broker)


def produce_keys(bootstrap: str, topic: str, count: int, keys: int = 3) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, batch_size=1)
    for i in range(count):
        producer.send(topic, b"value-%d" % i, key=b"key-%d" % (i % keys), partition=0)
        producer.flush()  # one batch per record: segments roll at segment.bytes
    producer.close()


async def next_run(connection, predicate, timeout: float = 15.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        message = await connection.receive_json_from(timeout=max(0.1, deadline - time.monotonic()))
        if message["kind"] == "run" and predicate(message["data"]):
            return message["data"]


async def test_compaction_run_is_done_by_the_broker_and_pushed_live(
    quiet_cluster, quiet_broker, channel_layer_on_redis, topic_name
):
    configs = {"cleanup.policy": "compact", "segment.bytes": "1024"}
    await asyncio.to_thread(create_topic, quiet_broker.bootstrap, topic_name, 1, configs)
    await asyncio.to_thread(produce_keys, quiet_broker.bootstrap, topic_name, 60)
    user = await database_sync_to_async(make_user)("mona", "viewer")
    connection = communicator("/ws/clusters/local/maintenance/", user)
    assert (await connection.connect())[0]

    run = await database_sync_to_async(create_run)(quiet_cluster, "compaction", topic_name)
    pending = await next_run(connection, lambda d: d["id"] == run.pk)
    assert pending["status"] == "pending"
    outcome = await asyncio.to_thread(maintenance.run_maintenance, run.pk)
    assert outcome == {"run_id": run.pk, "status": "succeeded"}
    running = await next_run(connection, lambda d: d["id"] == run.pk)
    assert running["status"] == "running" and running["started_ms"]
    done = await next_run(connection, lambda d: d["id"] == run.pk)
    assert done["status"] == "succeeded" and "records removed" in done["summary"]
    await connection.disconnect()

    # A page that joins after the run ended (rendered while it was pending) is sent it at once.
    late = communicator("/ws/clusters/local/maintenance/", user)
    assert (await late.connect())[0]
    caught_up = await next_run(late, lambda d: d["id"] == run.pk)
    assert caught_up["status"] == "succeeded" and caught_up["summary"] == done["summary"]
    await late.disconnect()

    stored = await database_sync_to_async(MaintenanceRun.objects.get)(pk=run.pk)
    (report,) = stored.result["partitions"]
    assert (report["topic"], report["partition"]) == (topic_name, 0)
    # 60 records over 3 keys: every rolled segment's older duplicates go.
    assert report["records_removed"] > 40 and report["records_kept"] >= 3
    assert stored.result["totals"]["records_removed"] == report["records_removed"]
    assert list(stored.result["brokers"]) == ["1"]


def test_retention_run_deletes_segments_and_policy_skips(quiet_cluster, quiet_broker, topic_name):
    configs = {"segment.bytes": "1024", "retention.bytes": "1024"}
    create_topic(quiet_broker.bootstrap, topic_name, 1, configs)
    produce_keys(quiet_broker.bootstrap, topic_name, 40)

    run = create_run(quiet_cluster, "retention", topic_name, 0)
    maintenance.run_maintenance(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED, run.error
    (report,) = run.result["partitions"]
    assert report["segments_deleted"] > 0 and report["log_start_offset"] > 0
    assert run.result["totals"]["bytes_freed"] == report["bytes_freed"] > 0

    # Compaction of a `delete` topic: the topic's policy excludes it, reported as skipped.
    skipped = create_run(quiet_cluster, "compaction", topic_name)
    maintenance.run_maintenance(skipped.pk)
    skipped.refresh_from_db()
    assert skipped.status == RunStatus.SUCCEEDED
    assert [s["topic"] for s in skipped.result["skipped"]] == [topic_name]

    # An unknown topic fails the run, with the reason stored on it.
    failed = create_run(quiet_cluster, "retention", f"{topic_name}-missing")
    maintenance.run_maintenance(failed.pk)
    failed.refresh_from_db()
    assert failed.status == RunStatus.FAILED and "not found" in failed.error


def test_schedules_are_periodic_tasks_and_fire_runs(quiet_cluster, quiet_broker, topic_name):
    from django_celery_beat.models import PeriodicTask

    create_topic(quiet_broker.bootstrap, topic_name, 1, {"cleanup.policy": "compact"})
    schedule = MaintenanceSchedule.objects.create(
        cluster=quiet_cluster, action="compaction", topic=topic_name
    )
    sync_periodic_task(schedule, 60)
    task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
    assert (task.task, json.loads(task.args), task.interval.every) == (
        SCHEDULE_TASK,
        [schedule.pk],
        60,
    )
    assert task.enabled
    schedule.enabled = False
    schedule.save()
    sync_periodic_task(schedule)
    task.refresh_from_db()
    assert not task.enabled and task.interval.every == 60
    assert maintenance.run_schedule(schedule.pk) is None  # disabled: nothing runs

    schedule.enabled = True
    schedule.save()
    assert maintenance.run_schedule(schedule.pk)["status"] == "succeeded"
    (run,) = MaintenanceRun.objects.filter(schedule=schedule)
    assert run.action == "compaction" and run.topic == topic_name
    delete_schedule(schedule)
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()


def test_history_records_lag_and_throughput(
    quiet_cluster, quiet_broker, topic_name, settings, redis_server
):
    settings.REDIS_URL = redis_server
    create_topic(quiet_broker.bootstrap, topic_name, 1)
    produce_keys(quiet_broker.bootstrap, topic_name, 10)
    group = f"h-{topic_name}"
    commit(quiet_broker, group, {(topic_name, 0): 4})

    history.record_history()
    lag = HistorySample.objects.get(kind="lag", group=group)
    assert (lag.topic, lag.partition, lag.value) == (topic_name, 0, 6)
    produce_keys(quiet_broker.bootstrap, topic_name, 5)
    commit(quiet_broker, group, {(topic_name, 0): 15})
    history.record_history()
    values = list(
        HistorySample.objects.filter(kind="lag", group=group)
        .order_by("timestamp")
        .values_list("value", flat=True)  # fmt: skip
    )
    assert values == [6, 0]
    throughput = HistorySample.objects.get(kind="throughput", topic=topic_name)
    assert throughput.value > 0  # 5 records since the previous round
