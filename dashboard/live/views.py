"""Live pages: rendered once with a fresh snapshot, then kept current over a WebSocket."""

from __future__ import annotations

from django.contrib.auth.decorators import permission_required
from django.http import Http404
from django.shortcuts import get_object_or_404, render

from brokerd.client.errors import KafkaClientError
from dashboard.core import snapshots
from dashboard.core.admin_api import AdminApi, AdminApiError
from dashboard.core.kafka import with_cluster
from dashboard.core.models import Cluster
from dashboard.core.roles import VIEW_PERMISSION

from ..api.resources import TOPIC_NAME


def _cluster(cluster_id: str | None) -> Cluster | None:
    if cluster_id is not None:
        return get_object_or_404(Cluster, name=cluster_id)
    return Cluster.objects.first()


@permission_required(VIEW_PERMISSION, raise_exception=True)
def overview(request, cluster_id: str | None = None):
    cluster = _cluster(cluster_id)
    snapshot, error = None, None
    if cluster is not None:
        try:
            snapshot = snapshots.overview(with_cluster(cluster, lambda ops: ops.refresh()))
        except KafkaClientError as exc:
            error = f"cluster unreachable: {exc}"
    return render(
        request,
        "live/overview.html",
        {
            "cluster": cluster,
            "clusters": Cluster.objects.all(),
            "snapshot": snapshot,
            "error": error,
        },
    )


@permission_required(VIEW_PERMISSION, raise_exception=True)
def topic(request, cluster_id: str, topic_name: str):
    cluster = _cluster(cluster_id)
    if not TOPIC_NAME.match(topic_name):
        raise Http404("no such topic")
    admin = AdminApi(cluster)
    partitions, error = [], None
    try:
        partitions = with_cluster(
            cluster, lambda ops: snapshots.topic_partitions(ops, admin, topic_name)
        )
    except (KafkaClientError, AdminApiError) as exc:
        error = str(exc)
    return render(
        request,
        "live/topic.html",
        {"cluster": cluster, "topic_name": topic_name, "partitions": partitions, "error": error},
    )
