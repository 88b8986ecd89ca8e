"""What Celery's tasks and the web actions push to the live pages over Channels: the group
each page joins, the payload it renders, and the push itself.

The pushers (tasks/, dashboard/core/spark_loads.py and maintenance.py) and the WebSocket
consumers that forward pushes to browsers (dashboard/live/consumers.py) both read this module,
so the dashboard never imports the tasks to know what they send.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from .models import MaintenanceAction, MaintenanceRun, SparkLoad
from .templatetags.readable import bytes_text

log = logging.getLogger(__name__)


def group_digest(text: str) -> str:
    """A fixed-length stand-in for a name in a group's name: Channels limits group names to
    100 ASCII characters, and cluster or topic names may be longer (249) or not ASCII."""
    return hashlib.sha1(text.encode()).hexdigest()[:20]


def maintenance_group(cluster_name: str) -> str:
    """Where Celery's maintenance tasks push runs as they happen."""
    return f"maintenance.{group_digest(cluster_name)}"


def spark_load_group(load_id: int) -> str:
    """The Channels group a load's page joins for live progress."""
    return f"sparkload.{load_id}"


def spark_loads_group(cluster_name: str) -> str:
    """The Channels group of a cluster's loads list: every change of any of its loads."""
    return f"sparkloads.{cluster_name}"


def _ms(moment) -> int | None:
    return int(moment.timestamp() * 1000) if moment else None


def run_payload(run: MaintenanceRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "cluster_id": run.cluster.name,
        "schedule_id": run.schedule_id,
        "action": run.action,
        "topic": run.topic,
        "partition": run.partition,
        "status": run.status,
        "requested_by": run.requested_by.get_username() if run.requested_by else None,
        "created_ms": _ms(run.created_at),
        "started_ms": _ms(run.started_at),
        "finished_ms": _ms(run.finished_at),
        "summary": summarize(run),
        "result": run.result,
        "error": run.error,
    }


def summarize(run: MaintenanceRun) -> str:
    """What a finished run did, in words: "3 segments deleted, 1.5 MiB freed; skipped:
    orders: cleanup.policy=compact excludes retention"."""
    result = run.result or {}
    totals = result.get("totals")
    if totals is None:
        return ""
    skipped = result.get("skipped") or []
    partitions = len(result.get("partitions") or [])
    if run.action == MaintenanceAction.RETENTION:
        deleted, freed = totals["segments_deleted"], totals["bytes_freed"]
        done = (
            f"{_count(deleted, 'segment')} deleted, {bytes_text(freed)} freed"
            if deleted
            else "nothing to delete: no segment past retention.ms or retention.bytes"
        )
    else:
        removed, freed = totals["records_removed"], totals["bytes_removed"]
        done = (
            f"{_count(removed, 'record')} removed, {bytes_text(freed)} freed"
            if removed
            else "nothing to remove: no older duplicate of a key"
        )
    parts = [] if not partitions and skipped else [f"{done} ({_count(partitions, 'partition')})"]
    if skipped:
        parts.append("skipped: " + _skipped_text(skipped))
    return "; ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _skipped_text(skipped: list[dict[str, Any]], shown: int = 3) -> str:
    """Skipped topics grouped by reason: "a, b: cleanup.policy=compact excludes retention"."""
    by_reason: dict[str, list[str]] = {}
    for entry in skipped:
        topics = by_reason.setdefault(_reason_words(entry.get("reason", "")), [])
        if entry["topic"] not in topics:
            topics.append(entry["topic"])
    texts = []
    for reason, topics in by_reason.items():
        more = f" and {len(topics) - shown} more" if len(topics) > shown else ""
        texts.append(f"{', '.join(topics[:shown])}{more}: {reason}")
    return "; ".join(texts)


def _reason_words(reason: str) -> str:
    # A broker's refusal of compaction ("t is not compacted (cleanup.policy has no
    # compact); nothing to do") in the words the page uses for every policy skip.
    if "cleanup.policy has no compact" in reason:
        return "cleanup.policy excludes compaction (no compact)"
    return reason


def load_payload(load: SparkLoad) -> dict[str, Any]:
    return {
        "id": load.id,
        "cluster_id": load.cluster.name,
        "direction": load.direction,
        "direction_label": load.get_direction_display(),
        "topic": load.topic,
        "output": load.output,
        "status": load.status,
        "progress": load.progress,
        "tasks_done": load.tasks_done,
        "tasks_total": load.tasks_total,
        "stages_done": load.stages_done,
        "stages_total": load.stages_total,
        "progress_text": load.progress_text(),
        "result": load.result,
        "requested_by": load.requested_by.get_username() if load.requested_by_id else None,
        "created_ms": _ms(load.created_at),
        "started_ms": _ms(load.started_at),
        "finished_ms": _ms(load.finished_at),
    }


def publish_run(run: MaintenanceRun) -> None:
    """Push the run to the cluster's maintenance page (best effort: the run is stored)."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {
        "type": "snapshot",
        "payload": {"kind": "run", "cluster_id": run.cluster.name, "data": run_payload(run)},
    }
    try:
        async_to_sync(layer.group_send)(maintenance_group(run.cluster.name), message)
    except Exception:  # Redis down: the page catches up on reload
        log.warning("could not publish maintenance run %s", run.id, exc_info=True)


def publish_load(load: SparkLoad) -> None:
    """Push the load's state to its page and to its cluster's loads list (best effort: the
    database has it anyway)."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "snapshot", "payload": {"kind": "spark_load", "data": load_payload(load)}}
    try:
        for group in (spark_load_group(load.id), spark_loads_group(load.cluster.name)):
            async_to_sync(layer.group_send)(group, message)
    except Exception:
        log.warning("could not publish spark load %s", load.id, exc_info=True)
