"""A cluster's transactions page: every transactional id with its state, producer id and
epoch, coordinator, open partitions and the open transaction's age (ListTransactions, then
DescribeTransactions on each coordinator, as kafka-transactions.sh list / describe), kept
current by transactions.js polling the REST listing.

Operators abort an Ongoing transaction from its row: "Abort…" asks for the transactional id
to be typed again, then fences the id's producer (kafka-transactions.sh force-terminate,
dashboard.core.transactions.abort_transaction) and records it in the audit log."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from brokerd.client.errors import KafkaClientError
from dashboard.core import audit, transactions
from dashboard.core.kafka import error_text, with_cluster
from dashboard.core.models import Cluster
from dashboard.core.roles import OPERATE_PERMISSION, VIEW_PERMISSION

ID_MAX = 32767  # a Kafka string's length bound


def _render(request, cluster: Cluster, status: int = 200, **extra):
    state = request.GET.get("state", "")
    states = [state] if state in transactions.STATES else []
    try:
        found = with_cluster(cluster, lambda ops: transactions.list_transactions(ops, states))
        error = None
    except KafkaClientError as exc:
        found = {"transactions": [], "total": 0, "taken_at_ms": None}
        error = error_text(exc)
    return render(
        request,
        "live/transactions.html",
        {
            "cluster": cluster,
            "rows": found["transactions"],
            "total": found["total"],
            "error": error,
            "state": state if states else "",
            "states": transactions.STATES,
            "shown_max": transactions.TRANSACTIONS_SHOWN,
            "abortable": transactions.ABORTABLE_STATES,
            **extra,
        },
        status=status,
    )


@permission_required(VIEW_PERMISSION, raise_exception=True)
def page(request, cluster_id: str):
    cluster = get_object_or_404(Cluster, name=cluster_id)
    extra = {}
    asked = request.GET.get("abort", "")[: ID_MAX + 1]
    if asked and request.user.has_perm(OPERATE_PERMISSION):
        extra["abort_id"] = asked  # the confirmation panel for this id
    return _render(request, cluster, **extra)


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def abort(request, cluster_id: str):
    """Aborts the id's Ongoing transaction once the id is typed again to confirm."""
    cluster = get_object_or_404(Cluster, name=cluster_id)
    tid = request.POST.get("transactional_id", "")[: ID_MAX + 1]
    typed = request.POST.get("confirm", "")[: ID_MAX + 1]
    if not tid or len(tid) > ID_MAX:
        return _render(request, cluster, 400, abort_error="no transactional id to abort")
    if typed != tid:
        error = f"type the transactional id, {tid}, to abort its transaction"
        return _render(request, cluster, 400, abort_id=tid, abort_error=error, confirm=typed)
    try:
        row = with_cluster(cluster, lambda ops: transactions.abort_transaction(ops, tid))
    except (KafkaClientError, transactions.NoTransactionToAbort) as exc:
        text = str(exc) if isinstance(exc, transactions.NoTransactionToAbort) else error_text(exc)
        error = f"could not abort the transaction of {tid}: {text}"
        audit.record(request.user, "transaction.abort", tid, cluster=cluster, details={},
                     succeeded=False, result=error)  # fmt: skip
        status = 409 if isinstance(exc, transactions.NoTransactionToAbort) else 400
        return _render(request, cluster, status, abort_id=tid, abort_error=error, confirm=typed)
    audit.record(request.user, "transaction.abort", tid, cluster=cluster, details={},
                 succeeded=True, result="ok")  # fmt: skip
    messages.success(
        request,
        f"The transaction of {tid} is aborted: producer {row['producer_id']} is fenced "
        f"(epoch now {row['producer_epoch']}).",
    )
    return redirect("transactions-page", cluster.name)
