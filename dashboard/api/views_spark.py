"""Spark loads: /api/v3/clusters/{id}/spark-loads[/{load_id}[:cancel|/log]].

An export reads a topic into Parquet (incrementally, or from a timestamp); an ingest writes
files into a topic. Launching queues `tasks.spark.run_spark_load` on Celery; the load's
status, progress (Spark stages and tasks done) and result are read back here or followed live over
Channels. Launching and cancelling need the operator role and are audited.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers, status
from rest_framework.exceptions import APIException
from rest_framework.response import Response

from dashboard.core import spark_loads
from dashboard.core.models import ACTIVE_LOAD_STATUSES, Cluster, SparkLoad

from .base import ApiView, api_doc
from .resources import TOPIC_NAME, crn, get_cluster, listing, related, resource, url

EXPORT, INGEST = "export", "ingest"
DIRECTIONS = {EXPORT: SparkLoad.Direction.EXPORT, INGEST: SparkLoad.Direction.IMPORT}
COLUMN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
MAX_TIMESTAMP_MS = 253402300799999  # 9999-12-31T23:59:59.999Z
HIDDEN_RESULT_FIELDS = ("command",)


class QueueUnavailable(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "the task queue is unavailable"


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "conflict"


class SparkLoadCreateSerializer(serializers.Serializer):
    load_type = serializers.ChoiceField(
        choices=[EXPORT, INGEST],
        help_text="export: topic -> Parquet at output_path; ingest: files at input_path -> topic",
    )
    topic_name = serializers.RegexField(TOPIC_NAME.pattern, max_length=249)
    output_path = serializers.CharField(
        required=False, max_length=1000, help_text="export: a directory under the data root"
    )
    from_timestamp = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=MAX_TIMESTAMP_MS,
        help_text="export: reload from this time (ms); absent or null loads incrementally",
    )
    records_per_task = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=2**31 - 1,
        help_text="export: split each partition's range into Spark tasks of at most this many "
        "records (more tasks, more parallelism, finer progress)",
    )
    isolation_level = serializers.ChoiceField(
        choices=["read_committed", "read_uncommitted"],
        required=False,
        help_text="export: read_committed (the default) never reads aborted records or an "
        "open transaction's; read_uncommitted reads every record (kafka.isolation.level)",
    )
    input_path = serializers.CharField(
        required=False, max_length=1000, help_text="ingest: a file or directory under the data root"
    )
    format = serializers.ChoiceField(
        choices=["csv", "json", "parquet"], required=False, help_text="ingest: default by suffix"
    )
    key_column = serializers.RegexField(COLUMN, required=False)
    value_column = serializers.RegexField(COLUMN, required=False)
    partition_column = serializers.RegexField(COLUMN, required=False)

    EXPORT_ONLY = ("output_path", "from_timestamp", "records_per_task", "isolation_level")
    INGEST_ONLY = ("input_path", "format", "key_column", "value_column", "partition_column")

    def validate(self, attrs):
        export = attrs["load_type"] == EXPORT
        wrong = [f for f in (self.INGEST_ONLY if export else self.EXPORT_ONLY) if f in attrs]
        if wrong:
            raise serializers.ValidationError(
                {f: f"not used by an {attrs['load_type']} load" for f in wrong}
            )
        needed = "output_path" if export else "input_path"
        if not attrs.get(needed):
            raise serializers.ValidationError({needed: f"an {attrs['load_type']} load needs it"})
        try:
            attrs["path"] = spark_loads.resolve_path(attrs[needed], must_exist=not export)
        except spark_loads.LoadPathError as exc:
            raise serializers.ValidationError({needed: str(exc)}) from None
        if attrs["topic_name"] in (".", ".."):
            raise serializers.ValidationError({"topic_name": "not a topic name"})
        return attrs

    def job_spec(self) -> dict:
        data = self.validated_data
        if data["load_type"] == EXPORT:
            return spark_loads.export_range(
                data.get("from_timestamp"),
                data.get("records_per_task"),
                data.get("isolation_level"),
            )
        columns = ("format", "key_column", "value_column", "partition_column")
        return {name: data[name] for name in columns if data.get(name)}


class SparkLoadPageSerializer(serializers.Serializer):
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=500, default=50)
    page_token = serializers.IntegerField(
        required=False, min_value=1, help_text="list loads older than this load id"
    )


class LogQuerySerializer(serializers.Serializer):
    lines = serializers.IntegerField(
        required=False, min_value=1, max_value=spark_loads.LOG_TAIL_MAX_LINES, default=100
    )


def _base(cluster: Cluster) -> str:
    return f"/clusters/{cluster.name}/spark-loads"


def load_range(load: SparkLoad) -> dict:
    if load.direction != SparkLoad.Direction.EXPORT:
        return {"mode": "all"}
    start = (load.range or {}).get("start") or {}
    if start.get("timestamp") is not None:
        return {"mode": "from_timestamp", "from_timestamp": start["timestamp"]}
    return {"mode": "incremental"}


def load_resource(request, load: SparkLoad) -> dict:
    cluster = load.cluster
    path = f"{_base(cluster)}/{load.id}"
    export = load.direction == SparkLoad.Direction.EXPORT
    result = {k: v for k, v in (load.result or {}).items() if k not in HIDDEN_RESULT_FIELDS}
    return resource(
        request,
        "KafkaSparkLoad",
        path,
        crn(cluster, f"spark-load={load.id}"),
        cluster_id=cluster.name,
        load_id=load.id,
        load_type=EXPORT if export else INGEST,
        topic_name=load.topic,
        output_path=load.output if export else None,
        input_path=None if export else load.output,
        range=load_range(load),
        options={k: v for k, v in (load.range or {}).items() if k != "start"},
        status=load.status,
        progress={
            "fraction": round(load.progress, 4),
            "percent": int(load.progress * 100),
            "tasks_done": load.tasks_done,
            "tasks_total": load.tasks_total,
            "stages_done": load.stages_done,
            "stages_total": load.stages_total,
            "text": load.progress_text(),
        },
        result=result,
        requested_by=load.requested_by.get_username() if load.requested_by else None,
        created_at=load.created_at,
        started_at=load.started_at,
        finished_at=load.finished_at,
        log=related(request, f"{path}/log"),
        topic=related(request, f"/clusters/{cluster.name}/topics/{load.topic}"),
    )


def get_load(cluster: Cluster, load_id: int) -> SparkLoad:
    load = (
        SparkLoad.objects.select_related("cluster", "requested_by")
        .filter(cluster=cluster, pk=load_id)
        .first()
    )
    if load is None:
        raise Http404(f"spark load {load_id} not found")
    return load


def check_topic_exists(cluster: Cluster, topic_name: str) -> None:
    from dashboard.core.kafka import with_cluster

    metadata = with_cluster(cluster, lambda ops: ops.refresh([topic_name]))
    if topic_name not in metadata.topics:
        raise Http404(f"topic {topic_name!r} not found")


class SparkLoadList(ApiView):
    @api_doc(
        summary="Spark loads, newest first, a page at a time",
        operation_id="listSparkLoads",
        parameters=[SparkLoadPageSerializer],
    )
    def get(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        page = SparkLoadPageSerializer(data=request.query_params)
        page.is_valid(raise_exception=True)
        size, before = page.validated_data["page_size"], page.validated_data.get("page_token")
        spark_loads.reconcile()
        loads = SparkLoad.objects.filter(cluster=cluster).select_related("cluster", "requested_by")
        if before is not None:
            loads = loads.filter(pk__lt=before)
        shown = list(loads.order_by("-pk")[: size + 1])
        next_url = None
        if len(shown) > size:
            shown = shown[:size]
            next_url = f"{url(request, _base(cluster))}?page_size={size}&page_token={shown[-1].pk}"
        data = [load_resource(request, load) for load in shown]
        return Response(listing(request, "KafkaSparkLoadList", _base(cluster), data, next_url))

    @api_doc(
        summary="Launch a Spark load (export a topic to Parquet, or ingest files into a topic)",
        operation_id="createSparkLoad",
        request=SparkLoadCreateSerializer,
        responses={202: OpenApiTypes.OBJECT},
    )
    def post(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        body = SparkLoadCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        check_topic_exists(cluster, data["topic_name"])
        spark_loads.reconcile()  # a dead load's leftover job must not hold the output
        spec = body.job_spec()
        details = {"load_type": data["load_type"], "path": str(data["path"]), **spec}

        def launch() -> SparkLoad:
            try:
                return spark_loads.launch(
                    cluster,
                    request.user,
                    direction=DIRECTIONS[data["load_type"]],
                    topic=data["topic_name"],
                    path=data["path"],
                    spec=spec,
                )
            except Exception as exc:
                raise QueueUnavailable(f"could not queue the load: {exc}") from exc

        load = self.audited(cluster, "spark_load.launch", data["topic_name"], details, launch)
        headers = {"Location": url(request, f"{_base(cluster)}/{load.id}")}
        return Response(load_resource(request, load), status=202, headers=headers)


class SparkLoadDetail(ApiView):
    @api_doc(summary="A Spark load: status, progress, result", operation_id="getSparkLoad")
    def get(self, request, cluster_id: str, load_id: int):
        cluster = get_cluster(cluster_id)
        spark_loads.reconcile()
        return Response(load_resource(request, get_load(cluster, load_id)))


class SparkLoadCancel(ApiView):
    @api_doc(
        summary="Cancel a queued or running Spark load (its Spark job is killed)",
        operation_id="cancelSparkLoad",
        request=None,
        responses={202: OpenApiTypes.OBJECT},
    )
    def post(self, request, cluster_id: str, load_id: int):
        cluster = get_cluster(cluster_id)
        load = get_load(cluster, load_id)

        def cancel() -> None:
            if not spark_loads.cancel(load):
                raise Conflict(f"spark load {load.id} already ended ({load.status})")

        self.audited(cluster, "spark_load.cancel", f"spark load {load.id}", {}, cancel)
        load.refresh_from_db()
        return Response(load_resource(request, load), status=202)


class SparkLoadLog(ApiView):
    @api_doc(
        summary="The tail of a Spark load's kept log (spark-submit's output)",
        operation_id="getSparkLoadLog",
        parameters=[LogQuerySerializer],
    )
    def get(self, request, cluster_id: str, load_id: int):
        cluster = get_cluster(cluster_id)
        load = get_load(cluster, load_id)
        query = LogQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        lines, truncated = spark_loads.log_tail(load, query.validated_data["lines"])
        return Response(
            resource(
                request,
                "KafkaSparkLoadLog",
                f"{_base(cluster)}/{load.id}/log",
                crn(cluster, f"spark-load={load.id}", "log"),
                cluster_id=cluster.name,
                load_id=load.id,
                status=load.status,
                active=load.status in ACTIVE_LOAD_STATUSES,
                lines=lines,
                truncated=truncated,
            )
        )
