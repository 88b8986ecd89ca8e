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

from brokerd.client.results import AdminError, ConfigResource
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


def cleanup_policies(run: MaintenanceRun, topics: list[str]) -> dict[str, str]:
    """Each topic's cleanup.policy (one DescribeConfigs for them all); a topic the broker
    does not describe is left out."""
    if not topics:
        return {}

    async def describe(ops) -> dict[str, str]:
        resources = [ConfigResource.topic(t) for t in topics]
        try:
            described = await ops.admin.describe_configs(
                resources, keys=["cleanup.policy"], include_synonyms=False
            )
        except AdminError as exc:  # a topic deleted meanwhile: the others still count
            described = exc.results
        return {
            r.name: entries["cleanup.policy"].value or ""
            for r, entries in described.items()
            if "cleanup.policy" in entries
        }

    return with_cluster(run.cluster, describe)


def excluded_by_policy(action: str, policy: str) -> str | None:
    """Why a topic's cleanup.policy excludes the action ("cleanup.policy=compact excludes
    retention"), or None when it applies (retention needs `delete`, compaction `compact`)."""
    wanted = "delete" if action == MaintenanceAction.RETENTION else "compact"
    if wanted in {p.strip() for p in policy.split(",")}:
        return None
    return f"cleanup.policy={policy} excludes {action}"


def execute(run: MaintenanceRun) -> dict[str, Any]:
    """Ask each owning broker to act; the brokers' reports, per broker, and the totals.
    A topic whose cleanup.policy excludes the action is skipped, with the reason in words."""
    admin = AdminApi(run.cluster)
    body: dict[str, Any] = {}
    if run.topic:
        body["topic"] = run.topic
        if run.partition is not None:
            body["partition"] = run.partition
    reports: dict[str, Any] = {}
    skipped: list[dict[str, Any]] = []
    path = f"/v1/maintenance/{run.action}"
    brokers = owning_brokers(run)
    excluded: dict[str, str] = {}
    if run.topic:
        policy = cleanup_policies(run, [run.topic]).get(run.topic)
        reason = excluded_by_policy(run.action, policy) if policy is not None else None
        if reason is not None:
            excluded[run.topic] = reason
            brokers = []  # nothing to ask: the topic's policy excludes the action
    elif run.action == MaintenanceAction.RETENTION:
        # Every topic: the brokers apply retention where cleanup.policy has `delete`; the
        # others are named as skipped.
        metadata = with_cluster(run.cluster, lambda ops: ops.refresh())
        for topic, policy in cleanup_policies(run, sorted(metadata.topics)).items():
            if (reason := excluded_by_policy(run.action, policy)) is not None:
                excluded[topic] = reason
    skipped += [{"broker_id": None, "topic": t, "reason": r} for t, r in excluded.items()]
    for broker_id in brokers:
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
