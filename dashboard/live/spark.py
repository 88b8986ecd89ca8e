"""The Spark loads pages: the list, live over Channels, with a launch form (an export: topic,
range, output path; or an ingest: input files, format, columns, target topic), and a load's
page with its live progress (stage k of n, tasks x/y; pushed by the Celery task), result, log
tail and a cancel button. Launching and cancelling need the operator role and are audited."""

from __future__ import annotations

import datetime

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from brokerd.client.errors import KafkaClientError
from dashboard.core import audit, spark_loads
from dashboard.core.kafka import with_cluster
from dashboard.core.live_updates import load_payload
from dashboard.core.models import ACTIVE_LOAD_STATUSES, Cluster, SparkLoad
from dashboard.core.roles import OPERATE_PERMISSION, VIEW_PERMISSION

from ..api.views_spark import DIRECTIONS, EXPORT, INGEST, SparkLoadCreateSerializer

PAGE_SIZE = 50
TOPICS_OFFERED = 1000
LOG_LINES = 40


class LaunchForm(forms.Form):
    """The page's launch form: an export (topic -> Parquet) or an ingest (files -> topic).
    Its fields are turned into the REST API's request and checked by the API's serializer,
    so the page and the API accept exactly the same loads; errors land on the form's fields."""

    kind = forms.ChoiceField(
        choices=[(EXPORT, "Export: topic to Parquet"), (INGEST, "Ingest: files into the topic")],
        initial=EXPORT,
        widget=forms.RadioSelect,
    )
    topic = forms.CharField(max_length=249)
    mode = forms.ChoiceField(
        choices=[
            ("incremental", "Incremental (what is new since the last load)"),
            ("from_timestamp", "From a point in time"),
        ],  # fmt: skip
        initial="incremental",
        widget=forms.RadioSelect,
        required=False,
    )
    from_time = forms.DateTimeField(
        required=False,
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}),
        help_text="UTC",
    )
    output_path = forms.CharField(
        required=False, max_length=1000, help_text="a directory under the data root"
    )
    records_per_task = forms.IntegerField(required=False, help_text="split large partitions")
    isolation_level = forms.ChoiceField(
        choices=[
            ("read_committed", "committed records only (read_committed)"),
            ("read_uncommitted", "every record, aborted ones too (read_uncommitted)"),
        ],
        required=False,
        initial="read_committed",
    )
    input_path = forms.CharField(
        required=False, max_length=1000, help_text="a file or directory under the data root"
    )
    input_format = forms.ChoiceField(
        choices=[
            ("", "from the file suffix"),
            ("csv", "CSV"),
            ("json", "JSON"),
            ("parquet", "Parquet"),
        ],
        required=False,
    )
    key_column = forms.CharField(required=False, max_length=128)
    value_column = forms.CharField(
        required=False, max_length=128, help_text="empty: the whole row as JSON"
    )

    # API request field -> the form field its errors belong to
    API_FIELDS = {
        "load_type": "kind",
        "topic_name": "topic",
        "from_timestamp": "from_time",
        "format": "input_format",
    }

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        request = self.api_request(data)
        if request is None:
            return data
        self.api = SparkLoadCreateSerializer(data=request)
        if not self.api.is_valid():
            for name, errors in self.api.errors.items():
                field = self.API_FIELDS.get(name, name)
                for error in errors if isinstance(errors, list) else [errors]:
                    self.add_error(field if field in self.fields else None, str(error))
        return data

    def api_request(self, data) -> dict | None:
        """The REST API's launch request for what was filled in (None: an error was added)."""
        request = {"load_type": data["kind"], "topic_name": data["topic"]}
        if data["kind"] == EXPORT:
            if data.get("output_path"):
                request["output_path"] = data["output_path"]
            if data.get("records_per_task") is not None:
                request["records_per_task"] = data["records_per_task"]
            if data.get("isolation_level"):
                request["isolation_level"] = data["isolation_level"]
            if data.get("mode") == "from_timestamp":
                if not data.get("from_time"):
                    self.add_error("from_time", "a load from a point in time needs the time")
                    return None
                moment = data["from_time"].replace(tzinfo=datetime.UTC)  # the form's times: UTC
                request["from_timestamp"] = int(moment.timestamp() * 1000)
            return request
        if data.get("input_path"):
            request["input_path"] = data["input_path"]
        for field, name in (("input_format", "format"), ("key_column", "key_column"),
                            ("value_column", "value_column")):  # fmt: skip
            if data.get(field):
                request[name] = data[field]
        return request


def _topics(cluster: Cluster) -> tuple[list[str], str | None]:
    try:
        metadata = with_cluster(cluster, lambda ops: ops.refresh())
    except KafkaClientError as exc:
        return [], f"cluster unreachable: {exc}"
    names = sorted(n for n, t in metadata.topics.items() if not t.is_internal)
    return names[:TOPICS_OFFERED], None


