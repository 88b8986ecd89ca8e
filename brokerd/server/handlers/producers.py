"""DescribeProducers (61, KIP-664): the active producers of partitions led here, from the
leader's producer state (Kafka's handleDescribeProducersRequest and
UnifiedLog.activeProducers): id, epoch, last sequence, last timestamp, coordinator epoch and
the first offset of the producer's open transaction (-1 without one). What
`kafka-transactions.sh describe-producers` prints, and how an operator finds a hanging
transaction. Errors stay with their partition: UNKNOWN_TOPIC_OR_PARTITION,
NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

import logging

from brokerd.protocol.errors import ErrorCode, KafkaError, error_code_of
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation

from .context import HandlerContext

log = logging.getLogger(__name__)

API_KEY = 61


def _partition(ctx: HandlerContext, module, topic: str, index: int):
    try:
        if not ctx.auth.topic(AclOperation.READ, topic):  # ACLs: READ on the topic
            raise KafkaError(ErrorCode.topic_authorization_failed)
        leader = ctx.replicas.leader(topic, index)
        producers = leader.log.active_producers()
    except Exception as exc:  # noqa: BLE001 - this partition's answer
        code = error_code_of(exc)
        if code == ErrorCode.unknown_server_error:
            log.exception("DescribeProducers for %s-%d failed", topic, index)
        return build(
            module.PartitionResponse,
            partition_index=index,
            error_code=code,
            error_message=None,
            active_producers=(),
        )
    states = tuple(
        build(
            module.ProducerState,
            producer_id=producer_id,
            producer_epoch=entry.producer_epoch,
            last_sequence=entry.last_seq,
            last_timestamp=entry.last_timestamp,
            coordinator_epoch=entry.coordinator_epoch,
            current_txn_start_offset=(
                -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset
            ),
        )
        for producer_id, entry in sorted(producers.items())
    )
    return build(
        module.PartitionResponse,
        partition_index=index,
        error_code=ErrorCode.none,
        error_message=None,
        active_producers=states,
    )


async def handle_describe_producers(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)
    topics = tuple(
        build(
            module.TopicResponse,
            name=topic.name,
            partitions=tuple(
                _partition(ctx, module, str(topic.name), int(index))
                for index in topic.partition_indexes
            ),
        )
        for topic in request.body.topics
    )
    return build(module.DescribeProducersResponse, throttle_time=NO_THROTTLE, topics=topics)


HANDLERS = {API_KEY: handle_describe_producers}
