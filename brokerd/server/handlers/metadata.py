"""Metadata (3) and DescribeCluster (60): brokers, controller, topics and their partitions."""

from __future__ import annotations

import dataclasses
import io
import logging
import struct
from typing import Any

from kio.serial import entity_writer

from brokerd.config import BrokerConfig
from brokerd.coordination.zk_data import kafka_uuid_to_uuid, uuid_to_kafka
from brokerd.protocol.errors import ErrorCode, KafkaError
from brokerd.protocol.framing import Request, encode_body, response_header
from brokerd.protocol.messages import NO_THROTTLE, build, has_field, response_module
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
    found: list[Any] = []  # TopicInfo to describe, or a topic's error entry
    if all_topics:
        infos = sorted(ctx.metadata.topics.values(), key=lambda t: t.name)
        # ACLs: topics the principal may not DESCRIBE are left out.
        described = ctx.auth.filter(
            AclOperation.DESCRIBE, ResourceType.TOPIC, (i.name for i in infos)
        )
        found = [info for info in infos if info.name in described]
    else:
        named = (r.name for r in body.topics if r.name is not None)
        described = ctx.auth.filter(AclOperation.DESCRIBE, ResourceType.TOPIC, named)
        for requested in body.topics:
            found.append(
                await _requested_topic(ctx, module, requested, allow_auto_create, described)
            )
    cluster_operations = AUTHORIZED_OPERATIONS_OMITTED
    if getattr(body, "include_cluster_authorized_operations", False):
        cluster_operations = ctx.auth.operations(ResourceType.CLUSTER, CLUSTER_NAME)
    response = build(
        module.MetadataResponse,
        throttle_time=NO_THROTTLE,
        brokers=_broker_entries(
            ctx, module.MetadataResponseBroker, request_listener_name(ctx.config), "node_id"
        ),
        cluster_id=ctx.metadata.cluster_id,
        controller_id=ctx.metadata.controller_id,
        topics=(),
        cluster_authorized_operations=cluster_operations,
    )
    if getattr(body, "include_topic_authorized_operations", False):
        topics = [_topic_entry(module, ctx, t) if _is_info(t) else t for t in found]
        topics = [
            dataclasses.replace(
                t, topic_authorized_operations=ctx.auth.operations(ResourceType.TOPIC, t.name)
            )
            if t.name is not None
            else t
            for t in topics
        ]
        return dataclasses.replace(response, topics=tuple(topics))
    # The answer is spliced from encoded topics, each partition's entry encoded once for
    # as long as its values stay the same (see _encoded_partitions).
    encoded = [_encoded_topic(module, ctx, t) if _is_info(t) else encode_body(t) for t in found]
    flexible = response.__flexible__
    payload = response_header(request.api_key, request.correlation_id, flexible)
    payload += _spliced(
        encode_body(response),
        len(encoded),
        b"".join(encoded),
        flexible,
        has_field(module.MetadataResponse, "cluster_authorized_operations"),
    )
    return _SIZE.pack(len(payload)) + payload


def _is_info(found: Any) -> bool:
    return hasattr(found, "assignment")  # a TopicInfo, not an error entry


# Encoded partition entries, per topic id and response version: partition -> (its values,
# its bytes). Content-keyed, so never stale. Entries of topics gone are dropped in passing,
# when the topic ids kept have grown past twice what was kept after the last drop (and the
# topics known): each drop scans the kept ids once, and at least as many new ids were added
# since the one before, so the cost per new id is constant however many versions clients
# use (the versions of a topic share its key).
_PARTITIONS: dict[str, dict[type, dict[int, tuple[tuple, bytes]]]] = {}
_PRUNE_SLACK = 64
_prune_above = _PRUNE_SLACK
_SIZE = struct.Struct(">i")


def _topic_entries(ctx: HandlerContext, topic_id: str) -> dict[type, dict]:
    global _prune_above
    versions = _PARTITIONS.get(topic_id)
    if versions is None:
        if len(_PARTITIONS) > max(_prune_above, 2 * len(ctx.metadata.topics) + _PRUNE_SLACK):
            current = {t.topic_id for t in ctx.metadata.topics.values()}
            for stale in [k for k in _PARTITIONS if k not in current]:
                del _PARTITIONS[stale]
            _prune_above = 2 * len(_PARTITIONS) + _PRUNE_SLACK
        versions = _PARTITIONS[topic_id] = {}
    return versions


