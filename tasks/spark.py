"""Spark loads launched from the platform: a Celery task runs spark-submit for a SparkLoad.

It follows the job's progress lines (spark_jobs/session.py), keeps the whole log under
VAR_DIR/spark-logs/, records the result (rows, bytes, offset ranges per partition, duration)
on the SparkLoad, and pushes every change to the load's Channels groups
(dashboard/core/live_updates.py). A load cancelled while running is marked `cancelling`
(dashboard/core/spark_loads.py); the task notices within half a second and kills spark-submit's
process group, so the Spark job really stops, and the load ends `cancelled`.

A SparkLoad's `range` (JSON) for an export (topic -> Parquet at `output`):
    {}                                   incremental: from where the last load into `output` ended
    {"start": {"timestamp": ms}}         reload from a point in time (replacing what was loaded)
    either with "records_per_task": n    split partition ranges into Spark tasks of n records
and for an import (files at `output` -> topic):
    {"format": "csv"|"json"|"parquet", "key_column": "id", "value_column": "payload"}

Settings (or environment): SPARK_MASTER (default local[*]), SPARK_SUBMIT (default the
spark-submit next to this interpreter), SPARK_CONF (dict of --conf values).

A secured cluster's settings reach the job as a Kafka client .properties
(`--command-config`), written with its PEM stores into a private directory under VAR_DIR
for the job's lifetime and removed when it ends: no password on a command line.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from dashboard.core.client_properties import write_client_properties
from dashboard.core.live_updates import publish_load
from dashboard.core.models import ACTIVE_LOAD_STATUSES, LoadStatus, SparkLoad
from dashboard.core.spark_loads import RUN_TASK
from dashboard.core.spark_reconcile import reconcile_loads
from spark_jobs import launcher

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.5
HEARTBEAT_EVERY_S = 5.0  # how often a running load's task says it is alive (spark_reconcile)


def job_arguments(load: SparkLoad) -> tuple[str, list[str]]:
    """Which job, with which arguments, a SparkLoad asks for (ValueError if it cannot)."""
    spec = load.range or {}
    common = ["--bootstrap-servers", load.cluster.bootstrap_servers, "--topic", load.topic]
    if load.direction == SparkLoad.Direction.EXPORT:
        arguments = [*common, "--output", load.output, "--load-id", f"sparkload-{load.id}"]
        unsupported = set(spec) - {"start", "records_per_task", "isolation_level"} or set(
            spec.get("start") or {}
        ) - {"timestamp"}
        if unsupported:
            raise ValueError(
                f"an export reads incrementally or from a start timestamp; {sorted(unsupported)} "
                "cannot be honoured"
            )
        if (spec.get("start") or {}).get("timestamp") is not None:
            arguments += ["--from-timestamp", str(int(spec["start"]["timestamp"]))]
        if spec.get("records_per_task"):  # large partition ranges split into more Spark tasks
            arguments += ["--max-records-per-partition", str(int(spec["records_per_task"]))]
        if spec.get("isolation_level") in ("read_committed", "read_uncommitted"):
            # The data source's option (Spark's name); read_committed when not given.
            arguments += ["--option", f"kafka.isolation.level={spec['isolation_level']}"]
        return "load_topic", arguments
    arguments = [*common, "--input", load.output]
    for name in ("format", "key_column", "value_column", "partition_column"):
        if spec.get(name):
            arguments += [f"--{name.replace('_', '-')}", str(spec[name])]
    return "ingest", arguments


def _setting(name: str, default: Any) -> Any:
    return getattr(settings, name, None) or os.environ.get(name) or default


# A local Spark runs inside the worker's host: its driver and UI stay on the loopback.
LOCAL_CONF = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.ui.enabled": "false",
}


def spark_conf(master: str) -> dict:
    """SPARK_CONF over the loopback defaults of a local master (any value can be overridden)."""
    defaults = LOCAL_CONF if master.startswith("local") else {}
    return {**defaults, **_setting("SPARK_CONF", {})}


@contextlib.contextmanager
def client_properties_for(load: SparkLoad) -> Iterator[Path | None]:
    """The cluster's client properties for the job's lifetime; None for PLAINTEXT."""
    if load.cluster.security_protocol == "PLAINTEXT":
        yield None
        return
    directory = settings.VAR_DIR / "spark-secrets" / f"load-{load.id}-{uuid.uuid4().hex[:8]}"
    directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        yield write_client_properties(load.cluster, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def log_path_for(load: SparkLoad):
    return settings.VAR_DIR / "spark-logs" / f"load-{load.id}.log"


def this_process() -> dict[str, Any]:
    """The host and process running a load's task: what reconcile checks is still alive."""
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "started": launcher.start_ticks(pid)}


