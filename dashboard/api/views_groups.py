"""Consumer groups: /api/v3/clusters/{id}/consumer-groups[/{group}[/consumers|lags|...]] in
REST Proxy v3's layout, plus what v3 lacks: offset reset (dry-run or executed) and deletion."""

from __future__ import annotations

from urllib.parse import quote

from django.http import Http404
from rest_framework import status
from rest_framework.response import Response

from dashboard.core import groups
from dashboard.core.kafka import with_cluster
from dashboard.core.models import Cluster

from .base import ApiView, api_doc
from .resources import check_topic_name, crn, get_cluster, listing, related, resource, url
from .serializers import GROUP_ID_MAX, GroupPageQuerySerializer, OffsetResetSerializer


def check_group_id(group_id: str) -> str:
    if not group_id or len(group_id) > GROUP_ID_MAX:
        raise Http404(f"consumer group {group_id!r} not found")
    return group_id


def _base(cluster: Cluster, group_id: str) -> str:
    return f"/clusters/{cluster.name}/consumer-groups/{quote(group_id, safe='')}"


def group_resource(request, cluster: Cluster, summary: dict) -> dict:
    group_id = summary["consumer_group_id"]
    base = _base(cluster, group_id)
    coordinator = summary["coordinator_id"]
    return resource(
        request,
        "KafkaConsumerGroup",
        base,
        crn(cluster, f"consumer-group={group_id}"),
        cluster_id=cluster.name,
        consumer_group_id=group_id,
        is_simple=summary["is_simple"],
        partition_assignor=summary["partition_assignor"],
        # Kafka's GroupType (ListGroups v5): CLASSIC, or CONSUMER for a KIP-848 group.
        type=summary["type"].upper(),
        state=groups.rest_state(summary["state"]),
        coordinator=(
            related(request, f"/clusters/{cluster.name}/brokers/{coordinator}")
            if coordinator is not None
            else None
        ),
        consumers=related(request, f"{base}/consumers"),
        lag_summary=related(request, f"{base}/lag-summary"),
        lags=related(request, f"{base}/lags"),
    )


def consumer_resource(request, cluster: Cluster, group_id: str, member: dict) -> dict:
    path = f"{_base(cluster, group_id)}/consumers/{quote(member['consumer_id'], safe='')}"
    return resource(
        request,
        "KafkaConsumer",
        path,
        crn(cluster, f"consumer-group={group_id}", f"consumer={member['consumer_id']}"),
        cluster_id=cluster.name,
        consumer_group_id=group_id,
        **member,
    )


def lag_resource(request, cluster: Cluster, group_id: str, row: dict) -> dict:
    t, p = row["topic_name"], row["partition_id"]
    return resource(
        request,
        "KafkaConsumerLag",
        f"{_base(cluster, group_id)}/lags/{t}/partitions/{p}",
        crn(cluster, f"consumer-group={group_id}", f"lag={t}", f"partition={p}"),
        cluster_id=cluster.name,
        consumer_group_id=group_id,
        **row,
    )


def _snapshot(cluster: Cluster, group_id: str) -> dict:
    check_group_id(group_id)
    return with_cluster(cluster, lambda ops: groups.group_snapshot(ops.admin, group_id))


