"""The transaction APIs: InitProducerId (22) for a transactional id (called by the
InitProducerId handler), AddPartitionsToTxn (24),
AddOffsetsToTxn (25), EndTxn (26), TxnOffsetCommit (28), DescribeTransactions (65),
ListTransactions (66), and FindCoordinator (10) for key type 1.

The rules live in brokerd.transactions.coordinator (and, for TxnOffsetCommit, the group
coordinator); these handlers translate each advertised version. Versions before the
PRODUCER_FENCED error existed get INVALID_PRODUCER_EPOCH instead, as Kafka's KafkaApis maps
it (InitProducerId below v4, the others below v2).
"""

from __future__ import annotations

import datetime
import logging

from brokerd.protocol.errors import ErrorCode, KafkaError
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation, ResourceType
from brokerd.transactions.transaction_log import TOPIC as TRANSACTION_STATE_TOPIC

from .context import HandlerContext

log = logging.getLogger(__name__)

E = ErrorCode


def _fenced_for(version: int, first_with_fenced: int, code: int) -> int:
    if code == E.producer_fenced and version < first_with_fenced:
        return E.invalid_producer_epoch
    return code


def _ms(value) -> int:
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    return int(value)


# FindCoordinator (key type 1) ---------------------------------------------------------------
async def find_transaction_coordinator(ctx: HandlerContext, key: str, listener_name) -> dict:
    """The FindCoordinator answer for a transactional id (node_id, host, port, error)."""
    missing = {"node_id": -1, "host": "", "port": -1}
    if not key:
        return {**missing, "error_code": E.invalid_request, "error_message": None}
    try:
        await ctx.transactions.ensure_topic()
    except KafkaError as exc:
        log.warning("creating %s failed: %s", TRANSACTION_STATE_TOPIC, exc)
        return {**missing, "error_code": E.coordinator_not_available, "error_message": None}
    leader = ctx.transactions.coordinator_for(key)
    info = ctx.metadata.brokers.get(leader) if leader is not None else None
    endpoint = info.endpoint(listener_name) if info is not None else None
    if endpoint is None:
        return {**missing, "error_code": E.coordinator_not_available, "error_message": None}
    return {
        "node_id": leader,
        "host": endpoint.host,
        "port": endpoint.port,
        "error_code": E.none,
        "error_message": None,
    }


# InitProducerId ------------------------------------------------------------------------------
async def init_transactional_producer_id(ctx: HandlerContext, request: Request):
    """InitProducerId for a transactional id (the InitProducerId handler's other case):
    the coordinator's producer id and epoch, fencing older producers of the id."""
    body = request.body
    version = request.api_version
    module = response_module(request.api_key, version)
    result = await ctx.transactions.init_producer_id(
        body.transactional_id,
        _ms(body.transaction_timeout),
        int(getattr(body, "producer_id", -1)),
        int(getattr(body, "producer_epoch", -1)),
    )
    return build(
        module.InitProducerIdResponse,
        throttle_time=NO_THROTTLE,
        error_code=_fenced_for(version, 4, result.error),
        producer_id=result.producer_id,
        producer_epoch=result.producer_epoch,
    )


# AddPartitionsToTxn ------------------------------------------------------------------------------
def _may_write_txn(ctx: HandlerContext, transactional_id: str) -> bool:
    """ACLs: WRITE on the transactional id (every transactional API, as Kafka)."""
    return ctx.auth.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)


def _known(ctx: HandlerContext, topic: str, partition: int) -> bool:
    info = ctx.metadata.topic(topic)
    return info is not None and partition in info.assignment


