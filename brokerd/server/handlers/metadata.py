"""Metadata (3) and DescribeCluster (60): brokers, controller, topics and their partitions."""

from __future__ import annotations

import dataclasses
import logging

from brokerd.config import BrokerConfig
from brokerd.coordination.zk_data import kafka_uuid_to_uuid, uuid_to_kafka
from brokerd.protocol.errors import ErrorCode, KafkaError
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CLUSTER_NAME,
    AclOperation,
    ResourceType,
)

from ..connection import current_listener
from ..topic_admin import INTERNAL_TOPICS, validate_topic_name
from .context import HandlerContext

log = logging.getLogger(__name__)

ZERO_UUID_TEXT = "AAAAAAAAAAAAAAAAAAAAAA"


def _broker_entries(ctx: HandlerContext, cls, listener_name: str, id_field: str) -> tuple:
    out = []
    for broker_id, info in sorted(ctx.metadata.brokers.items()):
        endpoint = info.endpoint(listener_name)
        if endpoint is None:
            continue  # Kafka lists only brokers reachable on the listener asked through
        out.append(
            build(
                cls,
                **{id_field: broker_id},
                host=endpoint.host,
                port=endpoint.port,
                rack=info.rack,
            )
        )
    return tuple(out)


def request_listener_name(config: BrokerConfig) -> str:
    """The listener the request came in on: Kafka answers with every broker's endpoint on
    that listener (a client on INTERNAL is sent INTERNAL addresses, one on the client
    listener never learns the inter-broker ones)."""
    return current_listener.get() or config.listeners[0].listener_name


def _topic_entry(module, ctx: HandlerContext, info, error=ErrorCode.none):
    partitions = []
    live = set(ctx.metadata.brokers)
    for partition, replicas in sorted(info.assignment.items()):
        state = info.states.get(partition)
        if state is None:
            partitions.append(
                build(
                    module.MetadataResponsePartition,
                    error_code=ErrorCode.leader_not_available,
                    partition_index=partition,
                    leader_id=-1,
                    leader_epoch=-1,
                    replica_nodes=tuple(replicas),
                    isr_nodes=(),
                    offline_replicas=(),
                )
            )
            continue
        leader_alive = state.leader in live
        partitions.append(
            build(
                module.MetadataResponsePartition,
                error_code=ErrorCode.none if leader_alive else ErrorCode.leader_not_available,
                partition_index=partition,
                leader_id=state.leader if leader_alive else -1,
                leader_epoch=state.leader_epoch,
                replica_nodes=tuple(replicas),
                isr_nodes=tuple(state.isr),
                offline_replicas=ctx.metadata.offline_replicas(info.name, partition, replicas),
            )
        )
    return build(
        module.MetadataResponseTopic,
        error_code=error,
        name=info.name,
        topic_id=kafka_uuid_to_uuid(info.topic_id),
        is_internal=info.name in INTERNAL_TOPICS,
        partitions=tuple(partitions),
    )


def _error_topic(module, name, error, topic_id=None):
    return build(
        module.MetadataResponseTopic,
        error_code=error,
        name=name,
        topic_id=topic_id or kafka_uuid_to_uuid(ZERO_UUID_TEXT),
        is_internal=False,
        partitions=(),
    )


