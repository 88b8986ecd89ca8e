"""Leadership moves handled by the controller: ControlledShutdown (7), from a stopping
broker, and ElectLeaders (43), from admin clients (preferred or unclean elections).

Both are answered only by the active controller (NOT_CONTROLLER elsewhere: clients send
them to the controller named in Metadata, as they do to Kafka in ZooKeeper mode).
ControlledShutdown comes from brokers only: CLUSTER_AUTHORIZATION_FAILED on a client
listener, as Kafka answers a principal without CLUSTER_ACTION.
"""

from __future__ import annotations

import logging

from kio.schema.types import TopicName
from kio.static.primitive import i32

from brokerd.coordination import election
from brokerd.protocol import interbroker
from brokerd.protocol.errors import ErrorCode, KafkaError
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation

from ..cluster_action import request_from_broker
from .context import HandlerContext

log = logging.getLogger(__name__)

MESSAGES = {
    ErrorCode.election_not_needed: "Leader election not needed for topic partition.",
    ErrorCode.preferred_leader_not_available: "The preferred leader was not available.",
    ErrorCode.eligible_leaders_not_available: "No eligible leaders are available.",
    ErrorCode.unknown_topic_or_partition: "The partition does not exist.",
}


async def handle_controlled_shutdown(ctx: HandlerContext, request: Request):
    body = request.body
    if not request_from_broker(ctx.config, ctx.auth):
        log.info(
            "refusing ControlledShutdown for broker %d: not on a broker listener", body.broker_id
        )
        return interbroker.ControlledShutdownResponse(
            error_code=ErrorCode.cluster_authorization_failed, remaining_partitions=()
        )
    error, remaining = await ctx.controller.controlled_shutdown(body.broker_id, body.broker_epoch)
    return interbroker.ControlledShutdownResponse(
        error_code=error,
        remaining_partitions=tuple(
            interbroker.ControlledShutdownRemainingPartition(
                topic_name=TopicName(t), partition_index=i32(p)
            )
            for t, p in remaining
        ),
    )


async def handle_elect_leaders(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    election_type = getattr(body, "election_type", election.PREFERRED)
    partitions = None
    if body.topic_partitions is not None:
        partitions = [(t.topic, int(p)) for t in body.topic_partitions for p in t.partitions]

    def respond(error: ErrorCode, results: dict) -> object:
        by_topic: dict[str, list] = {}
        for (topic, index), code in results.items():
            by_topic.setdefault(topic, []).append(
                module.PartitionResult(
                    partition_id=index, error_code=code, error_message=MESSAGES.get(code)
                )
            )
        return build(
            module.ElectLeadersResponse,
            throttle_time=NO_THROTTLE,
            error_code=error,
            replica_election_results=tuple(
                module.ReplicaElectionResult(topic=t, partition_result=tuple(rs))
                for t, rs in by_topic.items()
            ),
        )

    if not ctx.auth.cluster(AclOperation.ALTER):  # ACLs: ALTER on the cluster
        denied = ErrorCode.cluster_authorization_failed
        return respond(denied, dict.fromkeys(partitions or [], denied))
    if election_type not in (election.PREFERRED, election.UNCLEAN):
        return respond(ErrorCode.invalid_request, {})
    try:
        results = await ctx.controller.elect_leaders(election_type, partitions)
    except KafkaError as exc:
        # v0 has no top-level error: every asked-for partition carries it.
        return respond(exc.error_code, dict.fromkeys(partitions or [], exc.error_code))
    if partitions is None:
        # "All partitions" answers only for the ones that got a new leader, as Kafka does.
        results = {k: v for k, v in results.items() if v == ErrorCode.none}
    return respond(ErrorCode.none, results)


HANDLERS = {
    7: handle_controlled_shutdown,
    43: handle_elect_leaders,
}
