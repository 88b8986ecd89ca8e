"""Topics and their configs: /api/v3/clusters/{id}/topics[/{topic}[/configs...]]."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter
from rest_framework import status
from rest_framework.response import Response

from dashboard.core.kafka import with_cluster
from dashboard.core.models import Cluster

from .base import ApiView, api_doc
from .resources import check_topic_name, crn, get_cluster, listing, related, resource, url
from .serializers import (
    ConfigAlterBatchSerializer,
    ConfigUpdateSerializer,
    PageQuerySerializer,
    TopicCreateSerializer,
)


def topic_resource(request, cluster: Cluster, info) -> dict:
    base = f"/clusters/{cluster.name}/topics/{info.name}"
    first = info.partitions.get(0) or next(iter(info.partitions.values()), None)
    return resource(
        request,
        "KafkaTopic",
        base,
        crn(cluster, f"topic={info.name}"),
        cluster_id=cluster.name,
        topic_name=info.name,
        is_internal=info.is_internal,
        replication_factor=len(first.replicas) if first else 0,
        partitions_count=len(info.partitions),
        partitions=related(request, f"{base}/partitions"),
        configs=related(request, f"{base}/configs"),
        records=related(request, f"{base}/records"),
    )


def describe(cluster: Cluster, topic_name: str):
    check_topic_name(topic_name)
    metadata = with_cluster(cluster, lambda ops: ops.refresh([topic_name]))
    info = metadata.topics.get(topic_name)
    if info is None:
        raise Http404(f"topic {topic_name!r} not found")
    return info


class TopicList(ApiView):
    @api_doc(
        summary="Topics, sorted by name, a page at a time",
        operation_id="listTopics",
        parameters=[PageQuerySerializer],
    )
    def get(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        page = PageQuerySerializer(data=request.query_params)
        page.is_valid(raise_exception=True)
        size, after = page.validated_data["page_size"], page.validated_data["page_token"]
        metadata = with_cluster(cluster, lambda ops: ops.refresh())
        names = sorted(n for n in metadata.topics if n > after)
        shown, rest = names[:size], names[size:]
        path = f"/clusters/{cluster.name}/topics"
        next_url = f"{url(request, path)}?page_size={size}&page_token={shown[-1]}" if rest else None
        data = [topic_resource(request, cluster, metadata.topics[n]) for n in shown]
        return Response(listing(request, "KafkaTopicList", path, data, next_url))

    @api_doc(summary="Create a topic", request=TopicCreateSerializer)
    def post(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        body = TopicCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        spec = body.validated_data
        name = spec["topic_name"]
        configs = {c["name"]: c["value"] for c in spec.get("configs", [])}

        def create():
            return with_cluster(
                cluster,
                lambda ops: _create_and_describe(
                    ops,
                    name,
                    spec.get("partitions_count", -1),
                    spec.get("replication_factor", -1),
                    configs,
                    spec["validate_only"],
                ),
            )

        info = self.audited(cluster, "topic.create", name, dict(request.data), create)
        if info is None:  # validate_only
            return Response({"topic_name": name, "validated": True}, status=status.HTTP_200_OK)
        return Response(topic_resource(request, cluster, info), status=status.HTTP_201_CREATED)


async def _create_and_describe(ops, name, partitions, replication, configs, validate_only):
    await ops.create_topic(name, partitions, replication, configs, validate_only)
    if validate_only:
        return None
    return (await ops.refresh([name])).topics.get(name)


class TopicDetail(ApiView):
    @api_doc(summary="A topic", operation_id="getTopic")
    def get(self, request, cluster_id: str, topic_name: str):
        cluster = get_cluster(cluster_id)
        return Response(topic_resource(request, cluster, describe(cluster, topic_name)))

    @api_doc(summary="Delete a topic", responses={204: None})
    def delete(self, request, cluster_id: str, topic_name: str):
        cluster = get_cluster(cluster_id)
        check_topic_name(topic_name)
        self.audited(
            cluster,
            "topic.delete",
            topic_name,
            {},
            lambda: with_cluster(cluster, lambda ops: ops.delete_topic(topic_name)),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


def config_resource(request, cluster: Cluster, topic_name: str, entry: dict) -> dict:
    path = f"/clusters/{cluster.name}/topics/{topic_name}/configs/{entry['name']}"
    return resource(
        request,
        "KafkaTopicConfig",
        path,
        crn(cluster, f"topic={topic_name}", f"config={entry['name']}"),
        cluster_id=cluster.name,
        topic_name=topic_name,
        **entry,
    )


def topic_configs(cluster: Cluster, topic_name: str) -> list[dict]:
    check_topic_name(topic_name)
    return with_cluster(cluster, lambda ops: ops.describe_topic_configs(topic_name))


class TopicConfigList(ApiView):
    @api_doc(
        summary="A topic's configs, with their sources and synonyms",
        operation_id="listTopicConfigs",
    )
    def get(self, request, cluster_id: str, topic_name: str):
        cluster = get_cluster(cluster_id)
        entries = topic_configs(cluster, topic_name)
        data = [config_resource(request, cluster, topic_name, e) for e in entries]
        path = f"/clusters/{cluster.name}/topics/{topic_name}/configs"
        return Response(listing(request, "KafkaTopicConfigList", path, data))


class TopicConfigAlter(ApiView):
    @api_doc(
        summary="Change several configs at once (SET, DELETE to reset, APPEND, SUBTRACT)",
        request=ConfigAlterBatchSerializer,
        responses={204: None},
    )
    def post(self, request, cluster_id: str, topic_name: str):
        cluster = get_cluster(cluster_id)
        check_topic_name(topic_name)
        body = ConfigAlterBatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        changes = [(e["name"], e["operation"], e.get("value")) for e in body.validated_data["data"]]
        validate_only = body.validated_data["validate_only"]
        self.audited(
            cluster,
            "topic.configs.alter",
            topic_name,
            dict(request.data),
            lambda: with_cluster(
                cluster, lambda ops: ops.alter_topic_configs(topic_name, changes, validate_only)
            ),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class TopicConfigDetail(ApiView):
    def _entry(self, cluster, topic_name, name) -> dict:
        for entry in topic_configs(cluster, topic_name):
            if entry["name"] == name:
                return entry
        raise Http404(f"config {name!r} not found")

    @api_doc(summary="One config of a topic", operation_id="getTopicConfig")
    def get(self, request, cluster_id: str, topic_name: str, name: str):
        cluster = get_cluster(cluster_id)
        entry = self._entry(cluster, topic_name, name)
        return Response(config_resource(request, cluster, topic_name, entry))

    @api_doc(summary="Set one config", request=ConfigUpdateSerializer, responses={204: None})
    def put(self, request, cluster_id: str, topic_name: str, name: str):
        cluster = get_cluster(cluster_id)
        self._entry(cluster, topic_name, name)
        body = ConfigUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        value = body.validated_data["value"]
        self.audited(
            cluster,
            "topic.configs.alter",
            topic_name,
            {"name": name, "operation": "SET", "value": value},
            lambda: with_cluster(
                cluster, lambda ops: ops.alter_topic_configs(topic_name, [(name, "SET", value)])
            ),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)

    @api_doc(
        summary="Reset one config to its default",
        responses={204: None},
        parameters=[OpenApiParameter("name", str, OpenApiParameter.PATH)],
    )
    def delete(self, request, cluster_id: str, topic_name: str, name: str):
        cluster = get_cluster(cluster_id)
        self._entry(cluster, topic_name, name)
        self.audited(
            cluster,
            "topic.configs.alter",
            topic_name,
            {"name": name, "operation": "DELETE"},
            lambda: with_cluster(
                cluster, lambda ops: ops.alter_topic_configs(topic_name, [(name, "DELETE", None)])
            ),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
