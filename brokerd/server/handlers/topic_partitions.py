"""DescribeTopicPartitions (75, KIP-966): Metadata's topic part, paged by partitions.

As Kafka's DescribeTopicPartitionsRequestHandler and describeTopicResponse: the topics asked
for (none: every topic) at or after the cursor's topic, sorted by name, until
response_partition_limit partitions (at most max.request.partition.size.limit, at least 1)
are in the answer; `next_cursor` then names the first partition left out. The cursor's topic
must be among those asked for and its partition must not be negative (INVALID_REQUEST for
every topic otherwise). Topics asked for by name that do not exist answer
UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name); when all topics
are listed they are left out. ZooKeeper mode has no eligible leader replicas: ELR and the
last known ELR are empty, as Kafka answers without them.
"""

from __future__ import annotations

import uuid

from brokerd.coordination.metadata import TopicInfo
from brokerd.coordination.zk_data import kafka_uuid_to_uuid
from brokerd.protocol.errors import ErrorCode, KafkaError
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation, ResourceType

from ..topic_admin import INTERNAL_TOPICS, validate_topic_name
from .context import HandlerContext

ZERO_UUID = uuid.UUID(int=0)
NO_LEADER = -1


async def handle_describe_topic_partitions(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)
    body = request.body
    cursor = body.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    all_topics = not body.topics
    if all_topics:
        names = {name for name in ctx.metadata.topics if name >= cursor_topic}
    else:
        names = {t.name for t in body.topics if t.name >= cursor_topic}
    if (cursor is not None and not all_topics and cursor.topic_name not in names) or (
        cursor is not None and cursor.partition_index < 0
    ):
        return _invalid_request(module, body)
    limit = max(
        min(ctx.config.server.max_request_partition_size_limit, body.response_partition_limit), 1
    )
    remaining = limit
    topics = []
    # ACLs: DESCRIBE on each topic; others are left out of a listing, or answered
    # TOPIC_AUTHORIZATION_FAILED when named (Kafka).
    described = ctx.auth.filter(AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    next_cursor = None
    live = set(ctx.metadata.brokers)
    for name in sorted(names):
        if remaining == 0:
            # Every partition of the topics before is in; the next page starts here.
            next_cursor = build(module.Cursor, topic_name=name, partition_index=0)
            break
        if name not in described:
            if not all_topics:
                topics.append(_unknown_topic(module, name, ErrorCode.topic_authorization_failed))
            continue
        info = ctx.metadata.topic(name)
        if info is None:
            if not all_topics:
                topics.append(_unknown_topic(module, name))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        partitions, next_index = _partitions(module, ctx, info, live, start, remaining)
        topics.append(
            build(
                module.DescribeTopicPartitionsResponseTopic,
                error_code=ErrorCode.none,
                name=name,
                topic_id=kafka_uuid_to_uuid(info.topic_id),
                is_internal=name in INTERNAL_TOPICS,
                partitions=partitions,
                topic_authorized_operations=ctx.auth.operations(ResourceType.TOPIC, name),
            )
        )
        if next_index != -1:
            next_cursor = build(module.Cursor, topic_name=name, partition_index=next_index)
            break
        remaining -= len(partitions)
    return build(
        module.DescribeTopicPartitionsResponse,
        throttle_time=NO_THROTTLE,
        topics=tuple(topics),
        next_cursor=next_cursor,
    )


def _partitions(
    module, ctx: HandlerContext, info: TopicInfo, live: set[int], start: int, max_count: int
) -> tuple[tuple, int]:
    """Partitions [start, start + max_count) of the topic, and the index the next page
    starts at (-1: none left)."""
    count = info.partition_count
    upper = min(count, start + max_count)
    next_index = upper if upper < count else -1
    out = []
    for index in range(start, upper):
        replicas = info.assignment.get(index)
        if replicas is None:
            continue
        state = info.states.get(index)
        leader = state.leader if state is not None and state.leader in live else NO_LEADER
        out.append(
            build(
                module.DescribeTopicPartitionsResponsePartition,
                error_code=ErrorCode.none,
                partition_index=index,
                leader_id=leader,
                leader_epoch=state.leader_epoch if state is not None else -1,
                replica_nodes=tuple(replicas),
                isr_nodes=tuple(state.isr) if state is not None else (),
                eligible_leader_replicas=(),
                last_known_elr=(),
                offline_replicas=ctx.metadata.offline_replicas(info.name, index, replicas),
            )
        )
    return tuple(out), next_index


def _unknown_topic(module, name: str, error: ErrorCode | None = None):
    if error is None:
        try:
            validate_topic_name(name)
            error = ErrorCode.unknown_topic_or_partition
        except KafkaError:
            error = ErrorCode.invalid_topic_exception
    return build(
        module.DescribeTopicPartitionsResponseTopic,
        error_code=error,
        name=name,
        topic_id=ZERO_UUID,
        is_internal=name in INTERNAL_TOPICS,
        partitions=(),
    )


def _invalid_request(module, body):
    """Kafka's DescribeTopicPartitionsRequest.getErrorResponse: the error on every topic."""
    return build(
        module.DescribeTopicPartitionsResponse,
        throttle_time=NO_THROTTLE,
        topics=tuple(
            build(
                module.DescribeTopicPartitionsResponseTopic,
                error_code=ErrorCode.invalid_request,
                name=t.name,
                topic_id=ZERO_UUID,
                is_internal=False,
                partitions=(),
            )
            for t in body.topics
        ),
        next_cursor=None,
    )


HANDLERS = {75: handle_describe_topic_partitions}
