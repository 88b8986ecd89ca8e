"""CreateTopics (19), DeleteTopics (20), CreatePartitions (37); validate-only where offered.

DeleteTopics answers, as Kafka's does, once this broker's metadata no longer holds the
topic (REQUEST_TIMED_OUT if that takes longer than the request's timeout); a topic this
broker has not heard of yet is looked up in ZooKeeper before UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

from brokerd.coordination.zk_data import kafka_uuid_to_uuid, uuid_to_kafka
from brokerd.protocol.errors import ErrorCode, KafkaError, error_code_of
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation

from ..topic_admin import validate_topic_name
from .configs import describe_topic
from .context import HandlerContext

log = logging.getLogger(__name__)


def _error_fields(exc: Exception) -> tuple[ErrorCode, str | None]:
    code = error_code_of(exc)
    if code == ErrorCode.unknown_server_error:
        log.exception("topic administration failed")
    return code, getattr(exc, "message", None) or str(exc)


async def handle_create_topics(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    counts = Counter(topic.name for topic in body.topics)
    may_create_any = ctx.auth.cluster(AclOperation.CREATE)  # else CREATE on each topic
    # Kafka's KafkaApis: a created topic's configs, partition count and replication factor
    # are answered only to a caller who may DESCRIBE_CONFIGS the topic; the others get
    # TOPIC_AUTHORIZATION_FAILED in topic_config_error_code (v5+) and no configs.
    describable = {name for name in counts if ctx.auth.topic(AclOperation.DESCRIBE_CONFIGS, name)}
    results = []
    for topic in body.topics:
        fields = {
            "name": topic.name,
            "topic_id": None,
            "error_code": ErrorCode.none,
            "error_message": None,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": (),
        }
        try:
            if counts[topic.name] > 1:
                raise KafkaError(
                    ErrorCode.invalid_request,
                    f"Create topics request from client contains a duplicate topic: {topic.name}",
                )
            if not may_create_any and not ctx.auth.topic(AclOperation.CREATE, topic.name):
                raise KafkaError(ErrorCode.topic_authorization_failed, "Authorization failed.")
            explicit = {a.partition_index: list(a.broker_ids) for a in topic.assignments}
            if explicit and (topic.num_partitions != -1 or topic.replication_factor != -1):
                raise KafkaError(
                    ErrorCode.invalid_request,
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time.",
                )
            partitions = topic.num_partitions
            if partitions == -1:
                partitions = ctx.config.server_log.num_partitions
            replication = topic.replication_factor
            if replication == -1:
                replication = ctx.config.replication.default_replication_factor
            configs = {c.name: c.value for c in topic.configs}
            assignment, overrides, info = await ctx.topic_admin.create_topic(
                topic.name, partitions, replication, configs, explicit, body.validate_only
            )
            if info is not None:
                fields["topic_id"] = kafka_uuid_to_uuid(info.topic_id)
            if topic.name not in describable:
                fields["topic_config_error_code"] = ErrorCode.topic_authorization_failed
                results.append(build(module.CreatableTopicResult, **fields))
                continue
            fields["num_partitions"] = len(assignment)
            fields["replication_factor"] = len(next(iter(assignment.values())))
            fields["configs"] = (
                tuple(
                    build(
                        module.CreatableTopicConfigs,
                        name=entry.name,
                        value=entry.value,
                        read_only=entry.read_only,
                        config_source=entry.source,
                        is_sensitive=entry.sensitive,
                    )
                    for entry in describe_topic(ctx, overrides, None, False)
                )
                if hasattr(module, "CreatableTopicConfigs")
                else ()
            )
        except Exception as exc:  # noqa: BLE001 - per-topic answer
            fields["error_code"], fields["error_message"] = _error_fields(exc)
            fields["configs"] = None if request.api_version >= 5 else ()
        results.append(build(module.CreatableTopicResult, **fields))
    return build(module.CreateTopicsResponse, throttle_time=NO_THROTTLE, topics=tuple(results))


async def handle_delete_topics(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    if hasattr(body, "topic_names"):
        wanted = [(name, None) for name in body.topic_names]
    else:
        wanted = [(t.name, t.topic_id) for t in body.topics]
    outcomes = []  # [name, topic_id, info, error, message]
    for name, topic_id in wanted:
        error, message = ErrorCode.none, None
        info = None
        try:
            if not ctx.config.server.delete_topic_enable:
                raise KafkaError(ErrorCode.topic_deletion_disabled)
            if name is None and topic_id is not None:
                info = ctx.metadata.topic_by_id(uuid_to_kafka(topic_id))
                if info is None:
                    raise KafkaError(ErrorCode.unknown_topic_id)
                if not ctx.auth.topic(AclOperation.DELETE, info.name):
                    raise KafkaError(ErrorCode.topic_authorization_failed)
            else:
                if not ctx.auth.topic(AclOperation.DELETE, name):
                    raise KafkaError(ErrorCode.topic_authorization_failed)
                info = ctx.metadata.topic(name)
                if info is None and _is_legal(name):
                    # Created through another broker a moment ago: ZooKeeper knows it.
                    info = await ctx.metadata.refresh_topic(name)
                if info is None:
                    raise KafkaError(ErrorCode.unknown_topic_or_partition)
            async with ctx.admin_lock:
                await ctx.controller.delete_topic(info.name)
        except Exception as exc:  # noqa: BLE001
            error, message = _error_fields(exc)
        outcomes.append([name, topic_id, info, error, message])
    pending = [o for o in outcomes if o[2] is not None and o[3] == ErrorCode.none]
    timeout = body.timeout.total_seconds()
    if pending and timeout > 0:
        gone = await _await_gone(ctx, [o[2] for o in pending], timeout)
        for outcome in pending:
            if not gone[outcome[2].name]:
                outcome[3] = ErrorCode.request_timed_out
                outcome[4] = f"Topic {outcome[2].name} was not deleted within {timeout:g} s."
    results = [
        build(
            module.DeletableTopicResult,
            name=info.name if info else name,
            topic_id=kafka_uuid_to_uuid(info.topic_id) if info else topic_id,
            error_code=error,
            error_message=message,
        )
        for name, topic_id, info, error, message in outcomes
    ]
    return build(module.DeleteTopicsResponse, throttle_time=NO_THROTTLE, responses=tuple(results))


def _is_legal(name: str | None) -> bool:
    try:
        validate_topic_name(name)
    except KafkaError:
        return False
    return True


async def _await_gone(ctx: HandlerContext, infos, timeout: float) -> dict[str, bool]:
    """Per topic, whether this broker's metadata dropped it (that instance, by id) within
    `timeout` seconds (Kafka's DelayedDeleteTopics)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout

    def gone(info) -> bool:
        current = ctx.metadata.topic(info.name)
        return current is None or current.topic_id != info.topic_id

    while not all(gone(info) for info in infos) and loop.time() < deadline:
        await asyncio.sleep(0.02)
    return {info.name: gone(info) for info in infos}


async def handle_create_partitions(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    counts = Counter(topic.name for topic in body.topics)
    results = []
    for topic in body.topics:
        error, message = ErrorCode.none, None
        try:
            if counts[topic.name] > 1:
                raise KafkaError(ErrorCode.invalid_request, "Duplicate topic in request.")
            if not ctx.auth.topic(AclOperation.ALTER, topic.name):
                raise KafkaError(ErrorCode.topic_authorization_failed)
            async with ctx.admin_lock:
                info = ctx.metadata.topic(topic.name)
                if info is None or info.marked_for_deletion:
                    raise KafkaError(
                        ErrorCode.unknown_topic_or_partition,
                        f"The topic '{topic.name}' does not exist.",
                    )
                current = info.partition_count
                if topic.count <= current:
                    raise KafkaError(
                        ErrorCode.invalid_partitions,
                        f"Topic currently has {current} partitions, which is higher than the "
                        f"requested {topic.count}.",
                    )
                replication = len(info.assignment[0]) if info.assignment else 1
                explicit = None
                if topic.assignments:
                    if len(topic.assignments) != topic.count - current:
                        raise KafkaError(
                            ErrorCode.invalid_replica_assignment,
                            f"Increasing the number of partitions by {topic.count - current} "
                            f"but {len(topic.assignments)} assignments provided.",
                        )
                    explicit = {
                        current + i: list(a.broker_ids) for i, a in enumerate(topic.assignments)
                    }
                assignment = ctx.topic_admin.plan_assignment(
                    topic.count - current,
                    replication,
                    explicit,
                    first_partition=current,
                    topic=topic.name,
                )
                if not body.validate_only:
                    await ctx.controller.create_partitions(info, assignment)
                    await ctx.replicas.sync_leadership()
        except Exception as exc:  # noqa: BLE001
            error, message = _error_fields(exc)
        results.append(
            build(
                module.CreatePartitionsTopicResult,
                name=topic.name,
                error_code=error,
                error_message=message,
            )
        )
    return build(module.CreatePartitionsResponse, throttle_time=NO_THROTTLE, results=tuple(results))


HANDLERS = {19: handle_create_topics, 20: handle_delete_topics, 37: handle_create_partitions}
