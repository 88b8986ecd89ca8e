"""Partition reassignment (KIP-455): AlterPartitionReassignments (45) and
ListPartitionReassignments (46), answered by the active controller.

Other brokers answer NOT_CONTROLLER (top-level), as a ZooKeeper-mode Kafka broker does, so
admin clients refresh their metadata and retry on the controller.
"""

from __future__ import annotations

from brokerd.protocol.errors import ErrorCode, KafkaError
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation

from .context import HandlerContext


async def handle_alter_partition_reassignments(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    requests = {
        (topic.name, int(p.partition_index)): (
            None if p.replicas is None else [int(r) for r in p.replicas]
        )
        for topic in body.topics
        for p in topic.partitions
    }
    allow_rf_change = bool(getattr(body, "allow_replication_factor_change", True))
    reassigner = ctx.controller.reassignments
    error: int
    message: str | None
    results: dict
    if not ctx.auth.cluster(AclOperation.ALTER):  # ACLs: ALTER on the cluster
        error, message, results = ErrorCode.cluster_authorization_failed, None, {}
    else:
        error, message, results = await _as_controller_event(
            ctx, lambda: reassigner.alter(requests, allow_rf_change)
        )
    return build(
        module.AlterPartitionReassignmentsResponse,
        throttle_time=NO_THROTTLE,
        allow_replication_factor_change=allow_rf_change,
        error_code=error,
        error_message=message,
        responses=_by_topic(
            results,
            lambda index, found: module.ReassignablePartitionResponse(
                partition_index=index, error_code=found[0], error_message=found[1]
            ),
            module.ReassignableTopicResponse,
        ),
    )


async def handle_list_partition_reassignments(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    keys = None
    if body.topics is not None:
        keys = [(t.name, int(p)) for t in body.topics for p in t.partition_indexes]
    reassigner = ctx.controller.reassignments

    async def listed():
        return reassigner.list(keys)

    error: int
    message: str | None
    ongoing: dict
    if not ctx.auth.cluster(AclOperation.DESCRIBE):  # ACLs: DESCRIBE on the cluster
        error, message, ongoing = ErrorCode.cluster_authorization_failed, None, {}
    else:
        error, message, ongoing = await _as_controller_event(ctx, listed)
    return build(
        module.ListPartitionReassignmentsResponse,
        throttle_time=NO_THROTTLE,
        error_code=error,
        error_message=message,
        topics=_by_topic(
            ongoing,
            lambda index, assignment: module.OngoingPartitionReassignment(
                partition_index=index,
                replicas=assignment.replicas,
                adding_replicas=assignment.adding,
                removing_replicas=assignment.removing,
            ),
            module.OngoingTopicReassignment,
        ),
    )


async def _as_controller_event(ctx: HandlerContext, work) -> tuple[int, str | None, dict]:
    """`work()` as one controller event: (error code, message, its result; {} on an error
    such as NOT_CONTROLLER)."""
    try:
        return ErrorCode.none, None, await ctx.controller.run_event(work)
    except KafkaError as exc:
        return exc.error_code, exc.message, {}


def _by_topic(per_partition: dict, partition_entry, topic_entry) -> tuple:
    """Response entries grouped by topic from {(topic, partition): value}."""
    by_topic: dict[str, list] = {}
    for (topic, index), value in per_partition.items():
        by_topic.setdefault(topic, []).append(partition_entry(index, value))
    return tuple(topic_entry(name=t, partitions=tuple(ps)) for t, ps in by_topic.items())


HANDLERS = {
    45: handle_alter_partition_reassignments,
    46: handle_list_partition_reassignments,
}
