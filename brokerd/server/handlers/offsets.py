"""ListOffsets (2) and DeleteRecords (21): offsets by time, and moving the log start."""

from __future__ import annotations

import asyncio
import logging

from brokerd.protocol.errors import ErrorCode, KafkaError, error_code_of
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation, ResourceType

from .context import HandlerContext

log = logging.getLogger(__name__)

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4  # tiered storage (v8+): every segment is local here
READ_COMMITTED = 1  # isolation_level (v2+)


def _check_epoch(leader, current_leader_epoch: int) -> None:
    if current_leader_epoch < 0:
        return
    if current_leader_epoch < leader.leader_epoch:
        raise KafkaError(ErrorCode.fenced_leader_epoch)
    if current_leader_epoch > leader.leader_epoch:
        raise KafkaError(ErrorCode.unknown_leader_epoch)


def _list_offset(
    ctx: HandlerContext, topic: str, requested, from_replica: bool, isolation: int = 0
) -> dict:
    leader = ctx.replicas.leader(topic, requested.partition_index)
    _check_epoch(leader, getattr(requested, "current_leader_epoch", -1))
    partition_log = leader.log
    # Clients see offsets up to the high watermark only (read_committed: the last stable
    # offset); replicas up to the log end.
    if from_replica:
        fetchable = partition_log.log_end_offset
    elif isolation == READ_COMMITTED:
        fetchable = partition_log.last_stable_offset
    else:
        fetchable = partition_log.high_watermark
    timestamp = requested.timestamp
    if timestamp == LATEST:
        epoch = partition_log.latest_epoch
        return {
            "timestamp": -1,
            "offset": fetchable,
            "leader_epoch": -1 if epoch is None else epoch,
        }
    if timestamp == EARLIEST_LOCAL:
        timestamp = EARLIEST
    found = partition_log.fetch_offset_by_timestamp(timestamp)
    if (
        found is None
        or found.offset < 0
        or found.offset >= max(fetchable, 1)
        and timestamp != EARLIEST
    ):
        return {"timestamp": -1, "offset": -1, "leader_epoch": -1}
    epoch = found.leader_epoch
    return {
        "timestamp": found.timestamp,
        "offset": found.offset,
        "leader_epoch": -1 if epoch is None else epoch,
    }


async def handle_list_offsets(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    from_replica = body.replica_id >= 0
    isolation = getattr(body, "isolation_level", 0)
    described = ctx.auth.filter(AclOperation.DESCRIBE, ResourceType.TOPIC, _names(body))
    topics = []
    for topic in body.topics:
        partitions = []
        for requested in topic.partitions:
            try:
                if topic.name not in described:
                    raise KafkaError(ErrorCode.topic_authorization_failed)
                fields = _list_offset(ctx, topic.name, requested, from_replica, isolation)
                error = ErrorCode.none
            except Exception as exc:  # noqa: BLE001 - per-partition answer
                error = error_code_of(exc)
                fields = {"timestamp": -1, "offset": -1, "leader_epoch": -1}
            partitions.append(
                build(
                    module.ListOffsetsPartitionResponse,
                    partition_index=requested.partition_index,
                    error_code=error,
                    **fields,
                )
            )
        topics.append(
            build(module.ListOffsetsTopicResponse, name=topic.name, partitions=tuple(partitions))
        )
    return build(module.ListOffsetsResponse, throttle_time=NO_THROTTLE, topics=tuple(topics))


async def handle_delete_records(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    deletable = ctx.auth.filter(AclOperation.DELETE, ResourceType.TOPIC, _names(body))
    topics = []
    for topic in body.topics:
        partitions = []
        for requested in topic.partitions:
            low_watermark = -1
            error = ErrorCode.none
            try:
                if topic.name not in deletable:
                    raise KafkaError(ErrorCode.topic_authorization_failed)
                leader = ctx.replicas.leader(topic.name, requested.partition_index)
                target = requested.offset
                if target == -1:
                    target = leader.log.high_watermark  # -1: everything below the HW
                if target < 0:
                    raise KafkaError(ErrorCode.offset_out_of_range)
                low_watermark = await asyncio.to_thread(
                    leader.log.maybe_increment_log_start_offset, target
                )
            except Exception as exc:  # noqa: BLE001
                error = error_code_of(exc)
            partitions.append(
                build(
                    module.DeleteRecordsPartitionResult,
                    partition_index=requested.partition_index,
                    low_watermark=low_watermark,
                    error_code=error,
                )
            )
        topics.append(
            build(module.DeleteRecordsTopicResult, name=topic.name, partitions=tuple(partitions))
        )
    return build(module.DeleteRecordsResponse, throttle_time=NO_THROTTLE, topics=tuple(topics))


def _names(body) -> list[str]:
    return [topic.name for topic in body.topics]


HANDLERS = {2: handle_list_offsets, 21: handle_delete_records}
