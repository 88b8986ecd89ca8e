"""Live pages: rendered once with a fresh snapshot, then kept current over a WebSocket.
Lists (topics, groups) are sorted and paged on the server (topics.py, group_list.py)."""

from __future__ import annotations

import datetime

from django.contrib.auth.decorators import permission_required
from django.db.models import Sum
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from brokerd.client.errors import KafkaClientError
from dashboard.core import snapshots, throughput
from dashboard.core.admin_api import AdminApi, AdminApiError
from dashboard.core.kafka import with_cluster
from dashboard.core.models import Cluster, HistorySample
from dashboard.core.roles import VIEW_PERMISSION

from ..api.resources import TOPIC_NAME
from . import platform_status

HISTORY_WINDOW = datetime.timedelta(hours=6)
HISTORY_POINTS = 2000


def _cluster(cluster_id: str | None) -> Cluster | None:
    if cluster_id is not None:
        return get_object_or_404(Cluster, name=cluster_id)
    return Cluster.objects.first()


def throughput_charts(cluster: Cluster, broker: int | None = None) -> dict:
    """The cluster's (or one broker's) recorded bytes in/out and records in per second."""
    return {
        "throughput_bytes": throughput.history_chart(
            cluster, throughput.BYTES_SERIES, "bytes", broker=broker
        ),
        "throughput_records": throughput.history_chart(
            cluster, {"records in/s": "records_in"}, "records", broker=broker
        ),
    }


@permission_required(VIEW_PERMISSION, raise_exception=True)
def overview(request, cluster_id: str | None = None):
    cluster = _cluster(cluster_id)
    snapshot, error = None, None
    if cluster is not None:
        try:
            admin = AdminApi(cluster, timeout=2.0)
            snapshot = with_cluster(cluster, lambda ops: snapshots.cluster_overview(ops, admin))
        except KafkaClientError as exc:
            error = f"cluster unreachable: {exc}"
    return render(
        request,
        "live/overview.html",
        {
            "cluster": cluster,
            "clusters": Cluster.objects.all(),
            "snapshot": snapshot,
            "platform": platform_status.read(cluster.name) if cluster is not None else None,
            "error": error,
            **(throughput_charts(cluster) if cluster is not None else {}),
        },
    )


def lag_history(cluster: Cluster, group_id: str) -> list[list[float]]:
    """[[unix seconds, total lag], ...] of the recorded samples, oldest first."""
    since = timezone.now() - HISTORY_WINDOW
    points = (
        HistorySample.objects.filter(
            cluster=cluster, kind=HistorySample.Kind.LAG, group=group_id, timestamp__gte=since
        )
        .values("timestamp")
        .annotate(total=Sum("value"))
        .order_by("-timestamp")[:HISTORY_POINTS]
    )
    return [[p["timestamp"].timestamp(), p["total"]] for p in reversed(points)]


def throughput_history(cluster: Cluster, topic: str) -> list[list[float]]:
    """[[unix seconds, records/s], ...] of a topic's recorded samples, oldest first."""
    since = timezone.now() - HISTORY_WINDOW
    points = (
        HistorySample.objects.filter(
            cluster=cluster, kind=HistorySample.Kind.THROUGHPUT, topic=topic, timestamp__gte=since
        )
        .values_list("timestamp", "value")
        .order_by("-timestamp")[:HISTORY_POINTS]
    )
    return [[moment.timestamp(), value] for moment, value in reversed(points)]


@permission_required(VIEW_PERMISSION, raise_exception=True)
def segments(request, cluster_id: str, topic_name: str, partition_id: int):
    cluster = _cluster(cluster_id)
    if not TOPIC_NAME.match(topic_name):
        raise Http404("no such topic")
    admin = AdminApi(cluster)
    view, error = None, None
    try:
        view = with_cluster(
            cluster,
            lambda ops: snapshots.partition_segments(ops, admin, topic_name, partition_id),
        )
    except (KafkaClientError, AdminApiError) as exc:
        error = str(exc)
    return render(
        request,
        "live/segments.html",
        {
            "cluster": cluster,
            "topic_name": topic_name,
            "partition_id": partition_id,
            "view": view,
            "error": error,
        },
    )
