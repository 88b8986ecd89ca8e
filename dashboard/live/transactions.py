"""A cluster's transactions page: every transactional id with its state, producer id and
epoch, coordinator, open partitions and the open transaction's age (ListTransactions, then
DescribeTransactions on each coordinator, as kafka-transactions.sh list / describe), kept
current by transactions.js polling the REST listing."""

from __future__ import annotations

from django.shortcuts import get_object_or_404, render

from brokerd.client.errors import KafkaClientError
from dashboard.core import transactions
from dashboard.core.kafka import error_text, with_cluster
from dashboard.core.models import Cluster


def page(request, cluster_id: str):
    cluster = get_object_or_404(Cluster, name=cluster_id)
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
        },
    )
