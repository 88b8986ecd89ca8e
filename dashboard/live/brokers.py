"""A broker's configs page: every config (static from server.properties, dynamic per broker
or cluster-wide, Kafka's defaults) with its source and documentation line; operators set or
reset a dynamic per-broker value through IncrementalAlterConfigs, the broker's refusal beside
the form with what was typed (HTTP 400), a success with a message."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render

from brokerd.client.errors import KafkaClientError
from dashboard.core import audit
from dashboard.core.broker_view import broker_view
from dashboard.core.kafka import error_text, with_cluster
from dashboard.core.models import Cluster
from dashboard.core.roles import OPERATE_PERMISSION, VIEW_PERMISSION

from .views import throughput_charts

MAX_CONFIG_VALUE = 10_000
SOURCES = {
    "DYNAMIC_BROKER_CONFIG": "dynamic (this broker)",
    "DYNAMIC_DEFAULT_BROKER_CONFIG": "dynamic (cluster default)",
    "STATIC_BROKER_CONFIG": "server.properties",
    "DEFAULT_CONFIG": "default",
}


def _rows(entries: list[dict]) -> list[dict]:
    return [
        {
            **e,
            "source_label": SOURCES.get(e["source"], e["source"].lower()),
            "is_override": e["source"] == "DYNAMIC_BROKER_CONFIG",
        }
        for e in sorted(entries, key=lambda e: e["name"])
    ]


def _render(request, cluster: Cluster, broker_id: int, status=200, edit=None):
    rows, error = [], None
    try:
        rows = _rows(with_cluster(cluster, lambda ops: ops.describe_broker_configs(broker_id)))
    except KafkaClientError as exc:
        error = f"could not describe broker {broker_id}'s configs: {error_text(exc)}"
    return render(
        request,
        "live/broker_configs.html",
        {
            "cluster": cluster,
            "broker_id": broker_id,
            "rows": rows,
            "dynamic": sum(1 for r in rows if r["is_override"]),
            "error": error,
            "edit": edit,
            "edit_elsewhere": edit is not None and all(r["name"] != edit["name"] for r in rows),
        },
        status=status,
    )


@permission_required(VIEW_PERMISSION, raise_exception=True)
def broker_configs(request, cluster_id: str, broker_id: int):
    cluster = get_object_or_404(Cluster, name=cluster_id)
    if request.method != "POST":
        return _render(request, cluster, broker_id)
    if not request.user.has_perm(OPERATE_PERMISSION):
        raise PermissionDenied("changing configs needs the operator role")
    name = request.POST.get("name", "")[:255]
    value = request.POST.get("value", "")[: MAX_CONFIG_VALUE + 1]
    reset = request.POST.get("action") == "reset"
    change = (name, "DELETE", None) if reset else (name, "SET", value)
    edit = {"name": name, "value": value}
    details = {"name": name, "operation": change[1], "value": change[2]}
    target = f"broker {broker_id}"
    if not name or len(value) > MAX_CONFIG_VALUE:
        error = "which config?" if not name else f"at most {MAX_CONFIG_VALUE} characters"
        return _render(request, cluster, broker_id, 400, {**edit, "error": error})
    try:
        with_cluster(cluster, lambda ops: ops.alter_broker_configs(broker_id, [change]))
    except KafkaClientError as exc:
        error = error_text(exc)
        audit.record(request.user, "broker.configs.alter", target, cluster=cluster,
                     details=details, succeeded=False, result=error)  # fmt: skip
        return _render(request, cluster, broker_id, 400, {**edit, "error": error})
    audit.record(request.user, "broker.configs.alter", target, cluster=cluster,
                 details=details, succeeded=True, result="ok")  # fmt: skip
    words = f"{name} reset" if reset else f"{name} set to {value}"
    messages.success(request, f"Broker {broker_id}: {words}.")
    return redirect("broker-configs", cluster.name, broker_id)


@permission_required(VIEW_PERMISSION, raise_exception=True)
def broker_page(request, cluster_id: str, broker_id: int):
    """The broker's log dirs (size, usage, offline) and the partitions it leads and follows."""
    cluster = get_object_or_404(Cluster, name=cluster_id)
    view, error = None, None
    try:
        view = with_cluster(cluster, lambda ops: broker_view(ops, broker_id))
    except KafkaClientError as exc:
        error = f"cluster unreachable: {error_text(exc)}"
    if view is not None and not view["up"] and not view["led_count"] + view["followed_count"]:
        raise Http404(f"broker {broker_id} is not in the cluster")
    return render(
        request,
        "live/broker.html",
        {
            "cluster": cluster,
            "broker_id": broker_id,
            "view": view,
            "error": error,
            **throughput_charts(cluster, broker_id),
        },
    )