async def handle_add_partitions_to_txn(ctx: HandlerContext, request: Request):
    body = request.body
    version = request.api_version
    module = response_module(request.api_key, version)
    if version >= 4:  # never advertised: the broker-to-broker batch of KIP-890
        raise KafkaError(E.unsupported_version)
    transactional_id = body.v3_and_below_transactional_id
    requested: list[tuple[str, int]] = []
    for topic in body.v3_and_below_topics:
        requested.extend((str(topic.name), int(p)) for p in topic.partitions)
    writable = ctx.auth.filter(AclOperation.WRITE, ResourceType.TOPIC, (t for t, _ in requested))
    denied = [tp for tp in requested if tp[0] not in writable]
    unknown = [tp for tp in requested if tp[0] in writable and not _known(ctx, *tp)]
    errors: dict[tuple[str, int], int]
    if not _may_write_txn(ctx, transactional_id):
        errors = dict.fromkeys(requested, E.transactional_id_authorization_failed)
    elif unknown or denied:
        # Kafka's KafkaApis: nothing is added when a partition is unknown or not writable.
        errors = dict.fromkeys(requested, E.operation_not_attempted)
        errors.update(dict.fromkeys(denied, E.topic_authorization_failed))
        errors.update(dict.fromkeys(unknown, E.unknown_topic_or_partition))
    else:
        code = await ctx.transactions.add_partitions(
            transactional_id,
            int(body.v3_and_below_producer_id),
            int(body.v3_and_below_producer_epoch),
            set(requested),
        )
        errors = dict.fromkeys(requested, _fenced_for(version, 2, code))
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), code in errors.items():
        by_topic.setdefault(topic, []).append((partition, code))
    results = tuple(
        build(
            module.AddPartitionsToTxnTopicResult,
            name=topic,
            results_by_partition=tuple(
                build(
                    module.AddPartitionsToTxnPartitionResult,
                    partition_index=partition,
                    partition_error_code=code,
                )
                for partition, code in partitions
            ),
        )
        for topic, partitions in by_topic.items()
    )
    return build(
        module.AddPartitionsToTxnResponse,
        throttle_time=NO_THROTTLE,
        error_code=E.none,
        results_by_topic_v3_and_below=results,
    )


