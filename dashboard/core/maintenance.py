"""Maintenance runs and schedules as the web side asks for them: a run stored and queued on
Celery by task name (tasks/maintenance.py executes it), schedules as django-celery-beat
PeriodicTasks firing tasks/maintenance.py's `run_schedule`.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from dashboard.celery import queue_task

from .live_updates import publish_run
from .models import MaintenanceRun, MaintenanceSchedule

# The names tasks/maintenance.py registers its tasks under.
RUN_TASK = "tasks.maintenance.run_maintenance"
SCHEDULE_TASK = "tasks.maintenance.run_schedule"


def create_run(cluster, action, topic="", partition=None, *, user=None, schedule=None):
    run = MaintenanceRun.objects.create(
        cluster=cluster,
        schedule=schedule,
        action=action,
        topic=topic or "",
        partition=partition,
        requested_by=user if user is not None and user.is_authenticated else None,
    )
    publish_run(run)
    return run


def enqueue(run: MaintenanceRun) -> None:
    """Hand the run to a worker (no retrying on a dead queue: the caller reports it)."""
    queue_task(RUN_TASK, run.pk)


# cron's field order, as an operator writes it: "*/15 2-5 * * mon-fri".
CRONTAB_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
CRONTAB_MAX_LENGTH = 200


def crontab_fields(expression: str) -> dict[str, str]:
    """A crontab expression as CrontabSchedule fields; ValueError says what is wrong."""
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


def describe_schedule(schedule: MaintenanceSchedule) -> str:
    """ "schedule 3 (Enforce retention on orders, every 600 s)"."""
    timing = schedule_timing(schedule)
    when = (
        f"every {timing['every_seconds']:,} s"
        if timing["every_seconds"]
        else f"crontab {timing['crontab']} UTC"
        if timing["crontab"]
        else "no timing"
    )
    target = schedule.topic or "every topic"
    if schedule.partition is not None:
        target += f" partition {schedule.partition}"
    return f"schedule {schedule.pk} ({schedule.get_action_display()} on {target}, {when})"


def duplicate_schedules(
    cluster, action: str, topic: str, partition: int | None, exclude_pk: int | None = None
) -> list[MaintenanceSchedule]:
    """The cluster's schedules that already run `action` on the same target (whatever their
    timing: two of them do the same work twice)."""
    same = MaintenanceSchedule.objects.filter(
        cluster=cluster, action=action, topic=topic or "", partition=partition
    ).select_related("periodic_task__interval", "periodic_task__crontab")
    if exclude_pk is not None:
        same = same.exclude(pk=exclude_pk)
    return list(same.order_by("pk"))


def duplicate_warning(duplicates: list[MaintenanceSchedule]) -> str | None:
    if not duplicates:
        return None
    named = "; ".join(describe_schedule(s) for s in duplicates[:3])
    more = f" and {len(duplicates) - 3} more" if len(duplicates) > 3 else ""
    return f"{named}{more} already does this: a second schedule runs the same work again"
