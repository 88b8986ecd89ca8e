"""What the platform stores: clusters it watches, maintenance, Spark loads, history, audit.

Live state (brokers, topics, offsets) is never stored here: it is read from the cluster.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

cluster_name_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
    "letters, digits, '.', '_' and '-' (it is the cluster id in URLs)",
)


# `env:` references may only name variables of this prefix: DJANGO_SECRET_KEY, DATABASE_URL
# and the rest of the platform's environment are no cluster's secret to send.
SECRET_ENV_PREFIX = "BROKERD_"


def secret_ref_problem(value: str) -> str | None:
    """Why `value` may not be used as a secret reference, or None when it may."""
    if value.startswith("env:"):
        name = value[4:]
        if not name.startswith(SECRET_ENV_PREFIX) or not name.replace("_", "").isalnum():
            return f"an env: reference names a variable starting with {SECRET_ENV_PREFIX}"
        return None
    if value.startswith("file:"):
        path = Path(value[5:])
        if not path.is_absolute():
            return "a file: reference is an absolute path"
        resolved = path.resolve()  # symlinks and '..' cannot lead out of the directory
        dirs = [Path(d).resolve() for d in settings.SECRETS_DIRS]
        if not any(resolved.is_relative_to(d) and resolved != d for d in dirs):
            shown = ", ".join(str(d) for d in dirs)
            return f"a file: reference names a file in the secrets directory ({shown})"
        return None
    return "a secret reference is env:BROKERD_NAME or file:/path in the secrets directory"


def validate_token_ref(value: str) -> None:
    if value and (problem := secret_ref_problem(value)):
        raise ValidationError(problem)


class Cluster(models.Model):
    """A Kafka-compatible cluster the dashboard watches and operates."""

    name = models.CharField(max_length=100, unique=True, validators=[cluster_name_validator])
    bootstrap_servers = models.CharField(
        max_length=1000, help_text="host:port[,host:port...] of the Kafka listeners"
    )
    admin_endpoints = models.JSONField(
        default=dict,
        blank=True,
        help_text="broker id -> admin API base URL; when empty they are discovered from "
        "ZooKeeper registrations (admin_endpoint in /brokers/ids/<id>)",
    )
    zookeeper_connect = models.CharField(max_length=1000, blank=True)
    # A reference, not the token: env:BROKERD_NAME or file:/path in the secrets directory,
    # resolved server-side only.
    admin_token_ref = models.CharField(max_length=1000, blank=True, validators=[validate_token_ref])
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        permissions = [
            ("operate_cluster", "Can change topics, configs, groups, maintenance and loads"),
            ("manage_users", "Can manage users and roles"),
        ]

    def __str__(self) -> str:
        return self.name

    def admin_token(self) -> str | None:
        """The admin API token; never serialised, never sent to a browser."""
        ref = self.admin_token_ref
        if not ref or secret_ref_problem(ref):  # checked again: rows may predate the rule
            return None
        if ref.startswith("env:"):
            return os.environ.get(ref[4:]) or None
        if ref.startswith("file:"):
            try:
                return Path(ref[5:]).read_text().strip() or None
            except OSError:
                return None
        return None


class MaintenanceAction(models.TextChoices):
    RETENTION = "retention", "Enforce retention"
    COMPACTION = "compaction", "Run compaction"


class MaintenanceSchedule(models.Model):
    """A recurring maintenance action; Celery beat's PeriodicTask carries the timing."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="schedules")
    action = models.CharField(max_length=20, choices=MaintenanceAction.choices)
    topic = models.CharField(max_length=249, blank=True, help_text="empty: every topic")
    partition = models.IntegerField(null=True, blank=True)
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask", null=True, blank=True, on_delete=models.SET_NULL
    )
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)


class RunStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class MaintenanceRun(models.Model):
    """One execution: asked of the owning broker, with what it reported doing."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="runs")
    schedule = models.ForeignKey(
        MaintenanceSchedule, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    action = models.CharField(max_length=20, choices=MaintenanceAction.choices)
    topic = models.CharField(max_length=249, blank=True)
    partition = models.IntegerField(null=True, blank=True)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.PENDING)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["cluster", "-created_at"])]


class LoadStatus(models.TextChoices):
    """A Spark load's life: queued on Celery, running under spark-submit, then one of the
    three ends; `cancelling` while a cancel request waits for the job to be killed."""

    QUEUED = "queued"
    RUNNING = "running"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


ACTIVE_LOAD_STATUSES = (LoadStatus.QUEUED, LoadStatus.RUNNING, LoadStatus.CANCELLING)


class SparkLoad(models.Model):
    """A Spark batch load launched from the UI (topic range -> output, or back)."""

    class Direction(models.TextChoices):
        EXPORT = "export", "Topic to output"
        IMPORT = "import", "Output to topic"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="spark_loads")
    direction = models.CharField(max_length=10, choices=Direction.choices, default="export")
    topic = models.CharField(max_length=249)
    # export: {} (incremental) or {"start": {"timestamp": ms}}; import: format and columns
    range = models.JSONField(default=dict, blank=True)
    output = models.CharField(max_length=2000, help_text="path or URI written (or read)")
    status = models.CharField(max_length=20, choices=LoadStatus.choices, default=LoadStatus.QUEUED)
    progress = models.FloatField(default=0.0, help_text="0.0 to 1.0")
    tasks_done = models.IntegerField(default=0, help_text="Spark tasks finished so far")
    tasks_total = models.IntegerField(default=0, help_text="Spark tasks of the stages seen")
    stages_done = models.IntegerField(default=0, help_text="Spark stages completed so far")
    stages_total = models.IntegerField(default=0, help_text="Spark stages seen (not skipped)")
    # Who runs it: {"host", "pid", "started" (the process's start time), "job_pid"}, and when
    # that task last said it was alive; how a load whose worker died is found (reconcile).
    runner = models.JSONField(default=dict, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    log_path = models.CharField(max_length=2000, blank=True)
    result = models.JSONField(default=dict, blank=True)
    celery_task_id = models.CharField(max_length=255, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def progress_text(self) -> str:
        """`stage k of n, tasks x/y`: the stage it is in (or ended at) and the tasks done."""
        if not self.tasks_total:
            return ""
        tasks = f"tasks {self.tasks_done}/{self.tasks_total}"
        if not self.stages_total:
            return tasks
        return (
            f"stage {min(self.stages_done + 1, self.stages_total)} of {self.stages_total}, {tasks}"
        )


class HistorySample(models.Model):
    """A point of lag or throughput history (kept by the platform, not the brokers)."""

    class Kind(models.TextChoices):
        LAG = "lag"
        THROUGHPUT = "throughput"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="history")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    topic = models.CharField(max_length=249, blank=True)
    group = models.CharField(max_length=255, blank=True)
    partition = models.IntegerField(null=True, blank=True)
    value = models.FloatField()
    timestamp = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [
            models.Index(fields=["cluster", "kind", "group", "timestamp"]),
            models.Index(fields=["cluster", "kind", "topic", "timestamp"]),
        ]


class AuditLog(models.Model):
    """Every change made through the platform: who, what, when, on what, and the outcome."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    username = models.CharField(max_length=150, blank=True)  # survives user deletion
    cluster = models.ForeignKey(Cluster, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=100)
    target = models.CharField(max_length=1000)
    details = models.JSONField(default=dict, blank=True)
    succeeded = models.BooleanField()
    result = models.TextField(blank=True)
    timestamp = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-timestamp"]

    def __str__(self) -> str:
        outcome = "ok" if self.succeeded else "failed"
        return f"{self.timestamp:%Y-%m-%d %H:%M:%S} {self.username} {self.action} {self.target} {outcome}"