# AddOffsetsToTxn / EndTxn --------------------------------------------------------------------------
async def handle_add_offsets_to_txn(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    code: int
    if not _may_write_txn(ctx, body.transactional_id):
        code = E.transactional_id_authorization_failed
    elif not ctx.auth.group(AclOperation.READ, body.group_id):
        code = E.group_authorization_failed
    else:
        code = await ctx.transactions.add_offsets(
            body.transactional_id, int(body.producer_id), int(body.producer_epoch), body.group_id
        )
    return build(
        module.AddOffsetsToTxnResponse,
        throttle_time=NO_THROTTLE,
        error_code=_fenced_for(request.api_version, 2, code),
    )


async def handle_end_txn(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    code: int
    if not _may_write_txn(ctx, body.transactional_id):
        code = E.transactional_id_authorization_failed
    else:
        code = await ctx.transactions.end_transaction(
            body.transactional_id, int(body.producer_id), int(body.producer_epoch), body.committed
        )
    return build(
        module.EndTxnResponse,
        throttle_time=NO_THROTTLE,
        error_code=_fenced_for(request.api_version, 2, code),
        producer_id=-1,
        producer_epoch=-1,
    )


# TxnOffsetCommit --------------------------------------------------------------------------------
async def handle_txn_offset_commit(ctx: HandlerContext, request: Request):
    body = request.body
    version = request.api_version
    module = response_module(request.api_key, version)
    offsets = {}
    unknown = {}
    # ACLs as Kafka: WRITE on the transactional id, READ on the group, READ on each topic.
    refused = None
    if not _may_write_txn(ctx, body.transactional_id):
        refused = E.transactional_id_authorization_failed
    elif not ctx.auth.group(AclOperation.READ, body.group_id):
        refused = E.group_authorization_failed
    readable = ctx.auth.filter(AclOperation.READ, ResourceType.TOPIC, (t.name for t in body.topics))
    for topic in body.topics:
        for p in topic.partitions:
            key = (str(topic.name), int(p.partition_index))
            if refused is not None:
                unknown[key] = refused
                continue
            if key[0] not in readable:
                unknown[key] = E.topic_authorization_failed
                continue
            if not _known(ctx, *key):
                unknown[key] = E.unknown_topic_or_partition
                continue
            leader_epoch = int(getattr(p, "committed_leader_epoch", -1))
            offsets[key] = (
                int(p.committed_offset),
                leader_epoch if leader_epoch >= 0 else None,
                p.committed_metadata,
            )
    results: dict[tuple[str, int], int] = dict(unknown)
    if offsets:
        committed = await ctx.groups.commit_txn_offsets(
            body.group_id,
            int(body.producer_id),
            int(body.producer_epoch),
            int(getattr(body, "generation_id", -1)),
            getattr(body, "member_id", ""),
            getattr(body, "group_instance_id", None),
            offsets,
        )
        results.update({k: _fenced_for(version, 2, v) for k, v in committed.items()})
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), code in results.items():
        by_topic.setdefault(topic, []).append((partition, code))
    return build(
        module.TxnOffsetCommitResponse,
        throttle_time=NO_THROTTLE,
        topics=tuple(
            build(
                module.TxnOffsetCommitResponseTopic,
                name=topic,
                partitions=tuple(
                    build(
                        module.TxnOffsetCommitResponsePartition,
                        partition_index=partition,
                        error_code=code,
                    )
                    for partition, code in partitions
                ),
            )
            for topic, partitions in by_topic.items()
        ),
    )


# DescribeTransactions / ListTransactions -------------------------------------------------------
def _datetime(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)


async def handle_describe_transactions(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)
    states = []
    for transactional_id in request.body.transactional_ids:
        if not ctx.auth.authorize(
            AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id
        ):
            states.append(
                build(
                    module.TransactionState,
                    error_code=E.transactional_id_authorization_failed,
                    transactional_id=transactional_id,
                    transaction_state="",  # the rest: the schema's defaults, as Kafka
                    transaction_timeout=datetime.timedelta(0),
                    transaction_start_time=_datetime(0),
                    producer_id=0,
                    producer_epoch=0,
                    topics=(),
                )
            )
            continue
        found = ctx.transactions.describe(transactional_id)
        by_topic: dict[str, list[int]] = {}
        for topic, partition in found.partitions:
            by_topic.setdefault(topic, []).append(partition)
        states.append(
            build(
                module.TransactionState,
                error_code=found.error,
                transactional_id=transactional_id,
                transaction_state=found.state,
                transaction_timeout=datetime.timedelta(milliseconds=found.timeout_ms),
                transaction_start_time=_datetime(found.start_timestamp_ms),
                producer_id=found.producer_id,
                producer_epoch=found.producer_epoch,
                topics=tuple(
                    build(module.TopicData, topic=topic, partitions=tuple(partitions))
                    for topic, partitions in by_topic.items()
                ),
            )
        )
    return build(
        module.DescribeTransactionsResponse,
        throttle_time=NO_THROTTLE,
        transaction_states=tuple(states),
    )


KNOWN_STATES = frozenset(
    {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"}
)


async def handle_list_transactions(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    filters = set(body.state_filters)
    unknown = sorted(filters - KNOWN_STATES - {"Dead", "PrepareEpochFence"})
    error, listings = ctx.transactions.list_transactions(
        filters, {int(p) for p in body.producer_id_filters}
    )
    # ACLs: only the transactional ids the principal may DESCRIBE (Kafka).
    visible = ctx.auth.filter(
        AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, (x.transactional_id for x in listings)
    )
    listings = [listing for listing in listings if listing.transactional_id in visible]
    duration = int(getattr(body, "duration_filter", -1))
    if duration >= 0:
        descriptions = {
            listing.transactional_id: ctx.transactions.describe(listing.transactional_id)
            for listing in listings
        }
        now = int(datetime.datetime.now(tz=datetime.UTC).timestamp() * 1000)
        listings = [
            listing
            for listing in listings
            if descriptions[listing.transactional_id].start_timestamp_ms >= 0
            and now - descriptions[listing.transactional_id].start_timestamp_ms > duration
        ]
    return build(
        module.ListTransactionsResponse,
        throttle_time=NO_THROTTLE,
        error_code=error,
        unknown_state_filters=tuple(unknown),
        transaction_states=tuple(
            build(
                module.TransactionState,
                transactional_id=listing.transactional_id,
                producer_id=listing.producer_id,
                transaction_state=listing.state,
            )
            for listing in listings
        ),
    )


HANDLERS = {
    24: handle_add_partitions_to_txn,
    25: handle_add_offsets_to_txn,
    26: handle_end_txn,
    28: handle_txn_offset_commit,
    65: handle_describe_transactions,
    66: handle_list_transactions,
}
