"""The consumer group page and its actions: reset offsets (earliest, latest, a time, an offset,
shifted by N) with the dry-run preview core.groups computes for the REST API too, delete the
group's offsets of a topic (OffsetDelete), delete the group (after typing its id).

As on the topic pages, a refusal renders the page again with the error beside its form and
what was typed (HTTP 400); a success redirects with a message. Changes need the operator
role and are audited.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from brokerd.client.errors import KafkaClientError
from dashboard.core import audit, groups
from dashboard.core.kafka import error_text, with_cluster
from dashboard.core.models import Cluster
from dashboard.core.roles import OPERATE_PERMISSION, VIEW_PERMISSION

from ..api.resources import TOPIC_NAME
from ..api.serializers import GROUP_ID_MAX
from .messages import parse_time
from .views import lag_history

RESET_CHOICES = (
    ("earliest", "the earliest offset"),
    ("latest", "the latest offset (log end)"),
    ("timestamp", "the first record at or after a time"),
    ("offset", "an offset"),
    ("shift", "shifted by N (negative: back)"),
)
PREVIEW_ROWS = 1000


class FormError(ValueError):
    """What is wrong with a form, in words for the person who filled it in."""


def _group(cluster_id: str, group_id: str) -> Cluster:
    cluster = get_object_or_404(Cluster, name=cluster_id)
    if not group_id or len(group_id) > GROUP_ID_MAX:
        raise Http404("no such group")
    return cluster


def _record(request, cluster, action, target, details, error: str | None) -> None:
    audit.record(request.user, action, target, cluster=cluster, details=details,
                 succeeded=error is None, result=error or "ok")  # fmt: skip


def _render_group(request, cluster: Cluster, group_id: str, status=200, **forms):
    snapshot, error = None, None
    try:
        snapshot = with_cluster(cluster, lambda ops: groups.group_snapshot(ops.admin, group_id))
    except groups.GroupNotFound as exc:
        if request.method != "POST":
            raise Http404(str(exc)) from None
        error = str(exc)  # a preview of a group with no offsets yet, say
    except KafkaClientError as exc:
        error = error_text(exc)
    topics = sorted({r["topic_name"] for r in snapshot["lags"]}) if snapshot else []
    return render(
        request,
        "live/group.html",
        {
            "cluster": cluster,
            "group_id": group_id,
            "snapshot": snapshot,
            "history": lag_history(cluster, group_id),
            "error": error,
            "topics": topics,
            "reset_choices": RESET_CHOICES,
            "reset": forms.pop("reset", None) or {"to": "earliest"},
            **forms,
        },
        status=status,
    )


@permission_required(VIEW_PERMISSION, raise_exception=True)
def group(request, cluster_id: str, group_id: str):
    cluster = _group(cluster_id, group_id)
    return _render_group(request, cluster, group_id)


def parse_reset_form(form: dict[str, str], dry_run: bool) -> groups.ResetRequest:
    to = form["to"]
    if to not in groups.RESET_TARGETS:
        raise FormError("choose where to reset the offsets to")
    value = None
    text = form["value"].strip()
    if to == "timestamp":
        if not text:
            raise FormError("give a time: ISO 8601 (2024-05-01T12:00:00Z) or ms since the epoch")
        try:
            value = parse_time(text)
        except ValueError as exc:
            raise FormError(str(exc)) from None
    elif to in ("offset", "shift"):
        what = "an offset" if to == "offset" else "the number of offsets to shift by"
        try:
            value = int(text)
        except ValueError:
            raise FormError(f"give {what} (a whole number)") from None
        if to == "offset" and value < 0:
            raise FormError("an offset is 0 or more")
        if not -(2**63) <= value < 2**63:
            raise FormError(f"{what} is too large")
    topic = form["topic"].strip()
    if topic and (not TOPIC_NAME.match(topic) or topic in (".", "..")):
        raise FormError(f"{topic!r} is not a topic name")
    return groups.ResetRequest(
        to=to, value=value, topics=((topic, None),) if topic else (), dry_run=dry_run
    )


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def reset_offsets(request, cluster_id: str, group_id: str):
    """Preview (dry run) or execute an offset reset from the group page's form."""
    cluster = _group(cluster_id, group_id)
    form = {k: request.POST.get(k, "")[:300] for k in ("to", "value", "topic")}
    dry_run = request.POST.get("mode") != "execute"
    try:
        reset = parse_reset_form(form, dry_run)
    except FormError as exc:
        return _render_group(request, cluster, group_id, 400, reset=form, reset_error=str(exc))
    details = {"to": reset.to, "value": reset.value, "topic": form["topic"].strip() or None}
    try:
        rows = with_cluster(cluster, lambda ops: groups.reset_offsets(ops.admin, group_id, reset))
    except (groups.GroupNotInactive, groups.NothingToShift, KafkaClientError) as exc:
        error = error_text(exc)
        if not dry_run:
            _record(request, cluster, "group.offsets.reset", group_id, details, error)
        return _render_group(request, cluster, group_id, 400, reset=form, reset_error=error)
    if dry_run:
        if not rows:
            error = "the group has no committed offsets: choose a topic to reset"
            return _render_group(request, cluster, group_id, 400, reset=form, reset_error=error)
        for row in rows:
            row["changes"] = row["previous_offset"] != row["new_offset"]
        return _render_group(
            request, cluster, group_id, reset=form, preview=rows[:PREVIEW_ROWS],
            preview_more=max(0, len(rows) - PREVIEW_ROWS),
        )  # fmt: skip
    _record(request, cluster, "group.offsets.reset", group_id, details, None)
    messages.success(
        request, f"Reset the offsets of {len(rows)} partition{'s' if len(rows) != 1 else ''}."
    )
    return redirect("group-page", cluster.name, group_id)


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def delete_topic_offsets(request, cluster_id: str, group_id: str):
    cluster = _group(cluster_id, group_id)
    topic = request.POST.get("topic", "")[:300].strip()
    details = {"topic_name": topic}
    if not TOPIC_NAME.match(topic) or topic in (".", ".."):
        error = "choose a topic whose offsets to delete"
        return _render_group(request, cluster, group_id, 400, offsets_error=error)
    try:
        deleted = with_cluster(
            cluster, lambda ops: groups.delete_topic_offsets(ops.admin, group_id, topic)
        )
        if not deleted:
            raise FormError(f"the group has no committed offsets for {topic}")
    except (FormError, KafkaClientError) as exc:
        error = f"could not delete the offsets: {error_text(exc)}"
        _record(request, cluster, "group.offsets.delete", group_id, details, error)
        return _render_group(
            request, cluster, group_id, 400, offsets_error=error, offsets_topic=topic
        )
    _record(request, cluster, "group.offsets.delete", group_id, details, None)
    plural = "s" if deleted != 1 else ""
    messages.success(request, f"Deleted the committed offsets of {topic} ({deleted} partition{plural}).")  # fmt: skip
    return redirect("group-page", cluster.name, group_id)


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def delete_group(request, cluster_id: str, group_id: str):
    """Deletes the group (DeleteGroups) once its id is typed into the confirmation field."""
    cluster = _group(cluster_id, group_id)
    typed = request.POST.get("confirm", "")[: GROUP_ID_MAX + 1]
    if typed != group_id:
        error = f"type the group's id, {group_id}, to delete it"
        return _render_group(
            request, cluster, group_id, 400, delete_error=error, delete_confirm=typed
        )
    try:
        with_cluster(cluster, lambda ops: groups.delete_group(ops.admin, group_id))
    except (groups.GroupNotFound, KafkaClientError) as exc:
        error = f"could not delete {group_id}: {error_text(exc)}"
        _record(request, cluster, "group.delete", group_id, {}, error)
        return _render_group(
            request, cluster, group_id, 400, delete_error=error, delete_confirm=typed
        )
    _record(request, cluster, "group.delete", group_id, {}, None)
    messages.success(request, f"Consumer group {group_id} deleted.")
    return redirect("group-list", cluster.name)
