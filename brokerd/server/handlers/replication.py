"""Replication APIs: LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6) from the
controller, and OffsetForLeaderEpoch (23) from followers (and consumers).

A controller request is obeyed only when it comes from a broker (CLUSTER_AUTHORIZATION_FAILED
on a client listener, see cluster_action.py), is meant for this incarnation of the broker
(STALE_BROKER_EPOCH, KIP-380) and carries the controller epoch ZooKeeper holds
(STALE_CONTROLLER_EPOCH: a deposed controller, or a forged epoch, moves nothing). Topic names
become directory names, so a partition whose name Kafka would refuse is answered
INVALID_TOPIC_EXCEPTION and never reaches the log manager.
"""

from __future__ import annotations

import logging

from kio.schema.types import TopicName
from kio.static.primitive import i32

from brokerd.coordination.zk_data import PartitionState
from brokerd.protocol import interbroker
from brokerd.protocol.errors import ErrorCode, KafkaError, error_code_of
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation, ResourceType

from ..cluster_action import request_from_broker
from ..connection import current_peer
from ..topic_admin import validate_topic_name
from .context import HandlerContext

log = logging.getLogger(__name__)


async def _refusal(ctx: HandlerContext, request: Request) -> ErrorCode | None:
    """Why a controller request must not be obeyed, in Kafka's order (CLUSTER_ACTION, then
    the broker epoch), then the controller epoch against ZooKeeper; None to obey it."""
    body = request.body
    if not request_from_broker(ctx.config, ctx.auth):
        log.info("refusing %s from %s: not on a broker listener", request.name, current_peer.get())
        return ErrorCode.cluster_authorization_failed
    epochs = ctx.control_epochs
    if epochs.broker_epoch_is_stale(body.broker_epoch):
        log.info(
            "refusing %s with broker epoch %d, older than this broker's %d",
            request.name,
            body.broker_epoch,
            epochs.broker_epoch,
        )
        return ErrorCode.stale_broker_epoch
    if not await epochs.controller_epoch_is_current(body.controller_epoch):
        return ErrorCode.stale_controller_epoch
    return None


def _path_error(topic: str, partition: int) -> ErrorCode | None:
    """A (topic, partition) that cannot name a directory inside a log dir."""
    try:
        validate_topic_name(topic)
    except KafkaError as exc:
        return exc.error_code
    return ErrorCode.unknown_topic_or_partition if partition < 0 else None


def _state(p) -> PartitionState:
    return PartitionState(
        leader=p.leader,
        leader_epoch=p.leader_epoch,
        isr=list(p.isr),
        controller_epoch=p.controller_epoch,
        zk_version=p.zk_version,
    )


async def handle_leader_and_isr(ctx: HandlerContext, request: Request):
    body = request.body
    states = [
        (topic.topic_name, p.partition_index, _state(p), list(p.replicas))
        for topic in body.topic_states
        for p in topic.partition_states
    ]
    refused = await _refusal(ctx, request)
    if refused is not None:
        error = refused
        results = {(t, p): refused for t, p, _, _ in states}
    else:
        invalid = {(t, p): _path_error(t, p) for t, p, _, _ in states}
        results = {key: code for key, code in invalid.items() if code is not None}
        try:
            results.update(
                await ctx.replicas.become_leader_or_follower(
                    body.controller_id,
                    body.controller_epoch,
                    [s for s in states if (s[0], s[1]) not in results],
                )
            )
            error = ErrorCode.none
        except KafkaError as exc:
            error = exc.error_code
            results = {(t, p): error for t, p, _, _ in states}
    if error == ErrorCode.none:
        ctx.controller.observe_epoch(body.controller_epoch)
    return interbroker.LeaderAndIsrResponse(
        error_code=error,
        partition_errors=tuple(
            interbroker.LeaderAndIsrPartitionError(topic_name=t, partition_index=p, error_code=code)
            for (t, p), code in results.items()
        ),
    )