def _list_page(request, cluster: Cluster, form: LaunchForm, status: int = 200):
    spark_loads.reconcile()
    loads = SparkLoad.objects.filter(cluster=cluster).select_related("cluster", "requested_by")
    before = request.GET.get("before", "")
    if before.isdigit():
        loads = loads.filter(pk__lt=int(before))
    shown = list(loads.order_by("-pk")[: PAGE_SIZE + 1])
    more = len(shown) > PAGE_SIZE
    shown = shown[:PAGE_SIZE]
    topics, error = _topics(cluster)
    return render(
        request,
        "live/spark_loads.html",
        {
            "cluster": cluster,
            "loads": shown,
            "older_page": before.isdigit(),
            "next_before": shown[-1].pk if more else None,
            "topics": topics,
            "form": form,
            "data_root": spark_loads.data_root(),
            "error": error,
        },
        status=status,
    )


@permission_required(VIEW_PERMISSION, raise_exception=True)
def load_list(request, cluster_id: str):
    cluster = get_object_or_404(Cluster, name=cluster_id)
    return _list_page(request, cluster, LaunchForm(initial={"output_path": "exports/"}))


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def launch(request, cluster_id: str):
    """Launch an export or an ingest; a refused one shows the page again, with the values
    entered and each error at its field (HTTP 400)."""
    cluster = get_object_or_404(Cluster, name=cluster_id)
    form = LaunchForm(request.POST)
    if form.is_valid():
        topics, error = _topics(cluster)
        if error or form.cleaned_data["topic"] not in topics:
            form.add_error("topic", error or f"topic {form.cleaned_data['topic']!r} not found")
    if not form.is_valid():
        return _list_page(request, cluster, form, status=400)
    data, spec = form.api.validated_data, form.api.job_spec()
    topic = data["topic_name"]
    details = {"load_type": data["load_type"], "path": str(data["path"]), **spec}
    try:
        load = spark_loads.launch(
            cluster, request.user, direction=DIRECTIONS[data["load_type"]], topic=topic,
            path=data["path"], spec=spec,
        )  # fmt: skip
    except Exception as exc:  # the queue (Redis) is down: the load says so too
        audit.record(request.user, "spark_load.launch", topic, cluster=cluster, details=details,
                     succeeded=False, result=str(exc))  # fmt: skip
        messages.error(request, f"could not queue the load: {exc}")
        return redirect("spark-loads", cluster.name)
    audit.record(request.user, "spark_load.launch", topic, cluster=cluster,
                 details={**details, "load": load.pk}, succeeded=True, result="ok")  # fmt: skip
    return redirect("spark-load", cluster.name, load.pk)


def _load(cluster_id: str, load_id: int) -> SparkLoad:
    load = SparkLoad.objects.select_related("cluster", "requested_by").filter(
        cluster__name=cluster_id, pk=load_id
    )
    if not load:
        raise Http404("no such spark load")
    return load[0]


def range_text(load: SparkLoad) -> str:
    if load.direction != SparkLoad.Direction.EXPORT:
        return ", ".join(f"{k}={v}" for k, v in sorted((load.range or {}).items())) or "all files"
    timestamp = ((load.range or {}).get("start") or {}).get("timestamp")
    split = (load.range or {}).get("records_per_task")
    split_text = f"; Spark tasks of at most {split} records" if split else ""
    if timestamp is None:
        return f"incremental (from where the last load into this path ended){split_text}"
    moment = datetime.datetime.fromtimestamp(timestamp / 1000, datetime.UTC)
    return f"from {moment:%Y-%m-%d %H:%M:%S} UTC ({timestamp} ms){split_text}"


@permission_required(VIEW_PERMISSION, raise_exception=True)
def load_page(request, cluster_id: str, load_id: int):
    spark_loads.reconcile()
    load = _load(cluster_id, load_id)
    lines, truncated = spark_loads.log_tail(load, LOG_LINES)
    return render(
        request,
        "live/spark_load.html",
        {
            "cluster": load.cluster,
            "load": load,
            "payload": load_payload(load),
            "active": load.status in ACTIVE_LOAD_STATUSES,
            "range_text": range_text(load),
            "log_lines": lines,
            "log_truncated": truncated,
            "log_lines_shown": LOG_LINES,
        },
    )


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def cancel(request, cluster_id: str, load_id: int):
    load = _load(cluster_id, load_id)
    asked = spark_loads.cancel(load)
    outcome = "cancel requested" if asked else f"already {load.status}"
    if not asked:
        messages.error(request, f"load {load.pk} already ended ({load.status})")
    audit.record(request.user, "spark_load.cancel", f"spark load {load.pk}", cluster=load.cluster,
                 succeeded=asked, result=outcome)  # fmt: skip
    return redirect("spark-load", load.cluster.name, load.pk)
