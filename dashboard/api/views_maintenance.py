"""Maintenance schedules: /api/v3/clusters/{id}/maintenance-schedules[/{schedule_id}].

A schedule runs retention or compaction every N seconds or on a crontab (django-celery-beat's
IntervalSchedule or CrontabSchedule behind a PeriodicTask, fired by beat); the same schedules
the maintenance page edits. Changes need the operator role and are audited.
"""

from __future__ import annotations

from django.db import transaction
from django.http import Http404
from rest_framework import serializers, status
from rest_framework.response import Response

from dashboard.core import maintenance
from dashboard.core.models import Cluster, MaintenanceAction, MaintenanceSchedule

from .base import ApiView, api_doc
from .resources import TOPIC_NAME, crn, get_cluster, listing, resource

MAX_INTERVAL_S = 31 * 86400
MIN_INTERVAL_S = 10
TIMING = ("every_seconds", "crontab")


class ScheduleSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=MaintenanceAction.values)
    topic_name = serializers.RegexField(
        TOPIC_NAME.pattern, required=False, allow_null=True, help_text="absent: every topic"
    )
    partition_id = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=100_000
    )
    every_seconds = serializers.IntegerField(
        required=False, allow_null=True, min_value=MIN_INTERVAL_S, max_value=MAX_INTERVAL_S
    )
    crontab = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=maintenance.CRONTAB_MAX_LENGTH,
        help_text="minute hour day-of-month month day-of-week (cron's order), e.g. '30 3 * * sun'",
    )
    enabled = serializers.BooleanField(required=False, default=True)

    def validate_crontab(self, value: str | None) -> str | None:
        if value is None:
            return None
        expression = " ".join(value.split())
        try:
            maintenance.crontab_fields(expression)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return expression

    def validate(self, attrs):
        given = [f for f in TIMING if attrs.get(f) is not None]
        if len(given) > 1:
            raise serializers.ValidationError("give every_seconds or crontab, not both")
        if not given and not self.partial:
            raise serializers.ValidationError("a schedule needs every_seconds or a crontab")
        if attrs.get("topic_name") in (".", ".."):
            raise serializers.ValidationError({"topic_name": "not a topic name"})
        return attrs


def schedule_resource(request, schedule: MaintenanceSchedule) -> dict:
    cluster = schedule.cluster
    task = schedule.periodic_task
    return resource(
        request,
        "KafkaMaintenanceSchedule",
        f"/clusters/{cluster.name}/maintenance-schedules/{schedule.pk}",
        crn(cluster, f"maintenance-schedule={schedule.pk}"),
        cluster_id=cluster.name,
        schedule_id=schedule.pk,
        action=schedule.action,
        topic_name=schedule.topic or None,
        partition_id=schedule.partition,
        enabled=schedule.enabled,
        **maintenance.schedule_timing(schedule),
        last_run_at=task.last_run_at if task else None,
        total_run_count=task.total_run_count if task else 0,
    )


def _schedules(cluster: Cluster):
    return cluster.schedules.select_related(
        "cluster", "periodic_task__interval", "periodic_task__crontab"
    ).order_by("pk")


def get_schedule(cluster: Cluster, schedule_id: int) -> MaintenanceSchedule:
    schedule = _schedules(cluster).filter(pk=schedule_id).first()
    if schedule is None:
        raise Http404(f"maintenance schedule {schedule_id} not found")
    return schedule


def apply_fields(schedule: MaintenanceSchedule, data: dict) -> MaintenanceSchedule:
    """Set the validated fields on the schedule (not saved); 400 for a partition without a
    topic once merged with what the schedule already has."""
    names = {"action": "action", "topic_name": "topic", "partition_id": "partition"}
    for name, attribute in {**names, "enabled": "enabled"}.items():
        if name in data:
            value = data[name]
            setattr(schedule, attribute, "" if name == "topic_name" and value is None else value)
    if schedule.partition is not None and not schedule.topic:
        raise serializers.ValidationError({"partition_id": "a partition needs a topic"})
    return schedule


def save_schedule(schedule: MaintenanceSchedule, data: dict) -> MaintenanceSchedule:
    with transaction.atomic():
        schedule.save()
        maintenance.sync_periodic_task(schedule, data.get("every_seconds"), data.get("crontab"))
    return schedule


class MaintenanceScheduleList(ApiView):
    @api_doc("Maintenance schedules (interval or crontab)", operation_id="listMaintenanceSchedules")
    def get(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        data = [schedule_resource(request, s) for s in _schedules(cluster)]
        path = f"/clusters/{cluster.name}/maintenance-schedules"
        return Response(listing(request, "KafkaMaintenanceScheduleList", path, data))

    @api_doc(
        "Create a maintenance schedule: retention or compaction every N seconds or on a crontab",
        operation_id="createMaintenanceSchedule",
        request=ScheduleSerializer,
        responses={201: ScheduleSerializer},
    )
    def post(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        body = ScheduleSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        schedule = apply_fields(
            MaintenanceSchedule(cluster=cluster, created_by=request.user), body.validated_data
        )
        duplicates = maintenance.duplicate_schedules(
            cluster, schedule.action, schedule.topic, schedule.partition
        )
        saved = self.audited(
            cluster,
            "maintenance.schedule.create",
            "schedule",
            dict(body.validated_data),
            lambda: save_schedule(schedule, body.validated_data),
        )
        answer = schedule_resource(request, saved)
        # A schedule repeating another is saved (an API caller asked for it), with a warning.
        answer["warnings"] = [w for w in [maintenance.duplicate_warning(duplicates)] if w]
        return Response(answer, status=status.HTTP_201_CREATED)


class MaintenanceScheduleDetail(ApiView):
    @api_doc("One maintenance schedule", operation_id="getMaintenanceSchedule")
    def get(self, request, cluster_id: str, schedule_id: int):
        schedule = get_schedule(get_cluster(cluster_id), schedule_id)
        return Response(schedule_resource(request, schedule))

    @api_doc(
        "Change a schedule: any of its fields; every_seconds or crontab switches its timing",
        operation_id="updateMaintenanceSchedule",
        request=ScheduleSerializer,
    )
    def patch(self, request, cluster_id: str, schedule_id: int):
        cluster = get_cluster(cluster_id)
        schedule = get_schedule(cluster, schedule_id)
        body = ScheduleSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        apply_fields(schedule, body.validated_data)
        saved = self.audited(
            cluster,
            "maintenance.schedule.update",
            f"schedule {schedule.pk}",
            dict(body.validated_data),
            lambda: save_schedule(schedule, body.validated_data),
        )
        return Response(schedule_resource(request, saved))

    @api_doc("Delete a schedule", operation_id="deleteMaintenanceSchedule", responses={204: None})
    def delete(self, request, cluster_id: str, schedule_id: int):
        cluster = get_cluster(cluster_id)
        schedule = get_schedule(cluster, schedule_id)
        self.audited(
            cluster,
            "maintenance.schedule.delete",
            f"schedule {schedule_id}",
            {},
            lambda: maintenance.delete_schedule(schedule),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
