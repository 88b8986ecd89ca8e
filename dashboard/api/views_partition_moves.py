"""Leader elections and partition reassignments, answered by the cluster's controller.

REST Proxy v3 has reassignment reads (`/topics/-/partitions/-/reassignment`,
`/topics/{t}/partitions/-/reassignment`, `/topics/{t}/partitions/{p}/reassignment`); this API
adds starting (POST) and cancelling (DELETE) one, and leader elections, which v3 lacks:
`POST /topics/{t}/partitions/{p}:elect-leader` for one partition and
`POST /partitions:elect-leaders` for many (or all). Changes need the operator role and are
audited; Kafka's per-partition answers come back by name (`ELECTION_NOT_NEEDED`, ...).
"""

from __future__ import annotations

from django.http import Http404
from rest_framework import serializers, status
from rest_framework.response import Response

from brokerd.client.errors import ErrorCode, KafkaResponseError
from dashboard.core import partition_moves as moves
from dashboard.core.kafka import with_cluster
from dashboard.core.models import Cluster

from .base import ApiView, api_doc
from .resources import (
    TOPIC_NAME,
    check_topic_name,
    crn,
    get_cluster,
    listing,
    related,
    resource,
)
from .serializers import MAX_REPLICATION

MAX_ELECTION_PARTITIONS = 10_000
MAX_BROKER_ID = MAX_PARTITION_ID = 2**31 - 1
# Outcomes of an election that leave the partition led as asked.
ELECTION_DONE = (moves.ELECTED, "ELECTION_NOT_NEEDED")


class PartitionRefSerializer(serializers.Serializer):
    topic_name = serializers.RegexField(TOPIC_NAME.pattern, max_length=249)
    partition_id = serializers.IntegerField(min_value=0, max_value=MAX_PARTITION_ID)


class ElectionSerializer(serializers.Serializer):
    election_type = serializers.ChoiceField(
        choices=moves.ELECTION_TYPES,
        required=False,
        default="PREFERRED",
        help_text="PREFERRED: the first assigned replica leads again; UNCLEAN: elect a leader "
        "for a leaderless partition, out of the ISR if need be (may lose records)",
    )


class ElectionBatchSerializer(ElectionSerializer):
    partitions = PartitionRefSerializer(
        many=True,
        required=False,
        allow_empty=False,
        max_length=MAX_ELECTION_PARTITIONS,
        help_text="absent: every partition (only those whose leader moved are listed)",
    )


