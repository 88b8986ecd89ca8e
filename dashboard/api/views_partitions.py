"""Partitions, replicas and segments of a topic (HW and per-replica LEO included)."""

from __future__ import annotations

from django.http import Http404
from rest_framework.response import Response

from dashboard.core import snapshots
from dashboard.core.admin_api import AdminApi, AdminApiError
from dashboard.core.kafka import with_cluster
from dashboard.core.models import Cluster

from .base import ApiView, api_doc
from .resources import check_topic_name, crn, get_cluster, listing, related, resource


def load_partitions(cluster: Cluster, topic_name: str) -> list[dict]:
    check_topic_name(topic_name)
    admin = AdminApi(cluster)
    return with_cluster(cluster, lambda ops: snapshots.topic_partitions(ops, admin, topic_name))


def find(partitions: list[dict], partition_id: int) -> dict:
    for p in partitions:
        if p["partition_id"] == partition_id:
            return p
    raise Http404(f"partition {partition_id} not found")


def partition_resource(request, cluster: Cluster, topic_name: str, p: dict) -> dict:
    base = f"/clusters/{cluster.name}/topics/{topic_name}/partitions/{p['partition_id']}"
    fields = {k: v for k, v in p.items() if k != "replicas"}
    return resource(
        request,
        "KafkaPartition",
        base,
        crn(cluster, f"topic={topic_name}", f"partition={p['partition_id']}"),
        cluster_id=cluster.name,
        topic_name=topic_name,
        **fields,
        leader_link=related(request, f"{base}/replicas/{p['leader']}") if p["leader"] else None,
        replicas=related(request, f"{base}/replicas"),
        replica_states=p["replicas"],
        segments=related(request, f"{base}/segments"),
    )


def replica_resource(request, cluster: Cluster, topic_name: str, pid: int, r: dict) -> dict:
    base = (
        f"/clusters/{cluster.name}/topics/{topic_name}/partitions/{pid}/replicas/{r['broker_id']}"
    )
    return resource(
        request,
        "KafkaReplica",
        base,
        crn(cluster, f"topic={topic_name}", f"partition={pid}", f"replica={r['broker_id']}"),
        cluster_id=cluster.name,
        topic_name=topic_name,
        partition_id=pid,
        broker_id=r["broker_id"],
        is_leader=r["is_leader"],
        is_in_sync=r["in_sync"],
        is_up=r["up"],
        log_end_offset=r["log_end_offset"],
        size_bytes=r["size_bytes"],
        broker=related(request, f"/clusters/{cluster.name}/brokers/{r['broker_id']}"),
    )


class PartitionList(ApiView):
    @api_doc(
        "Partitions of a topic with leader, ISR, HW and per-replica LEO",
        operation_id="listPartitions",
    )
    def get(self, request, cluster_id: str, topic_name: str):
        cluster = get_cluster(cluster_id)
        data = [
            partition_resource(request, cluster, topic_name, p)
            for p in load_partitions(cluster, topic_name)
        ]
        path = f"/clusters/{cluster.name}/topics/{topic_name}/partitions"
        return Response(listing(request, "KafkaPartitionList", path, data))


class PartitionDetail(ApiView):
    @api_doc(
        "One partition: leader, replicas, ISR, HW, log start, LEO per replica",
        operation_id="getPartition",
    )
    def get(self, request, cluster_id: str, topic_name: str, partition_id: int):
        cluster = get_cluster(cluster_id)
        p = find(load_partitions(cluster, topic_name), partition_id)
        return Response(partition_resource(request, cluster, topic_name, p))


class ReplicaList(ApiView):
    @api_doc("Replicas of a partition", operation_id="listReplicas")
    def get(self, request, cluster_id: str, topic_name: str, partition_id: int):
        cluster = get_cluster(cluster_id)
        p = find(load_partitions(cluster, topic_name), partition_id)
        data = [
            replica_resource(request, cluster, topic_name, partition_id, r) for r in p["replicas"]
        ]
        path = f"/clusters/{cluster.name}/topics/{topic_name}/partitions/{partition_id}/replicas"
        return Response(listing(request, "KafkaReplicaList", path, data))


class ReplicaDetail(ApiView):
    @api_doc("One replica of a partition", operation_id="getReplica")
    def get(self, request, cluster_id: str, topic_name: str, partition_id: int, broker_id: int):
        cluster = get_cluster(cluster_id)
        p = find(load_partitions(cluster, topic_name), partition_id)
        for r in p["replicas"]:
            if r["broker_id"] == broker_id:
                return Response(replica_resource(request, cluster, topic_name, partition_id, r))
        raise Http404(f"broker {broker_id} holds no replica of partition {partition_id}")


class SegmentList(ApiView):
    @api_doc(
        "Log segments of a partition on its leader (from the admin API)",
        operation_id="listSegments",
    )
    def get(self, request, cluster_id: str, topic_name: str, partition_id: int):
        cluster = get_cluster(cluster_id)
        p = find(load_partitions(cluster, topic_name), partition_id)
        if p["leader"] is None:
            raise AdminApiError(503, f"partition {partition_id} has no leader")
        view = AdminApi(cluster).segments(p["leader"], topic_name, partition_id)
        path = f"/clusters/{cluster.name}/topics/{topic_name}/partitions/{partition_id}/segments"
        body = listing(request, "KafkaSegmentList", path, view.pop("segments", []))
        body.update(cluster_id=cluster.name, topic_name=topic_name, partition_id=partition_id)
        body["log"] = view
        return Response(body)
