"""WriteTxnMarkers (27): the transaction coordinator asks partition leaders to end a
transaction with a COMMIT or ABORT marker (KIP-98), as Kafka's handleWriteTxnMarkersRequest.

Only brokers may ask (CLUSTER_ACTION, see cluster_action.py): anyone else gets
CLUSTER_AUTHORIZATION_FAILED for every partition. Each partition led here gets one control
batch holding one end-transaction marker (the producer id and epoch, the coordinator epoch),
appended as leader with acks=all semantics: its answer waits until the ISR has the marker
(request.timeout.ms at most), as Kafka's appendRecords with requiredAcks -1. Errors stay with
their partition: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS,
INVALID_PRODUCER_EPOCH (an epoch older than the producer's), TRANSACTION_COORDINATOR_FENCED
(a coordinator epoch older than the partition has seen), REQUEST_TIMED_OUT. A marker written
on a `__consumer_offsets` partition also completes the producer's transactional offset
commits there (Kafka's scheduleHandleTxnCompletion).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from brokerd.protocol.errors import ErrorCode, error_code_of
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import build, response_module

from ..cluster_action import request_from_broker
from ..connection import current_peer
from .context import HandlerContext

if TYPE_CHECKING:
    from brokerd.groups.coordinator import GroupCoordinator
    from brokerd.log.log import Log
    from brokerd.replication.partition import Partition
    from brokerd.replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

API_KEY = 27
GROUP_METADATA_TOPIC = "__consumer_offsets"
REQUEST_TIMEOUT_S = 30.0  # request.timeout.ms (Kafka's default), the marker's acks=all wait


@dataclass
class _Outcome:
    """One partition's answer, and what is left to do before it is final."""

    topic: str
    partition: int
    error: int = ErrorCode.none
    replicate: tuple[Partition, int] | None = None  # (partition, offset the HW must reach)
    flush: tuple[Log, int] | None = None  # when flush.messages / flush.ms are due


@dataclass(frozen=True)
class MarkerRequest:
    """One marker of a WriteTxnMarkers request: a transaction's end on some partitions."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: tuple[tuple[str, int], ...]
    transaction_version: int = 0


@dataclass
class _Marker:
    producer_id: int
    outcomes: list[_Outcome] = field(default_factory=list)
    request: MarkerRequest | None = None


async def handle_write_txn_markers(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    markers = [_Marker(int(m.producer_id)) for m in body.markers]
    if not request_from_broker(ctx.config, ctx.auth):
        log.info("refusing WriteTxnMarkers from %s: not a broker", current_peer.get())
        for marker, requested in zip(markers, body.markers, strict=True):
            marker.outcomes = [
                _Outcome(str(t.name), int(p), ErrorCode.cluster_authorization_failed)
                for t in requested.topics
                for p in t.partition_indexes
            ]
        return _response(module, markers)

    for marker, requested in zip(markers, body.markers, strict=True):
        marker.request = MarkerRequest(
            int(requested.producer_id),
            int(requested.producer_epoch),
            int(requested.coordinator_epoch),
            bool(requested.transaction_result),
            tuple((str(t.name), int(p)) for t in requested.topics for p in t.partition_indexes),
            int(getattr(requested, "transaction_version", 0)),
        )
    await _write(ctx.replicas, ctx.groups, markers)
    return _response(module, markers)


async def write_local_markers(
    replicas: ReplicaManager,
    groups: GroupCoordinator,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    partitions: list[tuple[str, int]],
) -> dict[tuple[str, int], int]:
    """The transaction coordinator's markers for partitions led by this very broker,
    written as a WriteTxnMarkers request from it would be (the same appends, acks=all wait
    and offset-commit completion), without the loopback connection: the error per
    partition."""
    marker = _Marker(producer_id)
    marker.request = MarkerRequest(
        producer_id, producer_epoch, coordinator_epoch, commit, tuple(partitions)
    )
    await _write(replicas, groups, [marker])
    return {(o.topic, o.partition): int(o.error) for o in marker.outcomes}


async def _write(replicas: ReplicaManager, groups: GroupCoordinator, markers: list[_Marker]):
    # Every append before the first await: markers of one request land in order.
    for marker in markers:
        request = marker.request
        assert request is not None
        for topic, index in request.partitions:
            marker.outcomes.append(_append(replicas, request, topic, index))

    to_flush = [o for m in markers for o in m.outcomes if o.flush is not None]
    if to_flush:
        await asyncio.to_thread(_flush, to_flush)
    pending = [(o, o.replicate) for m in markers for o in m.outcomes if o.replicate is not None]
    if pending:
        codes = await asyncio.gather(
            *(
                replicas.wait_for_replication(partition, offset, REQUEST_TIMEOUT_S)
                for _, (partition, offset) in pending
            )
        )
        for (outcome, _), code in zip(pending, codes, strict=True):
            if outcome.error == ErrorCode.none:
                outcome.error = code
    for marker in markers:
        assert marker.request is not None
        _complete_offset_commits(groups, marker, marker.request.commit)


def _append(replicas: ReplicaManager, requested: MarkerRequest, topic: str, index: int) -> _Outcome:
    outcome = _Outcome(topic, index)
    try:
        leader = replicas.leader(topic, index)
        info = replicas.append_txn_marker(
            leader,
            requested.producer_id,
            requested.producer_epoch,
            requested.coordinator_epoch,
            requested.commit,
            requested.transaction_version,
        )
    except Exception as exc:  # noqa: BLE001 - every failure is this partition's answer
        outcome.error = error_code_of(exc)
        if outcome.error == ErrorCode.unknown_server_error:
            log.exception("transaction marker for %s-%d failed", topic, index)
        return outcome
    outcome.replicate = (leader, info.last_offset + 1)
    if info.flush_needed:
        outcome.flush = (leader.log, info.last_offset + 1)
    return outcome


def _flush(outcomes: list[_Outcome]) -> None:
    for outcome in outcomes:
        if outcome.flush is None:
            continue
        partition_log, offset = outcome.flush
        try:
            partition_log.flush(offset)
        except (OSError, ValueError) as exc:
            log.error("fsync of %s failed: %s", partition_log.dir.name, exc)
            outcome.error = ErrorCode.kafka_storage_error
            outcome.replicate = None


def _complete_offset_commits(groups: GroupCoordinator, marker: _Marker, commit: bool) -> None:
    """The producer's transactional offset commits on the `__consumer_offsets` partitions
    that took the marker become visible (COMMIT) or are dropped (ABORT)."""
    partitions = [
        o.partition
        for o in marker.outcomes
        if o.topic == GROUP_METADATA_TOPIC and o.error == ErrorCode.none
    ]
    if partitions:
        groups.on_txn_completion(marker.producer_id, partitions, commit)


def _response(module, markers: list[_Marker]):
    results = []
    for marker in markers:
        by_topic: dict[str, list] = {}
        for outcome in marker.outcomes:
            by_topic.setdefault(outcome.topic, []).append(
                build(
                    module.WritableTxnMarkerPartitionResult,
                    partition_index=outcome.partition,
                    error_code=ErrorCode(outcome.error),
                )
            )
        results.append(
            build(
                module.WritableTxnMarkerResult,
                producer_id=marker.producer_id,
                topics=tuple(
                    build(module.WritableTxnMarkerTopicResult, name=name, partitions=tuple(parts))
                    for name, parts in by_topic.items()
                ),
            )
        )
    return build(module.WriteTxnMarkersResponse, markers=tuple(results))


HANDLERS = {API_KEY: handle_write_txn_markers}
