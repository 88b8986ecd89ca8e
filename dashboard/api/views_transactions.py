"""Transactions: /api/v3/clusters/{cluster_id}/transactions[/{transactional_id}].

REST Proxy v3 has no transactions resource; this one keeps its conventions (kind,
metadata.self, listings under data). The listing is ListTransactions on every broker with
each id described by its coordinator (DescribeTransactions), filtered by `?state=` (Kafka's
state names, repeatable); one id answers 404 when its coordinator does not know it
(TRANSACTIONAL_ID_NOT_FOUND). Viewers may read; operators may abort an Ongoing transaction:
POST .../transactions/{transactional_id}:abort (REST v3's action style, as configs:alter),
which fences the id's producer as kafka-transactions.sh force-terminate does and answers
the id afterwards (the fence succeeds once the abort is written: Empty under a new epoch);
409 when nothing is Ongoing.
"""

from __future__ import annotations

from django.http import Http404
from rest_framework import serializers
from rest_framework.response import Response

from dashboard.core import transactions
from dashboard.core.kafka import with_cluster
from dashboard.core.models import Cluster

from .base import ApiView, api_doc
from .resources import crn, get_cluster, related, resource, url

ID_MAX = 32767  # a Kafka string's length bound


class StateQuerySerializer(serializers.Serializer):
    state = serializers.ListField(
        child=serializers.ChoiceField(transactions.STATES), required=False
    )


def transaction_resource(request, cluster: Cluster, row: dict) -> dict:
    tid = row["transactional_id"]
    base = f"/clusters/{cluster.name}"
    return resource(
        request,
        "KafkaTransaction",
        f"{base}/transactions/{tid}",
        crn(cluster, f"transactional-id={tid}"),
        cluster_id=cluster.name,
        **row,
        coordinator=related(request, f"{base}/brokers/{row['coordinator_id']}"),
    )


class TransactionList(ApiView):
    @api_doc(
        "Transactional ids with state, producer id/epoch, coordinator and open partitions",
        operation_id="listTransactions",
        parameters=[StateQuerySerializer],
    )
    def get(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        query = StateQuerySerializer(data={"state": request.query_params.getlist("state")})
        query.is_valid(raise_exception=True)
        states = query.validated_data.get("state") or ()
        found = with_cluster(cluster, lambda ops: transactions.list_transactions(ops, states))
        data = [transaction_resource(request, cluster, r) for r in found["transactions"]]
        return Response(
            {
                "kind": "KafkaTransactionList",
                "metadata": {
                    "self": url(request, f"/clusters/{cluster.name}/transactions"),
                    "next": None,
                    "total": found["total"],
                },
                "data": data,
            }
        )


class TransactionDetail(ApiView):
    @api_doc("One transactional id, from its coordinator", operation_id="getTransaction")
    def get(self, request, cluster_id: str, transactional_id: str):
        cluster = get_cluster(cluster_id)
        if len(transactional_id) > ID_MAX:
            raise Http404("transactional id too long")
        row = with_cluster(
            cluster, lambda ops: transactions.describe_transaction(ops, transactional_id)
        )
        return Response(transaction_resource(request, cluster, row))


class TransactionAbort(ApiView):
    @api_doc(
        "Abort the id's ongoing transaction: its producer is fenced with a new epoch "
        "(kafka-transactions.sh force-terminate); 409 if no transaction is ongoing",
        operation_id="abortTransaction",
        request=None,
    )
    def post(self, request, cluster_id: str, transactional_id: str):
        cluster = get_cluster(cluster_id)
        if len(transactional_id) > ID_MAX:
            raise Http404("transactional id too long")
        row = self.audited(
            cluster,
            "transaction.abort",
            transactional_id,
            {},
            lambda: with_cluster(
                cluster, lambda ops: transactions.abort_transaction(ops, transactional_id)
            ),
        )
        return Response(transaction_resource(request, cluster, row))
