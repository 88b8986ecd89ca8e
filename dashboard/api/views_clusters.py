"""Clusters and brokers: /api/v3/clusters[/{cluster_id}[/brokers[/{broker_id}]]]."""

from __future__ import annotations

from django.http import Http404
from rest_framework.response import Response

from dashboard.core.kafka import with_cluster
from dashboard.core.models import Cluster

from .base import ApiView, api_doc
from .resources import crn, get_cluster, listing, related, resource


def cluster_resource(request, cluster: Cluster, metadata=None) -> dict:
    base = f"/clusters/{cluster.name}"
    fields = {
        "cluster_id": cluster.name,
        "bootstrap_servers": cluster.bootstrap_servers,
        "brokers": related(request, f"{base}/brokers"),
        "topics": related(request, f"{base}/topics"),
        "consumer_groups": related(request, f"{base}/consumer-groups"),
    }
    if metadata is not None:
        fields["kafka_cluster_id"] = metadata.cluster_id
        fields["controller"] = (
            related(request, f"{base}/brokers/{metadata.controller_id}")
            if metadata.controller_id >= 0
            else None
        )
    return resource(request, "KafkaCluster", base, crn(cluster), **fields)


def known_broker_ids(metadata) -> set[int]:
    """Live brokers plus any broker a partition still names (those are down)."""
    ids = set(metadata.brokers)
    for topic in metadata.topics.values():
        for partition in topic.partitions.values():
            ids.update(partition.replicas)
    return ids


def broker_resource(request, cluster: Cluster, metadata, broker_id: int) -> dict:
    info = metadata.brokers.get(broker_id)
    base = f"/clusters/{cluster.name}/brokers/{broker_id}"
    return resource(
        request,
        "KafkaBroker",
        base,
        crn(cluster, f"broker={broker_id}"),
        cluster_id=cluster.name,
        broker_id=broker_id,
        host=info.host if info else None,
        port=info.port if info else None,
        rack=info.rack if info else None,
        is_up=info is not None,
        is_controller=broker_id == metadata.controller_id,
    )


class ClusterList(ApiView):
    @api_doc("List the clusters the platform watches", operation_id="listClusters")
    def get(self, request):
        data = [cluster_resource(request, c) for c in Cluster.objects.all()]
        return Response(listing(request, "KafkaClusterList", "/clusters", data))


class ClusterDetail(ApiView):
    @api_doc("A cluster, with its Kafka cluster id and controller", operation_id="getCluster")
    def get(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        metadata = with_cluster(cluster, lambda ops: ops.refresh([]))
        return Response(cluster_resource(request, cluster, metadata))


class BrokerList(ApiView):
    @api_doc(
        "Brokers: live ones from Metadata, down ones still named by replicas",
        operation_id="listBrokers",
    )
    def get(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        metadata = with_cluster(cluster, lambda ops: ops.refresh())
        data = [
            broker_resource(request, cluster, metadata, b)
            for b in sorted(known_broker_ids(metadata))
        ]
        return Response(
            listing(request, "KafkaBrokerList", f"/clusters/{cluster.name}/brokers", data)
        )


class BrokerDetail(ApiView):
    @api_doc("One broker", operation_id="getBroker")
    def get(self, request, cluster_id: str, broker_id: int):
        cluster = get_cluster(cluster_id)
        metadata = with_cluster(cluster, lambda ops: ops.refresh())
        if broker_id not in known_broker_ids(metadata):
            raise Http404(f"broker {broker_id} not found")
        return Response(broker_resource(request, cluster, metadata, broker_id))