class ReassignmentSerializer(serializers.Serializer):
    replicas = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=MAX_BROKER_ID),
        allow_empty=False,
        max_length=MAX_REPLICATION,
        help_text="the target broker ids; the first becomes the preferred leader",
    )

    def validate_replicas(self, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise serializers.ValidationError("a broker may hold only one replica")
        return value


def partition_key(topic_name: str, partition_id: int) -> tuple[str, int]:
    """(topic, partition) of a path; what Kafka cannot hold (an id over int32) is not found."""
    check_topic_name(topic_name)
    if partition_id > MAX_PARTITION_ID:
        raise Http404(f"partition {partition_id} not found")
    return topic_name, partition_id


def _partition_path(cluster: Cluster, topic: str, partition: int) -> str:
    return f"/clusters/{cluster.name}/topics/{topic}/partitions/{partition}"


def _partition_resource(request, cluster: Cluster, kind: str, suffix: str, row: dict, **extra):
    path = _partition_path(cluster, row["topic_name"], row["partition_id"])
    return resource(
        request,
        kind,
        f"{path}{suffix}",
        crn(cluster, f"topic={row['topic_name']}", f"partition={row['partition_id']}"),
        cluster_id=cluster.name,
        **extra,
        **row,
        partition=related(request, path),
    )


def election_resource(request, cluster: Cluster, election_type: str, row: dict) -> dict:
    return _partition_resource(
        request, cluster, "KafkaLeaderElection", ":elect-leader", row, election_type=election_type
    )


def reassignment_resource(request, cluster: Cluster, row: dict) -> dict:
    return _partition_resource(request, cluster, "KafkaReassignment", "/reassignment", row)


class PartitionElectLeader(ApiView):
    @api_doc(
        "Elect a partition's leader: PREFERRED (hand leadership back to the first replica) "
        "or UNCLEAN",
        operation_id="electPartitionLeader",
        request=ElectionSerializer,
    )
    def post(self, request, cluster_id: str, topic_name: str, partition_id: int):
        cluster = get_cluster(cluster_id)
        key = partition_key(topic_name, partition_id)
        body = ElectionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        kind = body.validated_data["election_type"]

        def elect() -> dict:
            rows = with_cluster(cluster, lambda ops: moves.elect_leaders(ops.admin, kind, [key]))
            row = rows[0] if rows else None
            if row is None:
                raise KafkaResponseError(ErrorCode.unknown_topic_or_partition, None, key[0])
            if row["result"] not in ELECTION_DONE:
                raise KafkaResponseError(
                    row["error_code"], row["message"], f"{topic_name}-{partition_id}"
                )
            return row

        row = self.audited(
            cluster,
            f"partition.elect-leader.{kind.lower()}",
            f"{topic_name}-{partition_id}",
            {"election_type": kind},
            elect,
        )
        return Response(election_resource(request, cluster, kind, row))


class ElectLeaders(ApiView):
    @api_doc(
        "Elect leaders of many partitions (or all): one result per partition",
        operation_id="electLeaders",
        request=ElectionBatchSerializer,
    )
    def post(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        body = ElectionBatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        kind = body.validated_data["election_type"]
        refs = body.validated_data.get("partitions")
        keys = None if refs is None else [(r["topic_name"], r["partition_id"]) for r in refs]
        rows = self.audited(
            cluster,
            f"partitions.elect-leaders.{kind.lower()}",
            "all partitions" if keys is None else f"{len(set(keys))} partitions",
            {"election_type": kind, "partitions": None if keys is None else sorted(set(keys))},
            lambda: with_cluster(cluster, lambda ops: moves.elect_leaders(ops.admin, kind, keys)),
        )
        data = [election_resource(request, cluster, kind, row) for row in rows]
        path = f"/clusters/{cluster.name}/partitions:elect-leaders"
        return Response(listing(request, "KafkaLeaderElectionList", path, data))


def _reassignments(cluster: Cluster, topic: str | None = None) -> list[dict]:
    rows = with_cluster(cluster, lambda ops: moves.list_reassignments(ops.admin))
    return [r for r in rows if topic is None or r["topic_name"] == topic]


class AllReassignments(ApiView):
    @api_doc("Every reassignment in progress", operation_id="listAllReassignments")
    def get(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        data = [reassignment_resource(request, cluster, r) for r in _reassignments(cluster)]
        path = f"/clusters/{cluster.name}/topics/-/partitions/-/reassignment"
        return Response(listing(request, "KafkaReassignmentList", path, data))


class TopicReassignments(ApiView):
    @api_doc("A topic's reassignments in progress", operation_id="listTopicReassignments")
    def get(self, request, cluster_id: str, topic_name: str):
        cluster = get_cluster(cluster_id)
        check_topic_name(topic_name)
        rows = _reassignments(cluster, topic_name)
        data = [reassignment_resource(request, cluster, r) for r in rows]
        path = f"/clusters/{cluster.name}/topics/{topic_name}/partitions/-/reassignment"
        return Response(listing(request, "KafkaReassignmentList", path, data))


class PartitionReassignment(ApiView):
    @api_doc("A partition's reassignment in progress", operation_id="getReassignment")
    def get(self, request, cluster_id: str, topic_name: str, partition_id: int):
        cluster = get_cluster(cluster_id)
        row = self._ongoing(cluster, *partition_key(topic_name, partition_id))
        return Response(reassignment_resource(request, cluster, row))

    @staticmethod
    def _ongoing(cluster: Cluster, topic_name: str, partition_id: int) -> dict:
        key = (topic_name, partition_id)
        rows = with_cluster(cluster, lambda ops: moves.list_reassignments(ops.admin, [key]))
        if not rows:
            raise Http404(f"no reassignment of {topic_name}-{partition_id} is in progress")
        return rows[0]

    @api_doc(
        "Move a partition's replicas to other brokers (KIP-455); progress is GET",
        operation_id="reassignPartition",
        request=ReassignmentSerializer,
        responses={202: ReassignmentSerializer},
    )
    def post(self, request, cluster_id: str, topic_name: str, partition_id: int):
        cluster = get_cluster(cluster_id)
        key = partition_key(topic_name, partition_id)
        body = ReassignmentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        replicas = body.validated_data["replicas"]
        self.audited(
            cluster,
            "partition.reassign",
            f"{topic_name}-{partition_id}",
            {"replicas": replicas},
            lambda: with_cluster(cluster, lambda ops: moves.reassign(ops.admin, key, replicas)),
        )
        rows = with_cluster(cluster, lambda ops: moves.list_reassignments(ops.admin, [key]))
        # Already done (nothing to copy) when the controller no longer lists it.
        done = {"replicas": replicas, "target_replicas": replicas}
        row = (
            rows[0]
            if rows
            else {
                "topic_name": topic_name,
                "partition_id": partition_id,
                **done,
                "adding_replicas": [],
                "removing_replicas": [],
            }
        )
        return Response(
            reassignment_resource(request, cluster, row), status=status.HTTP_202_ACCEPTED
        )

    @api_doc(
        "Cancel a partition's reassignment: it goes back to its original replicas",
        operation_id="cancelReassignment",
        responses={204: None},
    )
    def delete(self, request, cluster_id: str, topic_name: str, partition_id: int):
        cluster = get_cluster(cluster_id)
        key = partition_key(topic_name, partition_id)
        self.audited(
            cluster,
            "partition.reassign.cancel",
            f"{topic_name}-{partition_id}",
            {},
            lambda: with_cluster(cluster, lambda ops: moves.reassign(ops.admin, key, None)),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
