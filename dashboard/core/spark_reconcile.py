"""Loads whose Celery worker died: found, ended with a clear message, their Spark job stopped.

A running load's task records where it runs (`SparkLoad.runner`: host, pid and that process's
start time, then spark-submit's process group) and refreshes `heartbeat_at` every few seconds
(tasks/spark.py). A load still `running` or `cancelling` is dead when

- its worker process ran on this host and is gone (pid absent, or reused by another process),
- or, wherever it ran, no heartbeat came for SPARK_HEARTBEAT_STALE_S (default 60 s).

Such a load ends `failed` (`cancelled` if a cancel was pending) with `result.error` saying so,
and a spark-submit it left behind on this host is killed: orphaned, it would go on writing and
hold the output's lock, blocking the next load into the same path. Beat runs
tasks/spark_reconcile.py's `reconcile_spark_loads` every SPARK_RECONCILE_S; the load's task
itself, the pages and the API also reconcile before they read or launch loads, so nobody sees a
dead load as running.
"""

from __future__ import annotations

import datetime
import logging
import os
import socket

from django.conf import settings
from django.utils import timezone

from spark_jobs import launcher

from .live_updates import publish_load
from .models import LoadStatus, SparkLoad

log = logging.getLogger(__name__)

HEARTBEAT_STALE_S = 60.0
RUNNING_STATUSES = (LoadStatus.RUNNING, LoadStatus.CANCELLING)


def heartbeat_stale_s() -> float:
    configured = getattr(settings, "SPARK_HEARTBEAT_STALE_S", None)
    return float(configured or os.environ.get("SPARK_HEARTBEAT_STALE_S") or HEARTBEAT_STALE_S)


def why_dead(load: SparkLoad, now: datetime.datetime) -> str | None:
    """Why this running load's worker is known to be gone, or None while it may be alive."""
    runner = load.runner or {}
    where = f"pid {runner.get('pid')} on {runner.get('host')}"
    if runner.get("host") == socket.gethostname() and runner.get("pid"):
        started = launcher.start_ticks(int(runner["pid"]))
        if started is None or (runner.get("started") and started != runner["started"]):
            return f"the Celery worker process running it ({where}) is gone"
    last_sign = load.heartbeat_at or load.started_at
    if last_sign is not None:
        silent_s = (now - last_sign).total_seconds()
        if silent_s > heartbeat_stale_s():
            return f"its Celery worker ({where}) sent no heartbeat for {silent_s:.0f} s"
    return None


def stop_orphaned_job(load: SparkLoad) -> bool:
    """Kill the spark-submit process group a dead worker left running on this host."""
    runner = load.runner or {}
    pgid = runner.get("job_pid")
    if not pgid or runner.get("host") != socket.gethostname() or not launcher.group_alive(pgid):
        return False
    started = launcher.start_ticks(pgid)
    if started is not None and runner.get("job_started") and started != runner["job_started"]:
        return False  # the pid is another process's now (a live group keeps its id)
    launcher.stop_group(pgid)
    return True


def reconcile_loads() -> list[int]:
    """End every running load whose worker is gone; the ids of the loads ended."""
    ended = []
    now = timezone.now()
    for load in SparkLoad.objects.filter(status__in=RUNNING_STATUSES).select_related("cluster"):
        reason = why_dead(load, now)
        if reason is None:
            continue
        stopped = stop_orphaned_job(load)
        cancelling = load.status == LoadStatus.CANCELLING
        message = f"the load was lost: {reason}" + (
            "; its Spark job was stopped" if stopped else ""
        )
        result = {**(load.result or {}), "error": message, "worker_lost": True}
        if cancelling:
            result["cancelled"] = True
        # Conditional: the task may have ended the load (or beaten) since it was read.
        changed = SparkLoad.objects.filter(
            pk=load.pk, status=load.status, heartbeat_at=load.heartbeat_at
        ).update(
            status=LoadStatus.CANCELLED if cancelling else LoadStatus.FAILED,
            result=result,
            finished_at=now,
        )
        if changed:
            log.warning("spark load %s: %s", load.pk, message)
            load.refresh_from_db()
            publish_load(load)
            ended.append(load.pk)
    return ended