async def handle_update_metadata(ctx: HandlerContext, request: Request):
    body = request.body
    refused = await _refusal(ctx, request)
    if refused is not None:
        return interbroker.UpdateMetadataResponse(error_code=refused)
    if body.controller_epoch < ctx.replicas.controller_epoch:
        return interbroker.UpdateMetadataResponse(error_code=ErrorCode.stale_controller_epoch)
    ctx.replicas.controller_epoch = body.controller_epoch
    ctx.controller.observe_epoch(body.controller_epoch)
    for topic in body.topic_states:
        for p in topic.partition_states:
            ctx.replicas.cache_partition_state(topic.topic_name, p.partition_index, _state(p))
            ctx.metadata.set_offline_replicas(
                topic.topic_name, p.partition_index, p.offline_replicas
            )
    return interbroker.UpdateMetadataResponse(error_code=ErrorCode.none)


async def handle_stop_replica(ctx: HandlerContext, request: Request):
    body = request.body
    partitions = [
        (topic.topic_name, p.partition_index, p.delete_partition)
        for topic in body.topic_states
        for p in topic.partition_states
    ]
    refused = await _refusal(ctx, request)
    if refused == ErrorCode.stale_broker_epoch:
        return interbroker.StopReplicaResponse(error_code=refused, partition_errors=())
    error: ErrorCode
    results: dict[tuple[TopicName, i32], ErrorCode]
    if refused is not None:
        error = refused
        results = {(t, p): refused for t, p, _ in partitions}
    else:
        path_errors = {(t, p): _path_error(t, p) for t, p, _ in partitions}
        valid = [(t, p, d) for t, p, d in partitions if path_errors[(t, p)] is None]
        try:
            await ctx.replicas.stop_replicas(body.controller_epoch, valid)
            error = ErrorCode.none
        except Exception as exc:  # noqa: BLE001 - answered as an error code
            error = error_code_of(exc)
        results = {key: code if code is not None else error for key, code in path_errors.items()}
    return interbroker.StopReplicaResponse(
        error_code=error,
        partition_errors=tuple(
            interbroker.StopReplicaPartitionError(topic_name=t, partition_index=p, error_code=code)
            for (t, p), code in results.items()
        ),
    )


async def handle_offset_for_leader_epoch(ctx: HandlerContext, request: Request):
    """Where the requested epoch ends in the leader's history (KIP-101): the LEO for the
    current epoch, else the start offset of the next larger epoch."""
    module = response_module(request.api_key, request.api_version)
    topics = []
    denied = _epoch_lookup_denied(ctx, request.body)
    for topic in request.body.topics:
        partitions = []
        for requested in topic.partitions:
            fields = {"partition": requested.partition, "error_code": ErrorCode.none}
            try:
                if topic.topic in denied:
                    raise KafkaError(denied[topic.topic])
                leader = ctx.replicas.leader(topic.topic, requested.partition)
                current = getattr(requested, "current_leader_epoch", -1)
                if current >= 0 and current < leader.leader_epoch:
                    raise KafkaError(ErrorCode.fenced_leader_epoch)
                if current > leader.leader_epoch:
                    raise KafkaError(ErrorCode.unknown_leader_epoch)
                epoch, end_offset = leader.log.leader_epoch_cache.end_offset_for(
                    requested.leader_epoch, leader.log.log_end_offset
                )
                fields.update(leader_epoch=epoch, end_offset=end_offset)
            except Exception as exc:  # noqa: BLE001 - this partition's answer
                fields.update(error_code=error_code_of(exc), leader_epoch=-1, end_offset=-1)
            partitions.append(build(module.EpochEndOffset, **fields))
        topics.append(
            build(
                module.OffsetForLeaderTopicResult, topic=topic.topic, partitions=tuple(partitions)
            )
        )
    return build(
        module.OffsetForLeaderEpochResponse, throttle_time=NO_THROTTLE, topics=tuple(topics)
    )


def _epoch_lookup_denied(ctx: HandlerContext, body) -> dict[str, ErrorCode]:
    """ACLs, as Kafka: a follower (replica id >= 0) needs CLUSTER_ACTION, a consumer
    DESCRIBE on each topic."""
    if not ctx.auth.enabled:
        return {}
    names = [t.topic for t in body.topics]
    if getattr(body, "replica_id", -1) >= 0:
        if ctx.auth.cluster(AclOperation.CLUSTER_ACTION):
            return {}
        return dict.fromkeys(names, ErrorCode.cluster_authorization_failed)
    described = ctx.auth.filter(AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    return {n: ErrorCode.topic_authorization_failed for n in names if n not in described}


HANDLERS = {
    4: handle_leader_and_isr,
    5: handle_stop_replica,
    6: handle_update_metadata,
    23: handle_offset_for_leader_epoch,
}