class GroupList(ApiView):
    @api_doc(
        summary="Consumer groups, sorted by id, a page at a time",
        operation_id="listConsumerGroups",
        parameters=[GroupPageQuerySerializer],
    )
    def get(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        page = GroupPageQuerySerializer(data=request.query_params)
        page.is_valid(raise_exception=True)
        size, after = page.validated_data["page_size"], page.validated_data["page_token"]
        summaries, more = with_cluster(
            cluster, lambda ops: groups.group_page(ops.admin, after, size)
        )
        path = f"/clusters/{cluster.name}/consumer-groups"
        next_url = None
        if more:
            last = quote(summaries[-1]["consumer_group_id"], safe="")
            next_url = f"{url(request, path)}?page_size={size}&page_token={last}"
        data = [group_resource(request, cluster, s) for s in summaries]
        return Response(listing(request, "KafkaConsumerGroupList", path, data, next_url))


class GroupDetail(ApiView):
    @api_doc(summary="A consumer group", operation_id="getConsumerGroup")
    def get(self, request, cluster_id: str, group_id: str):
        cluster = get_cluster(cluster_id)
        check_group_id(group_id)
        summary = with_cluster(
            cluster,
            lambda ops: _summary(ops.admin, group_id),
        )
        return Response(group_resource(request, cluster, summary))

    @api_doc(summary="Delete an inactive consumer group", responses={204: None})
    def delete(self, request, cluster_id: str, group_id: str):
        cluster = get_cluster(cluster_id)
        check_group_id(group_id)
        self.audited(
            cluster,
            "group.delete",
            group_id,
            {},
            lambda: with_cluster(cluster, lambda ops: groups.delete_group(ops.admin, group_id)),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


async def _summary(admin, group_id: str) -> dict:
    return groups.group_summary(group_id, await groups.describe(admin, group_id))


class ConsumerList(ApiView):
    @api_doc(summary="The members of a consumer group", operation_id="listConsumers")
    def get(self, request, cluster_id: str, group_id: str):
        cluster = get_cluster(cluster_id)
        snapshot = _snapshot(cluster, group_id)
        data = [consumer_resource(request, cluster, group_id, m) for m in snapshot["member_list"]]
        path = f"{_base(cluster, group_id)}/consumers"
        return Response(listing(request, "KafkaConsumerList", path, data))


class ConsumerDetail(ApiView):
    @api_doc(summary="One member of a consumer group", operation_id="getConsumer")
    def get(self, request, cluster_id: str, group_id: str, consumer_id: str):
        cluster = get_cluster(cluster_id)
        snapshot = _snapshot(cluster, group_id)
        for member in snapshot["member_list"]:
            if member["consumer_id"] == consumer_id:
                return Response(consumer_resource(request, cluster, group_id, member))
        raise Http404(f"consumer {consumer_id!r} not found in group {group_id!r}")


class LagList(ApiView):
    @api_doc(
        summary="Per partition: committed offset, log end offset (HW), lag and owner",
        operation_id="listConsumerLags",
    )
    def get(self, request, cluster_id: str, group_id: str):
        cluster = get_cluster(cluster_id)
        snapshot = _snapshot(cluster, group_id)
        data = [lag_resource(request, cluster, group_id, r) for r in snapshot["lags"]]
        path = f"{_base(cluster, group_id)}/lags"
        return Response(listing(request, "KafkaConsumerLagList", path, data))


class LagDetail(ApiView):
    @api_doc(summary="The lag of one partition", operation_id="getConsumerLag")
    def get(self, request, cluster_id: str, group_id: str, topic_name: str, partition_id: int):
        cluster = get_cluster(cluster_id)
        snapshot = _snapshot(cluster, group_id)
        for row in snapshot["lags"]:
            if (row["topic_name"], row["partition_id"]) == (topic_name, partition_id):
                return Response(lag_resource(request, cluster, group_id, row))
        raise Http404(f"group {group_id!r} has no offset for {topic_name}-{partition_id}")


class LagSummary(ApiView):
    @api_doc(summary="Total and maximum lag of a group", operation_id="getConsumerGroupLagSummary")
    def get(self, request, cluster_id: str, group_id: str):
        cluster = get_cluster(cluster_id)
        snapshot = _snapshot(cluster, group_id)
        summary = snapshot["lag_summary"]
        base = _base(cluster, group_id)
        worst_consumer = summary["max_lag_consumer_id"]
        worst_topic = summary["max_lag_topic_name"]
        body = resource(
            request,
            "KafkaConsumerGroupLagSummary",
            f"{base}/lag-summary",
            crn(cluster, f"consumer-group={group_id}", "lag-summary"),
            cluster_id=cluster.name,
            consumer_group_id=group_id,
            **summary,
            max_lag_consumer=(
                related(request, f"{base}/consumers/{quote(worst_consumer, safe='')}")
                if worst_consumer
                else None
            ),
            max_lag_partition=(
                related(
                    request,
                    f"/clusters/{cluster.name}/topics/{worst_topic}/partitions/"
                    f"{summary['max_lag_partition_id']}",
                )
                if worst_topic
                else None
            ),
        )
        return Response(body)


class OffsetReset(ApiView):
    @api_doc(
        summary="Reset an inactive group's offsets to earliest, latest, a time, an offset or "
        "shifted by N (dry_run: only plan)",
        request=OffsetResetSerializer,
        operation_id="resetConsumerGroupOffsets",
    )
    def post(self, request, cluster_id: str, group_id: str):
        cluster = get_cluster(cluster_id)
        check_group_id(group_id)
        body = OffsetResetSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        spec = body.validated_data
        reset = groups.ResetRequest(
            to=spec["to"],
            value=spec.get("timestamp", spec.get("offset", spec.get("shift_by"))),
            topics=tuple(
                (t["topic_name"], tuple(t["partitions"]) if t.get("partitions") else None)
                for t in spec.get("topics", [])
            ),
            dry_run=spec["dry_run"],
        )

        def run():
            return with_cluster(
                cluster, lambda ops: groups.reset_offsets(ops.admin, group_id, reset)
            )

        if reset.dry_run:
            rows = run()
        else:
            rows = self.audited(cluster, "group.offsets.reset", group_id, dict(request.data), run)
        return Response(
            {
                "kind": "KafkaConsumerGroupOffsetReset",
                "metadata": {"self": url(request, f"{_base(cluster, group_id)}/offsets:reset")},
                "consumer_group_id": group_id,
                "dry_run": reset.dry_run,
                "data": rows,
            }
        )


class TopicOffsets(ApiView):
    @api_doc(
        summary="Delete the group's committed offsets of a topic (OffsetDelete; refused while "
        "a member is subscribed to it)",
        responses={204: None},
        operation_id="deleteConsumerGroupTopicOffsets",
    )
    def delete(self, request, cluster_id: str, group_id: str, topic_name: str):
        cluster = get_cluster(cluster_id)
        check_group_id(group_id)
        check_topic_name(topic_name)
        deleted = self.audited(
            cluster,
            "group.offsets.delete",
            group_id,
            {"topic_name": topic_name},
            lambda: with_cluster(
                cluster, lambda ops: groups.delete_topic_offsets(ops.admin, group_id, topic_name)
            ),
        )
        if not deleted:
            raise Http404(f"group {group_id!r} has no committed offsets for {topic_name!r}")
        return Response(status=status.HTTP_204_NO_CONTENT)
