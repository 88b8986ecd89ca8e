"""What the platform stores: clusters it watches, maintenance, Spark loads, history, audit.

Live state (brokers, topics, offsets) is never stored here: it is read from the cluster.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from brokerd.client.connection import ClientSecurity

from .cluster_secrets import seal, unseal

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


class SecurityProtocol(models.TextChoices):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"


class SaslMechanism(models.TextChoices):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"


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
    # How the platform connects, in Kafka's client terms (security.protocol, sasl.mechanism,
    # the SASL user, ssl.truststore as PEM, a client certificate for mutual TLS). The
    # password and the private key are stored sealed (cluster_secrets.py), never shown back.
    security_protocol = models.CharField(
        max_length=20, choices=SecurityProtocol.choices, default=SecurityProtocol.PLAINTEXT
    )
    sasl_mechanism = models.CharField(max_length=20, choices=SaslMechanism.choices, blank=True)
    sasl_username = models.CharField(max_length=256, blank=True)
    sasl_password_sealed = models.TextField(blank=True, editable=False)
    ssl_ca_pem = models.TextField(
        blank=True, help_text="the CA certificates (PEM) the brokers' certificates chain to"
    )
    ssl_certificate_pem = models.TextField(
        blank=True, help_text="a client certificate (PEM) for mutual TLS"
    )
    ssl_key_sealed = models.TextField(blank=True, editable=False)
    ssl_check_hostname = models.BooleanField(
        default=True, help_text="ssl.endpoint.identification.algorithm=https (Kafka's default)"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        permissions = [
            ("operate_cluster", "Can change topics, configs, groups, maintenance and loads"),
            ("manage_users", "Can manage users and roles"),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        sasl = self.security_protocol.startswith("SASL_")
        if sasl and not (self.sasl_mechanism and self.sasl_username):
            raise ValidationError(f"{self.security_protocol} needs a SASL mechanism and a user")
        if sasl and not self.sasl_password_sealed:
            raise ValidationError(f"{self.security_protocol} needs the SASL user's password")
        if bool(self.ssl_certificate_pem) != bool(self.ssl_key_sealed):
            raise ValidationError("a client certificate needs its private key, and the reverse")

    def set_sasl_password(self, password: str) -> None:
        self.sasl_password_sealed = seal(password) if password else ""

    def set_ssl_key(self, key_pem: str) -> None:
        self.ssl_key_sealed = seal(key_pem) if key_pem else ""

    @property
    def security_fingerprint(self) -> tuple:
        """What a cached client must be rebuilt for when it changes."""
        return (
            self.bootstrap_servers,
            self.security_protocol,
            self.sasl_mechanism,
            self.sasl_username,
            self.sasl_password_sealed,
            self.ssl_ca_pem,
            self.ssl_certificate_pem,
            self.ssl_key_sealed,
            self.ssl_check_hostname,
        )

    def client_security(self) -> ClientSecurity:
        """The brokerd client's settings for this cluster, secrets unsealed here only."""
        protocol = self.security_protocol
        if protocol == SecurityProtocol.PLAINTEXT:
            return ClientSecurity()
        context = None
        if protocol in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL):
            context = self._ssl_context()
        if not protocol.startswith("SASL_"):
            return ClientSecurity(security_protocol=protocol, ssl_context=context)
        return ClientSecurity(
            security_protocol=protocol,
            ssl_context=context,
            sasl_mechanism=self.sasl_mechanism,
            sasl_username=self.sasl_username,
            sasl_password=unseal(self.sasl_password_sealed),
        )

    def _ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.ssl_ca_pem or None)
        context.check_hostname = self.ssl_check_hostname
        if self.ssl_certificate_pem:
            # ssl loads a key only from a file: a private one, removed once read.
            with tempfile.NamedTemporaryFile("w", suffix=".pem") as chain:
                chain.write(unseal(self.ssl_key_sealed) + "\n" + self.ssl_certificate_pem)
                chain.flush()
                context.load_cert_chain(chain.name)
        return context

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
    """A point of lag or throughput history (kept by the platform, not the brokers).

    THROUGHPUT is a topic's records/s from high-watermark growth (any Kafka cluster);
    BYTES_IN, BYTES_OUT and RECORDS_IN are per second from the brokers' BrokerTopicMetrics
    (brokerd's admin API): per topic (`topic` set) or per broker (`broker` set)."""

    class Kind(models.TextChoices):
        LAG = "lag"
        THROUGHPUT = "throughput"
        BYTES_IN = "bytes_in"
        BYTES_OUT = "bytes_out"
        RECORDS_IN = "records_in"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="history")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    topic = models.CharField(max_length=249, blank=True)
    group = models.CharField(max_length=255, blank=True)
    partition = models.IntegerField(null=True, blank=True)
    broker = models.IntegerField(null=True, blank=True)
    value = models.FloatField()
    timestamp = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [
            models.Index(fields=["cluster", "kind", "group", "timestamp"]),
            models.Index(fields=["cluster", "kind", "topic", "timestamp"]),
            models.Index(fields=["cluster", "kind", "broker", "timestamp"]),
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
