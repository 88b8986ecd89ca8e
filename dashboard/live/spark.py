"""The Spark loads pages: the list with a launch form (topic, range, output path), and a load's
page with its live progress (Channels, pushed by the Celery task), result, log tail and a
cancel button. Launching and cancelling need the operator role and are audited."""

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
from dashboard.core.models import ACTIVE_LOAD_STATUSES, Cluster, SparkLoad
from dashboard.core.roles import OPERATE_PERMISSION, VIEW_PERMISSION
from tasks.spark import load_payload

from ..api.resources import TOPIC_NAME

PAGE_SIZE = 50
TOPICS_OFFERED = 1000
LOG_LINES = 40


class LaunchForm(forms.Form):
    topic = forms.RegexField(TOPIC_NAME.pattern, max_length=249)
    mode = forms.ChoiceField(
        choices=[
            ("incremental", "Incremental (what is new since the last load)"),
            ("from_timestamp", "From a point in time"),
        ],  # fmt: skip
        initial="incremental",
        widget=forms.RadioSelect,
    )
    from_time = forms.DateTimeField(
        required=False,
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}),
        help_text="UTC",
    )
    output_path = forms.CharField(max_length=1000, help_text="a directory under the data root")
    records_per_task = forms.IntegerField(
        required=False, min_value=1, max_value=2**31 - 1, help_text="split large partitions"
    )

    def clean_output_path(self):
        try:
            return spark_loads.resolve_path(self.cleaned_data["output_path"])
        except spark_loads.LoadPathError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self):
        data = super().clean()
        if data.get("mode") == "from_timestamp" and not data.get("from_time"):
            self.add_error("from_time", "a load from a point in time needs the time")
        return data

    def from_timestamp_ms(self) -> int | None:
        data = self.cleaned_data
        if data["mode"] != "from_timestamp":
            return None
        moment = data["from_time"].replace(tzinfo=datetime.UTC)  # the form's times are UTC
        return int(moment.timestamp() * 1000)


def _topics(cluster: Cluster) -> tuple[list[str], str | None]:
    try:
        metadata = with_cluster(cluster, lambda ops: ops.refresh())
    except KafkaClientError as exc:
        return [], f"cluster unreachable: {exc}"
    names = sorted(n for n, t in metadata.topics.items() if not t.is_internal)
    return names[:TOPICS_OFFERED], None


@permission_required(VIEW_PERMISSION, raise_exception=True)
def load_list(request, cluster_id: str):
    cluster = get_object_or_404(Cluster, name=cluster_id)
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
            "next_before": shown[-1].pk if more else None,
            "topics": topics,
            "form": LaunchForm(initial={"output_path": "exports/"}),
            "data_root": spark_loads.data_root(),
            "error": error,
        },
    )


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def launch(request, cluster_id: str):
    cluster = get_object_or_404(Cluster, name=cluster_id)
    form = LaunchForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(errors)}")
        return redirect("spark-loads", cluster.name)
    topic, path = form.cleaned_data["topic"], form.cleaned_data["output_path"]
    topics, error = _topics(cluster)
    if error or topic not in topics:
        messages.error(request, error or f"topic {topic!r} not found")
        return redirect("spark-loads", cluster.name)
    spec = spark_loads.export_range(
        form.from_timestamp_ms(), form.cleaned_data.get("records_per_task")
    )
    details = {"load_type": "export", "path": str(path), **spec}
    try:
        load = spark_loads.launch(
            cluster, request.user, direction=SparkLoad.Direction.EXPORT, topic=topic,
            path=path, spec=spec,
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
