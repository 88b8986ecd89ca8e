"""Maintenance runs: Celery asks the brokers that own the data to enforce retention or run
compaction now (their admin API: POST /v1/maintenance/retention|compaction), stores what each
broker reports in a MaintenanceRun, and pushes every state change to the maintenance page.

Topic policy decides what applies: retention runs on `delete` topics, compaction on
`compact` ones; a topic whose policy excludes the action is reported as skipped.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.utils import timezone

from dashboard.core.admin_api import AdminApi, AdminApiError
from dashboard.core.kafka import with_cluster
from dashboard.core.live_updates import publish_run
from dashboard.core.maintenance import RUN_TASK, SCHEDULE_TASK, create_run
from dashboard.core.models import (
    MaintenanceAction,
    MaintenanceRun,
    MaintenanceSchedule,
    RunStatus,
)

log = logging.getLogger(__name__)


# Asking the brokers ----------------------------------------------------------------------
def owning_brokers(run: MaintenanceRun) -> list[int]:
    """Brokers holding a replica of the run's topic (every live broker for all topics)."""
    metadata = with_cluster(run.cluster, lambda ops: ops.refresh([run.topic] if run.topic else []))
    if not run.topic:
        return sorted(metadata.brokers)
    info = metadata.topics.get(run.topic)
    if info is None:
        raise AdminApiError(404, f"topic {run.topic!r} not found")
    partitions = list(info.partitions.values())
    if run.partition is not None:
        partitions = [p for p in partitions if p.partition == run.partition]
        if not partitions:
            raise AdminApiError(404, f"{run.topic} has no partition {run.partition}")
    return sorted({b for p in partitions for b in p.replicas if b in metadata.brokers})


def compacted_topics(admin: AdminApi, broker_id: int) -> list[str]:
    """The compacted topics this broker stores (its cleaner lists every compacted log)."""
    logs = admin.get(broker_id, "/v1/cleaner").get("logs", [])
    return sorted({entry["topic"] for entry in logs})


def execute(run: MaintenanceRun) -> dict[str, Any]:
    """Ask each owning broker to act; the brokers' reports, per broker, and the totals."""
    admin = AdminApi(run.cluster)
    body: dict[str, Any] = {}
    if run.topic:
        body["topic"] = run.topic
        if run.partition is not None:
            body["partition"] = run.partition
    reports: dict[str, Any] = {}
    skipped: list[dict[str, Any]] = []
    path = f"/v1/maintenance/{run.action}"
    for broker_id in owning_brokers(run):
        if run.action == MaintenanceAction.RETENTION:
            reports[str(broker_id)] = [admin.request(broker_id, "POST", path, body)]
            continue
        topics = [run.topic] if run.topic else compacted_topics(admin, broker_id)
        answers = []
        for topic in topics:
            try:
                answers.append(admin.request(broker_id, "POST", path, {**body, "topic": topic}))
            except AdminApiError as exc:
                if exc.status != 400:
                    raise
                skipped.append({"broker_id": broker_id, "topic": topic, "reason": exc.message})
        reports[str(broker_id)] = answers
    answers = [a for per_broker in reports.values() for a in per_broker]
    totals = {
        key: sum(int(a.get(key, 0) or 0) for a in answers)
        for key in ("segments_deleted", "bytes_freed", "records_removed", "bytes_removed")
    }
    partitions = [r for a in answers for r in a.get("reports", [])]
    return {"brokers": reports, "partitions": partitions, "totals": totals, "skipped": skipped}


@shared_task(name=RUN_TASK)
def run_maintenance(run_id: int) -> dict[str, Any]:
    """Execute a stored MaintenanceRun (pending) and record the outcome."""
    run = MaintenanceRun.objects.select_related("cluster", "requested_by").get(pk=run_id)
    run.status, run.started_at = RunStatus.RUNNING, timezone.now()
    run.save(update_fields=["status", "started_at"])
    publish_run(run)
    try:
        run.result = execute(run)
        run.status = RunStatus.SUCCEEDED
    except Exception as exc:  # every failure is recorded on the run, not lost in a log
        log.warning("maintenance run %s failed: %s", run.id, exc)
        run.status, run.error = RunStatus.FAILED, str(exc)[:10000]
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "result", "error", "finished_at"])
    publish_run(run)
    return {"run_id": run.id, "status": run.status}


@shared_task(name=SCHEDULE_TASK)
def run_schedule(schedule_id: int) -> dict[str, Any] | None:
    """What beat fires: one run of the schedule (skipped if it was disabled or deleted)."""
    schedule = MaintenanceSchedule.objects.select_related("cluster").filter(pk=schedule_id).first()
    if schedule is None or not schedule.enabled:
        return None
    run = create_run(
        schedule.cluster, schedule.action, schedule.topic, schedule.partition, schedule=schedule
    )
    return run_maintenance(run.id)