def _encoded_partitions(module, ctx: HandlerContext, info) -> tuple[int, bytes]:
    cls = module.MetadataResponsePartition
    versions = _topic_entries(ctx, info.topic_id)
    cache = versions.get(cls)
    if cache is None:
        cache = versions[cls] = {}
    live = ctx.metadata.brokers
    offline_replicas = ctx.metadata.offline_replicas
    write = entity_writer(cls)
    chunks = []
    for partition, replicas in sorted(info.assignment.items()):
        state = info.states.get(partition)
        if state is None:
            values: tuple = (ErrorCode.leader_not_available, -1, -1, tuple(replicas), (), ())
        else:
            leader_alive = state.leader in live
            values = (
                ErrorCode.none if leader_alive else ErrorCode.leader_not_available,
                state.leader if leader_alive else -1,
                state.leader_epoch,
                tuple(replicas),
                tuple(state.isr),
                offline_replicas(info.name, partition, replicas),
            )
        kept = cache.get(partition)
        if kept is not None and kept[0] == values:
            chunks.append(kept[1])
            continue
        entry = build(
            cls,
            error_code=values[0],
            partition_index=partition,
            leader_id=values[1],
            leader_epoch=values[2],
            replica_nodes=values[3],
            isr_nodes=values[4],
            offline_replicas=values[5],
        )
        buffer = io.BytesIO()
        write(buffer, entry)
        data = buffer.getvalue()
        cache[partition] = (values, data)
        chunks.append(data)
    return len(chunks), b"".join(chunks)


def _encoded_topic(module, ctx: HandlerContext, info) -> bytes:
    count, partitions = _encoded_partitions(module, ctx, info)
    cls = module.MetadataResponseTopic
    empty = build(
        cls,
        error_code=ErrorCode.none,
        name=info.name,
        topic_id=kafka_uuid_to_uuid(info.topic_id),
        is_internal=info.name in INTERNAL_TOPICS,
        partitions=(),
    )
    return _spliced(
        encode_body(empty),
        count,
        partitions,
        cls.__flexible__,
        has_field(cls, "topic_authorized_operations"),
    )


def _spliced(encoded: bytes, count: int, items: bytes, flexible: bool, int32_after: bool) -> bytes:
    """`encoded` (an entity whose last array, empty, is followed only by an optional int32
    and, when flexible, its empty tagged fields) with `count` encoded `items` in that array."""
    trailer = (4 if int32_after else 0) + (1 if flexible else 0)
    end = len(encoded) - trailer
    if flexible:
        assert encoded[end - 1] == 1  # a compact array's length + 1, as an unsigned varint
        return encoded[: end - 1] + _uvarint(count + 1) + items + encoded[end:]
    assert encoded[end - 4 : end] == b"\0\0\0\0"
    return encoded[: end - 4] + _SIZE.pack(count) + items + encoded[end:]


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


async def _requested_topic(
    ctx: HandlerContext, module, requested, allow_auto_create, described: set[str]
):
    """The topic's metadata to answer (a TopicInfo), or its error entry."""
    name = requested.name
    topic_id = getattr(requested, "topic_id", None)
    if name is None and topic_id is not None:
        info = ctx.metadata.topic_by_id(uuid_to_kafka(topic_id))
        if info is None:
            return _error_topic(module, None, ErrorCode.unknown_topic_id, topic_id)
        if not ctx.auth.topic(AclOperation.DESCRIBE, info.name):
            return _error_topic(module, None, ErrorCode.topic_authorization_failed, topic_id)
        return info
    if name not in described:  # denied and missing look alike (Kafka)
        return _error_topic(module, name, ErrorCode.topic_authorization_failed)
    info = ctx.metadata.topic(name)
    if info is not None:
        return info
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
                return info
        return _error_topic(module, name, ErrorCode.leader_not_available)
    return info


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