async def handle_metadata(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    # v0: an empty list means all topics; v1+: null means all, empty means none.
    all_topics = body.topics is None or (request.api_version == 0 and not body.topics)
    allow_auto_create = (
        getattr(body, "allow_auto_topic_creation", True)
        and ctx.config.server_log.auto_create_topics_enable
    )
    topics = []
    if all_topics:
        infos = sorted(ctx.metadata.topics.values(), key=lambda t: t.name)
        # ACLs: topics the principal may not DESCRIBE are left out.
        described = ctx.auth.filter(
            AclOperation.DESCRIBE, ResourceType.TOPIC, (i.name for i in infos)
        )
        for info in infos:
            if info.name in described:
                topics.append(_topic_entry(module, ctx, info))
    else:
        named = (r.name for r in body.topics if r.name is not None)
        described = ctx.auth.filter(AclOperation.DESCRIBE, ResourceType.TOPIC, named)
        for requested in body.topics:
            topics.append(
                await _requested_topic(ctx, module, requested, allow_auto_create, described)
            )
    if getattr(body, "include_topic_authorized_operations", False):
        topics = [
            dataclasses.replace(
                t, topic_authorized_operations=ctx.auth.operations(ResourceType.TOPIC, t.name)
            )
            if t.name is not None
            else t
            for t in topics
        ]
    cluster_operations = AUTHORIZED_OPERATIONS_OMITTED
    if getattr(body, "include_cluster_authorized_operations", False):
        cluster_operations = ctx.auth.operations(ResourceType.CLUSTER, CLUSTER_NAME)
    return build(
        module.MetadataResponse,
        throttle_time=NO_THROTTLE,
        brokers=_broker_entries(
            ctx, module.MetadataResponseBroker, request_listener_name(ctx.config), "node_id"
        ),
        cluster_id=ctx.metadata.cluster_id,
        controller_id=ctx.metadata.controller_id,
        topics=tuple(topics),
        cluster_authorized_operations=cluster_operations,
    )


async def _requested_topic(
    ctx: HandlerContext, module, requested, allow_auto_create, described: set[str]
):
    name = requested.name
    topic_id = getattr(requested, "topic_id", None)
    if name is None and topic_id is not None:
        info = ctx.metadata.topic_by_id(uuid_to_kafka(topic_id))
        if info is None:
            return _error_topic(module, None, ErrorCode.unknown_topic_id, topic_id)
        if not ctx.auth.topic(AclOperation.DESCRIBE, info.name):
            return _error_topic(module, None, ErrorCode.topic_authorization_failed, topic_id)
        return _topic_entry(module, ctx, info)
    if name not in described:  # denied and missing look alike (Kafka)
        return _error_topic(module, name, ErrorCode.topic_authorization_failed)
    info = ctx.metadata.topic(name)
    if info is not None:
        return _topic_entry(module, ctx, info)
    try:
        validate_topic_name(name)
    except KafkaError:
        return _error_topic(module, name, ErrorCode.invalid_topic_exception)
    if not allow_auto_create:
        return _error_topic(module, name, ErrorCode.unknown_topic_or_partition)
    if not (ctx.auth.cluster(AclOperation.CREATE) or ctx.auth.topic(AclOperation.CREATE, name)):
        return _error_topic(module, name, ErrorCode.topic_authorization_failed)
    try:
        _, _, info = await ctx.topic_admin.create_topic(
            name,
            ctx.config.server_log.num_partitions,
            ctx.config.replication.default_replication_factor,
        )
    except KafkaError as exc:
        if exc.error_code == ErrorCode.topic_already_exists:
            info = ctx.metadata.topic(name)
            if info is not None:
                return _topic_entry(module, ctx, info)
        return _error_topic(module, name, ErrorCode.leader_not_available)
    return _topic_entry(module, ctx, info)


async def handle_describe_cluster(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)
    endpoint_type = getattr(request.body, "endpoint_type", 1)
    if endpoint_type != 1:  # 2 = controllers: KRaft only
        return build(
            module.DescribeClusterResponse,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.unsupported_endpoint_type,
            error_message="The endpoint type requested is not supported",
            endpoint_type=endpoint_type,
            cluster_id=ctx.metadata.cluster_id,
            controller_id=-1,
            brokers=(),
        )
    cluster_operations = AUTHORIZED_OPERATIONS_OMITTED
    if getattr(request.body, "include_cluster_authorized_operations", False):
        cluster_operations = ctx.auth.operations(ResourceType.CLUSTER, CLUSTER_NAME)
    return build(
        module.DescribeClusterResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        cluster_authorized_operations=cluster_operations,
        endpoint_type=1,
        cluster_id=ctx.metadata.cluster_id,
        controller_id=ctx.metadata.controller_id,
        brokers=_broker_entries(
            ctx, module.DescribeClusterBroker, request_listener_name(ctx.config), "broker_id"
        ),
    )


HANDLERS = {3: handle_metadata, 60: handle_describe_cluster}
