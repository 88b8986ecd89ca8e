"""Spark loads as the web side asks for them: where their files may live, launching, the log.

Operators name output (or input) paths, and Spark writes (or reads) them as the worker's
user, so every path is confined to SPARK_DATA_ROOT (DASHBOARD_SPARK_DATA_ROOT, default
VAR_DIR/spark-data): a relative path is taken under it, an absolute one must lie inside it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from dashboard.celery import queue_task

from .live_updates import publish_load
from .models import Cluster, LoadStatus, SparkLoad
from .spark_reconcile import reconcile_loads

log = logging.getLogger(__name__)

# The name tasks/spark.py registers the task that runs a load under.
RUN_TASK = "tasks.spark.run_spark_load"
LOG_TAIL_MAX_LINES = 1000
LOG_TAIL_MAX_BYTES = 256 * 1024


class LoadPathError(ValueError):
    """A path the platform does not let a load touch."""


def data_root() -> Path:
    configured = getattr(settings, "SPARK_DATA_ROOT", None) or os.environ.get(
        "DASHBOARD_SPARK_DATA_ROOT"
    )
    return Path(configured or settings.VAR_DIR / "spark-data").resolve()


def resolve_path(text: str, *, must_exist: bool = False) -> Path:
    """The absolute path a load may use for `text`, or LoadPathError saying why not."""
    if not text or "\x00" in text or "://" in text:
        raise LoadPathError("a path (relative to the data root, or inside it) is required")
    root = data_root()
    path = (root / text).resolve()  # an absolute `text` replaces the root, then is checked
    if path != root and root not in path.parents:
        raise LoadPathError(f"the path must be inside the data root {root}")
    if path == root:
        raise LoadPathError("name a directory inside the data root, not the root itself")
    if must_exist and not path.exists():
        raise LoadPathError(f"{text!r} does not exist under the data root")
    return path


def export_range(
    from_timestamp_ms: int | None,
    records_per_task: int | None = None,
    isolation_level: str | None = None,
) -> dict:
    """An export's SparkLoad.range: incremental ({}) or from a time; optionally split; read
    read_committed unless it says read_uncommitted."""
    spec = {} if from_timestamp_ms is None else {"start": {"timestamp": int(from_timestamp_ms)}}
    if records_per_task:
        spec["records_per_task"] = int(records_per_task)
    if isolation_level == "read_uncommitted":
        spec["isolation_level"] = isolation_level
    return spec


def launch(cluster: Cluster, user, *, direction: str, topic: str, path: Path, spec: dict):
    """Create the load and queue it on Celery. If the queue cannot take it, the load is
    marked failed with the reason, and the error is raised for the caller to report."""
    if direction == SparkLoad.Direction.EXPORT:
        path.mkdir(parents=True, exist_ok=True)
    load = SparkLoad.objects.create(
        cluster=cluster,
        direction=direction,
        topic=topic,
        output=str(path),
        range=spec,
        requested_by=user if getattr(user, "is_authenticated", False) else None,
    )
    try:
        start_load(load)
    except Exception as exc:
        SparkLoad.objects.filter(pk=load.pk).update(
            status=LoadStatus.FAILED, result={"error": f"could not queue the load: {exc}"}
        )
        load.refresh_from_db()
        publish_load(load)
        raise
    return load


def start_load(load: SparkLoad) -> SparkLoad:
    """Queue a load on Celery; the task id is kept for the record. Raises when the queue
    (Redis) is unreachable rather than retrying, so the caller can say so."""
    async_result = queue_task(RUN_TASK, load.id)
    SparkLoad.objects.filter(pk=load.id).update(celery_task_id=async_result.id or "")
    load.celery_task_id = async_result.id or ""
    publish_load(load)
    return load


def log_tail(load: SparkLoad, lines: int = 100) -> tuple[list[str], bool]:
    """The last `lines` lines of the load's kept log, and whether earlier lines exist."""
    lines = max(1, min(lines, LOG_TAIL_MAX_LINES))
    if not load.log_path:
        return [], False
    try:
        with open(load.log_path, "rb") as log:
            log.seek(0, os.SEEK_END)
            size = log.tell()
            start = max(0, size - LOG_TAIL_MAX_BYTES)
            log.seek(start)
            chunk = log.read()
    except OSError:
        return [], False
    text = chunk.decode("utf-8", errors="replace").splitlines()
    if start > 0 and text:
        text = text[1:]  # the first line was cut by the byte window
    return text[-lines:], start > 0 or len(text) > lines


def cancel(load: SparkLoad) -> bool:
    """Ask the load to stop; True when it was still queued or running."""
    if load.status == LoadStatus.CANCELLING:
        return True
    return cancel_load(load)


def cancel_load(load: SparkLoad) -> bool:
    """Stop a load: a queued one is cancelled at once (its task will find nothing to do), a
    running one is marked cancelling for its task to kill the job. False when it had ended."""
    cancelled_now = SparkLoad.objects.filter(pk=load.id, status=LoadStatus.QUEUED).update(
        status=LoadStatus.CANCELLED, finished_at=timezone.now(), result={"cancelled": True}
    )
    asked = cancelled_now or SparkLoad.objects.filter(pk=load.id, status=LoadStatus.RUNNING).update(
        status=LoadStatus.CANCELLING
    )
    load.refresh_from_db()
    publish_load(load)
    return bool(asked)


def reconcile() -> None:
    """End loads whose Celery worker died before they are shown (spark_reconcile.py); a
    failure here must not keep the page or the API from answering."""
    try:
        reconcile_loads()
    except Exception:
        log.warning("could not reconcile spark loads", exc_info=True)
