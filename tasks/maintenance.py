"""Maintenance runs: Celery asks the brokers that own the data to enforce retention or run
compaction now (their admin API: POST /v1/maintenance/retention|compaction), stores what each
broker reports in a MaintenanceRun, and pushes every state change to the maintenance page.

Topic policy decides what applies: retention runs on `delete` topics, compaction on
`compact` ones; a topic whose policy excludes the action is reported as skipped.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from asgiref.sync import async_to_sync
from celery import shared_task
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from dashboard.core.admin_api import AdminApi, AdminApiError
from dashboard.core.kafka import with_cluster
from dashboard.core.models import (
    MaintenanceAction,
    MaintenanceRun,
    MaintenanceSchedule,
    RunStatus,
)

log = logging.getLogger(__name__)

RUN_TASK = "tasks.maintenance.run_maintenance"
SCHEDULE_TASK = "tasks.maintenance.run_schedule"


# Live updates ----------------------------------------------------------------------------
def run_payload(run: MaintenanceRun) -> dict[str, Any]:
    def ms(moment):
        return int(moment.timestamp() * 1000) if moment else None

    return {
        "id": run.id,
        "cluster_id": run.cluster.name,
        "schedule_id": run.schedule_id,
        "action": run.action,
        "topic": run.topic,
        "partition": run.partition,
        "status": run.status,
        "requested_by": run.requested_by.get_username() if run.requested_by else None,
        "created_ms": ms(run.created_at),
        "started_ms": ms(run.started_at),
        "finished_ms": ms(run.finished_at),
        "summary": summarize(run),
        "result": run.result,
        "error": run.error,
    }


def summarize(run: MaintenanceRun) -> str:
    totals = (run.result or {}).get("totals")
    if not totals:
        return ""
    if run.action == MaintenanceAction.RETENTION:
        text = f"{totals['segments_deleted']} segments deleted, {totals['bytes_freed']} bytes freed"
    else:
        text = f"{totals['records_removed']} records removed, {totals['bytes_removed']} bytes freed"
    skipped = (run.result or {}).get("skipped") or []
    return text + (f"; skipped {len(skipped)}" if skipped else "")


def publish(run: MaintenanceRun) -> None:
    """Push the run to the cluster's maintenance page (best effort: the run is stored)."""
    from dashboard.live.collector import maintenance_group

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
    publish(run)
    try:
        run.result = execute(run)
        run.status = RunStatus.SUCCEEDED
    except Exception as exc:  # every failure is recorded on the run, not lost in a log
        log.warning("maintenance run %s failed: %s", run.id, exc)
        run.status, run.error = RunStatus.FAILED, str(exc)[:10000]
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "result", "error", "finished_at"])
    publish(run)
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


def create_run(cluster, action, topic="", partition=None, *, user=None, schedule=None):
    run = MaintenanceRun.objects.create(
        cluster=cluster,
        schedule=schedule,
        action=action,
        topic=topic or "",
        partition=partition,
        requested_by=user if user is not None and user.is_authenticated else None,
    )
    publish(run)
    return run


# Schedules as django-celery-beat PeriodicTasks ------------------------------------------
# cron's field order, as an operator writes it: "*/15 2-5 * * mon-fri".
CRONTAB_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
CRONTAB_MAX_LENGTH = 200


def crontab_fields(expression: str) -> dict[str, str]:
    """A crontab expression as CrontabSchedule fields; ValueError says what is wrong."""
    from django.core.exceptions import ValidationError
    from django_celery_beat.models import CrontabSchedule

    parts = expression.split()
    if len(parts) != len(CRONTAB_FIELDS):
        raise ValueError(
            f"a crontab has 5 fields (minute hour day-of-month month day-of-week), got {len(parts)}"
        )
    fields = dict(zip(CRONTAB_FIELDS, parts, strict=True))
    try:
        CrontabSchedule(**fields, timezone=settings.CELERY_TIMEZONE).full_clean(
            validate_unique=False
        )
    except ValidationError as exc:
        problems = [f"{name}: {' '.join(errors)}" for name, errors in exc.message_dict.items()]
        raise ValueError("; ".join(problems)) from None
    return fields


def crontab_expression(crontab) -> str:
    return " ".join(str(getattr(crontab, name)) for name in CRONTAB_FIELDS)


def schedule_timing(schedule: MaintenanceSchedule) -> dict[str, Any]:
    """{"every_seconds": n or None, "crontab": "m h dom mon dow" or None}."""
    task = schedule.periodic_task
    return {
        "every_seconds": task.interval.every if task and task.interval else None,
        "crontab": crontab_expression(task.crontab) if task and task.crontab else None,
    }


def sync_periodic_task(
    schedule: MaintenanceSchedule, every_seconds: int | None = None, crontab: str | None = None
) -> None:
    """Create or update the PeriodicTask behind a schedule (its timing: an interval or a
    crontab, at most one given, none keeps the current one; enabled; arguments)."""
    from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

    if every_seconds is not None and crontab is not None:
        raise ValueError("a schedule runs every N seconds or on a crontab, not both")
    with transaction.atomic():
        task = schedule.periodic_task
        if task is None and every_seconds is None and crontab is None:
            raise ValueError("a new schedule needs an interval or a crontab")
        if task is None:
            task = PeriodicTask(name=f"maintenance-schedule-{schedule.pk}", task=SCHEDULE_TASK)
        if every_seconds is not None:
            task.interval, _ = IntervalSchedule.objects.get_or_create(
                every=every_seconds, period=IntervalSchedule.SECONDS
            )
            task.crontab = None
        elif crontab is not None:
            task.crontab, _ = CrontabSchedule.objects.get_or_create(
                **crontab_fields(crontab), timezone=settings.CELERY_TIMEZONE
            )
            task.interval = None
        task.args = json.dumps([schedule.pk])
        task.enabled = schedule.enabled
        task.description = (
            f"{schedule.get_action_display()} on {schedule.cluster.name}"
            f" {schedule.topic or 'every topic'}"
        )
        task.save()
        if schedule.periodic_task_id != task.pk:
            schedule.periodic_task = task
            schedule.save(update_fields=["periodic_task"])


def delete_schedule(schedule: MaintenanceSchedule) -> None:
    task = schedule.periodic_task
    schedule.delete()
    if task is not None:
        task.delete()


def enqueue(run: MaintenanceRun) -> None:
    """Hand the run to a worker (no retrying on a dead queue: the caller reports it)."""
    run_maintenance.apply_async(args=[run.pk], retry=False)