@shared_task(name=RUN_TASK)
def run_spark_load(load_id: int) -> dict[str, Any]:
    """Run a queued SparkLoad to the end (or until cancelled) and record how it went."""
    reconcile_loads()  # a dead load's orphaned job must not hold this one's output lock
    load = SparkLoad.objects.select_related("cluster", "requested_by").get(pk=load_id)
    path = log_path_for(load)
    runner = this_process()
    claimed = SparkLoad.objects.filter(pk=load_id, status=LoadStatus.QUEUED).update(
        status=LoadStatus.RUNNING,
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
        runner=runner,
        log_path=str(path),
        progress=0.0,
    )
    load.refresh_from_db()
    if not claimed:  # cancelled before it started, or already run
        if load.status == LoadStatus.CANCELLING:
            return _finish(load, LoadStatus.CANCELLED, {"cancelled": True})
        return {"load_id": load.id, "status": load.status}
    publish_load(load)
    started = time.monotonic()
    try:
        job, arguments = job_arguments(load)
    except ValueError as exc:
        return _finish(load, LoadStatus.FAILED, {"error": str(exc)})
    master = _setting("SPARK_MASTER", "local[*]")
    with client_properties_for(load) as properties:
        if properties is not None:
            arguments = [*arguments, "--command-config", str(properties)]
        argv = launcher.command(job, arguments, master=master, conf=spark_conf(master))
        return _follow(load, argv, path, runner, started)


def _follow(load: SparkLoad, argv: list[str], path, runner: dict, started: float) -> dict:
    last_push, last_beat = [0.0], [time.monotonic()]

    def on_progress(progress: launcher.Progress) -> None:
        done, total = progress.tasks_done, progress.tasks_total
        now = time.monotonic()
        if now - last_push[0] < PROGRESS_EVERY_S and done < total:
            return
        last_push[0] = now
        # Never past 99 % before the result is recorded, never backwards (a later Spark job
        # adds stages); never overwrite a cancel request.
        fraction = min(done / total, 0.99) if total else 0.0
        load.progress = max(load.progress, fraction)
        load.tasks_done, load.tasks_total = done, total
        load.stages_done, load.stages_total = progress.stages_done, progress.stages_total
        SparkLoad.objects.filter(pk=load.id, status=LoadStatus.RUNNING).update(
            progress=load.progress,
            tasks_done=done,
            tasks_total=total,
            stages_done=load.stages_done,
            stages_total=load.stages_total,
        )
        publish_load(load)

    def on_start(pid: int) -> None:
        load.runner = {**runner, "job_pid": pid, "job_started": launcher.start_ticks(pid)}
        SparkLoad.objects.filter(pk=load.id).update(result={"pid": pid}, runner=load.runner)

    def should_cancel() -> bool:
        if time.monotonic() - last_beat[0] >= HEARTBEAT_EVERY_S:
            last_beat[0] = time.monotonic()
            SparkLoad.objects.filter(pk=load.id).update(heartbeat_at=timezone.now())
        return SparkLoad.objects.filter(pk=load.id, status=LoadStatus.CANCELLING).exists()

    outcome = launcher.follow(
        argv, path, on_progress=on_progress, on_start=on_start, should_cancel=should_cancel
    )
    summary = {
        "duration_s": round(time.monotonic() - started, 3),
        "returncode": outcome.returncode,
        "command": argv,
        "pid": outcome.pid,
    }
    if outcome.cancelled:
        return _finish(load, LoadStatus.CANCELLED, {**summary, "cancelled": True})
    if not outcome.succeeded:
        error = "\n".join(outcome.log_tail[-20:])
        return _finish(load, LoadStatus.FAILED, {**summary, "error": error})
    job_result = dict(outcome.result)
    job_result["job_duration_s"] = job_result.pop("duration_s", None)
    return _finish(load, LoadStatus.SUCCEEDED, {**job_result, **summary}, progress=1.0)


def _finish(load: SparkLoad, status: str, result: dict, progress: float | None = None) -> dict:
    """End the load, unless it already ended (reconcile may have failed it meanwhile)."""
    fields = {"status": status, "result": result, "finished_at": timezone.now()}
    if progress is not None:
        fields["progress"] = progress
    SparkLoad.objects.filter(pk=load.id, status__in=ACTIVE_LOAD_STATUSES).update(**fields)
    load.refresh_from_db()
    publish_load(load)
    return {"load_id": load.id, "status": load.status}
