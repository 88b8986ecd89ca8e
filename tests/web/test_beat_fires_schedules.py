"""A maintenance schedule fired by a real `celery beat` (django-celery-beat's DatabaseScheduler
on the live dashboard's database, Redis as broker) and run by a real worker against a real
broker: each firing is a MaintenanceRun with what the broker did."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import requests
from kafka.admin import KafkaAdminClient, NewTopic

from tests.harness import ROOT

from .conftest import _manage, wait_until
from .test_tasks import produce_keys

EVERY_SECONDS = 2
CREATE_SCHEDULE = """
from dashboard.core.models import Cluster, MaintenanceSchedule
from dashboard.core import maintenance
schedule = MaintenanceSchedule.objects.create(
    cluster=Cluster.objects.get(name="local"), action="retention", topic={topic!r}
)
maintenance.sync_periodic_task(schedule, {every})
print(schedule.pk)
"""


def make_topic_with_expired_segments(bootstrap: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    configs = {"segment.bytes": "1024", "retention.bytes": "1024"}
    admin.create_topics([NewTopic(topic, 1, 1, topic_configs=configs)])
    admin.close()
    produce_keys(bootstrap, topic, 40)


def runs_of(database: str, schedule_id: int) -> list[tuple[str, dict]]:
    with sqlite3.connect(database) as db:
        rows = db.execute(
            "SELECT status, result FROM core_maintenancerun WHERE schedule_id = ? ORDER BY id",
            (schedule_id,),
        ).fetchall()
    return [(status, json.loads(result or "{}")) for status, result in rows]


def finished_runs(database: str, schedule_id: int) -> list[tuple[str, dict]]:
    return [r for r in runs_of(database, schedule_id) if r[0] in ("succeeded", "failed")]


def test_beat_fires_an_interval_schedule_and_the_runs_are_recorded(
    live_dashboard, celery_worker, topic_name
):
    make_topic_with_expired_segments(live_dashboard.broker.bootstrap, topic_name)
    env = live_dashboard.env
    code = CREATE_SCHEDULE.format(topic=topic_name, every=EVERY_SECONDS)
    schedule_id = int(_manage(env, "shell", "-c", code).split()[-1])
    database = env["DATABASE_URL"].removeprefix("sqlite:///")

    log_path = live_dashboard.log_path.with_name(f"celery-beat-{schedule_id}.log")
    with open(log_path, "ab") as log:
        beat = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "tasks", "beat", "-l", "info"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_until(lambda: len(finished_runs(database, schedule_id)) >= 2, 60, 0.5)
        except AssertionError:
            raise AssertionError(log_path.read_text() + celery_worker.read_text()[-5000:]) from None
        finally:
            beat.terminate()
            beat.wait(15)
    assert "DatabaseScheduler" in log_path.read_text()

    runs = finished_runs(database, schedule_id)
    assert [status for status, _ in runs[:2]] == ["succeeded", "succeeded"], runs
    # The first firing found segments past retention.bytes; the broker deleted them.
    first = runs[0][1]
    assert first["totals"]["segments_deleted"] > 0 and first["partitions"][0]["topic"] == topic_name

    # Beat counted its firings on the PeriodicTask; the API shows them.
    answer = requests.get(
        f"{live_dashboard.url}/api/v3/clusters/local/maintenance-schedules/{schedule_id}",
        headers={"Authorization": f"Token {live_dashboard.token}"},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    schedule = answer.json()
    assert schedule["every_seconds"] == EVERY_SECONDS and schedule["total_run_count"] >= 2
    assert schedule["last_run_at"] is not None
    deleted = requests.delete(
        answer.json()["metadata"]["self"],
        headers={"Authorization": f"Token {live_dashboard.token}"},
        timeout=10,
    )
    assert deleted.status_code == 204
