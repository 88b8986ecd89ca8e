"""Fetch (1): long poll, whole batches, KIP-74 sizing, fetch sessions, sendfile.

The response is encoded here rather than through kio because the records of each
partition are not in memory: the header and every partition's prefix are written as bytes,
and each partition's records go out with sendfile from the segment file, in order.
"""

from __future__ import annotations

import logging
import struct
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from brokerd.protocol.errors import ErrorCode, KafkaError, error_code_of
from brokerd.protocol.framing import SIZE, Request, response_header
from brokerd.security.acl import AclOperation, ResourceType

from ..cluster_action import request_from_broker
from ..connection import ResponseParts
from ..fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    NO_SESSION,
    SWEEP_S,
    FetchSession,
    SessionPartition,
)
from .context import HandlerContext

log = logging.getLogger(__name__)

# A parked session fetch registers on each of its partitions up to this many; a larger
# session (a follower's) waits once for any of them.
WATCHED_SESSION_PARTITIONS = 100

FLEXIBLE_FROM = 12
READ_COMMITTED = 1


@dataclass
class PartitionResult:
    topic: str
    partition: int
    error: ErrorCode = ErrorCode.none
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    region: Any = None  # a file region (file, position, length) or None
    # read_committed: (producer id, first offset) of the aborted transactions in the range.
    aborted_transactions: list[tuple[int, int]] | None = None
    # Read without error up to the end the fetcher may see: nothing more until notified.
    caught_up: bool = False

    @property
    def size(self) -> int:
        return self.region.length if self.region is not None else 0


async def handle_fetch(ctx: HandlerContext, request: Request):
    body = request.body
    version = request.api_version
    sessions = ctx.fetch_sessions
    session = None
    error = ErrorCode.none
    response_session_id = NO_SESSION
    session_id = getattr(body, "session_id", NO_SESSION)
    epoch = getattr(body, "session_epoch", FINAL_EPOCH)

    requested = OrderedDict()
    for topic in body.topics:
        for p in topic.partitions:
            requested[(topic.topic, p.partition)] = SessionPartition(
                p.fetch_offset, p.partition_max_bytes, getattr(p, "current_leader_epoch", -1)
            )
    if body.replica_id >= 0 and not request_from_broker(ctx.config, ctx.auth):
        # A follower's fetch moves the HW and the ISR: from a client listener it gets what
        # Kafka answers a follower without CLUSTER_ACTION, and touches no fetch session.
        refused = [
            PartitionResult(t, p, ErrorCode.topic_authorization_failed) for t, p in requested
        ]
        return _encode(request, ErrorCode.none, NO_SESSION, refused)

    try:
        if epoch == INITIAL_EPOCH or epoch == FINAL_EPOCH:
            if session_id != NO_SESSION:
                sessions.close(session_id)
            if epoch == INITIAL_EPOCH:
                session = sessions.new_session(body.replica_id >= 0, len(requested))
                if session is not None:
                    session.partitions = requested
                    response_session_id = session.session_id
            wanted = requested
        else:
            session = sessions.incremental(session_id, epoch)
            response_session_id = session.session_id
            for forgotten in getattr(body, "forgotten_topics_data", ()):
                for partition in forgotten.partitions:
                    session.partitions.pop((forgotten.topic, partition), None)
            for key, state in requested.items():
                previous = session.partitions.get(key)
                if previous is not None:
                    state.last_high_watermark = previous.last_high_watermark
                    state.last_log_start_offset = previous.last_log_start_offset
                session.partitions[key] = state
            wanted = session.partitions
    except KafkaError as exc:
        return _encode(request, exc.error_code, NO_SESSION, [])

    if not wanted:  # nothing listed, nothing in the session: nothing to read or wait for
        return _encode(request, error, response_session_id, [], version=version)
    incremental = session is not None and epoch not in (INITIAL_EPOCH, FINAL_EPOCH)
    purgatory = ctx.replicas.purgatory
    if not sessions.leadership_tracked:
        sessions.leadership_tracked = True
        ctx.replicas.leadership_listeners.append(
            lambda gained, lost: purgatory.notify_many(gained | lost)
        )
    seq = purgatory.change_seq
    if incremental:
        assert session is not None
        wanted = _session_reads(ctx, session, requested, time.monotonic(), body.replica_id)
    denied = _unreadable(ctx, wanted, body.replica_id)  # ACLs: READ on each topic
    if denied:
        wanted = OrderedDict((k, v) for k, v in wanted.items() if k not in denied)
    # What a parked fetch waits for: an incremental one, any partition of its session.
    everything = session.partitions if incremental and session is not None else wanted
    max_wait = body.max_wait.total_seconds()
    deadline = time.monotonic() + max(max_wait, 0)
    max_bytes = min(getattr(body, "max_bytes", 0x7FFFFFFF), ctx.config.server.fetch_max_bytes)
    isolation = getattr(body, "isolation_level", 0)
    while True:
        results = _read_all(ctx, wanted, max_bytes, body.replica_id, isolation)
        total = sum(r.size for r in results)
        has_error = any(r.error != ErrorCode.none for r in results)
        remaining = deadline - time.monotonic()
        if total >= body.min_bytes or has_error or remaining <= 0 or not everything:
            break
        # What this pass found changed is answered after the wait too, though nothing may
        # notify it again (a log start moved by retention, found by a sweep).
        carried = (
            [(r.topic, r.partition) for r in results if _changed(wanted[(r.topic, r.partition)], r)]
            if incremental
            else []
        )
        _release(results)  # not enough yet: read again after the wait
        if incremental and len(everything) > WATCHED_SESSION_PARTITIONS:
            assert session is not None
            # One wait for any partition of a large session, not one registration each.
            woken = await purgatory.wait_any(session.partitions.__contains__, remaining)
        else:
            # Per partition: a notify then wakes only its own watchers, whatever the
            # number of parked sessions (every parked wait_any is asked at every notify).
            woken = await purgatory.wait(list(everything), remaining)
        if not woken and total == 0 and not purgatory.closed:
            # max_wait passed without an append or a HW move in any of them: the answer
            # is the (empty) one already read, not a second pass over every partition.
            break
        if incremental and not purgatory.closed:
            assert session is not None
            seq = purgatory.change_seq
            wanted = _session_reads(
                ctx, session, requested, time.monotonic(), body.replica_id, full=False
            )
            for key in carried:
                if key not in wanted and key in session.partitions:
                    wanted[key] = session.partitions[key]
            if denied:
                wanted = OrderedDict((k, v) for k, v in wanted.items() if k not in denied)
            continue
        if purgatory.closed:
            results = _read_all(ctx, wanted, max_bytes, body.replica_id, isolation)
            break

    read = results
    if incremental:
        results = [r for r in results if _changed(wanted[(r.topic, r.partition)], r)]
    results.extend(PartitionResult(t, p, ErrorCode.topic_authorization_failed) for t, p in denied)
    if session is not None:
        # Not caught up: read again next time. As Kafka's IncrementalFetchContext rotates
        # its partitions, one that got data now goes after the others, and one that got
        # nothing (max_bytes ran out before it) comes first, so none starves.
        read_keys = {(r.topic, r.partition) for r in read}
        behind = [
            r for r in read if not r.caught_up and (r.topic, r.partition) in session.partitions
        ]
        session.pending = dict.fromkeys(
            [(r.topic, r.partition) for r in behind if r.size == 0]
            + [key for key in session.pending if key not in read_keys]
            + [(r.topic, r.partition) for r in behind if r.size > 0]
            + denied
        )
        session.seen_seq = seq
        if not incremental:  # a new session read everything: no sweep due yet
            session.sweep_due = time.monotonic() + _sweep_interval(ctx)
        for r in results:
            kept = session.partitions.get((r.topic, r.partition))
            if kept is not None:
                # After an error the partition is sent again once it recovers (Kafka
                # forgets the HW it sent), even with the HW it had before.
                ok = r.error == ErrorCode.none
                kept.last_high_watermark = r.high_watermark if ok else None
                kept.last_log_start_offset = r.log_start_offset
    # Kafka's BytesOutPerSec (consumers) or ReplicationBytesOutPerSec (followers).
    ctx.topic_stats.fetched(results, body.replica_id >= 0)
    return _encode(request, error, response_session_id, results, isolation, version)


def _session_reads(
    ctx: HandlerContext,
    session: FetchSession,
    requested: OrderedDict,
    now: float,
    replica_id: int,
    full: bool = True,
) -> OrderedDict:
    """The partitions an incremental fetch reads: those listed in it, those notified since
    the session's last answer and those pending, in that session's order of need; all of
    them when the journal no longer reaches back or the sweep is due (`full`). A follower's
    sweep reads only what `_follower_sweep` finds changed."""
    partitions = session.partitions
    # A walk of the broker's changes longer than the session costs more than its reads.
    changed = ctx.replicas.purgatory.changes_since(session.seen_seq, len(partitions))
    swept: list = []
    if full and (changed is None or now >= session.sweep_due):
        session.sweep_due = now + _sweep_interval(ctx)
        if changed is None or replica_id < 0:
            return partitions
        swept = _follower_sweep(ctx, session, replica_id)
    keys = dict.fromkeys(session.pending)
    keys.update(dict.fromkeys(requested))
    if changed is None:
        keys.update(dict.fromkeys(partitions))
    else:
        keys.update(dict.fromkeys(changed))
    keys.update(dict.fromkeys(swept))
    return OrderedDict((key, partitions[key]) for key in keys if key in partitions)


def _follower_sweep(ctx: HandlerContext, session: FetchSession, replica_id: int) -> list:
    """A follower session's periodic look at every partition, without reading them: the
    follower's caught-up time renewed where it is at the log end (what keeps a quiet
    follower in the ISR), and the partitions to read returned: those with records for it,
    a high watermark or log start it was not told (moved without a notification, e.g. by
    retention) or no longer led here (read for their error)."""
    replicas = ctx.replicas
    leaders = replicas.leaders
    to_read = []
    for key, state in session.partitions.items():
        leader = leaders.get(key)
        if leader is None or 0 <= state.current_leader_epoch != leader.leader_epoch:
            to_read.append(key)
            continue
        replicas.record_follower_fetch(replica_id, leader, state.fetch_offset)
        partition_log = leader.log
        if (
            state.fetch_offset < partition_log.log_end_offset
            or partition_log.high_watermark != state.last_high_watermark
            or partition_log.log_start_offset != state.last_log_start_offset
        ):
            to_read.append(key)
    return to_read


def _sweep_interval(ctx: HandlerContext) -> float:
    """Seconds between two reads of a whole session: a third of replica.lag.time.max.ms
    (a quiet follower's caught-up time is renewed well before the ISR check), at most
    SWEEP_S."""
    lag_s = ctx.replicas.settings.replica_lag_time_max_ms / 1000
    return min(SWEEP_S, max(lag_s / 3, 0.05))


def _unreadable(ctx: HandlerContext, wanted, replica_id: int) -> list[tuple[str, int]]:
    """A consumer's partitions of topics it may not READ (a follower's fetch was checked for
    CLUSTER_ACTION already), as Kafka's KafkaApis filters them."""
    if replica_id >= 0 or not ctx.auth.enabled:
        return []
    readable = ctx.auth.filter(AclOperation.READ, ResourceType.TOPIC, (t for t, _ in wanted))
    return [key for key in wanted if key[0] not in readable]


def _release(results: list[PartitionResult]) -> None:
    for result in results:
        if result.region is not None:
            result.region.release()


def _changed(state: SessionPartition, result: PartitionResult) -> bool:
    return (
        result.size > 0
        or result.error != ErrorCode.none
        or result.high_watermark != state.last_high_watermark
        or result.log_start_offset != state.last_log_start_offset
    )


def _read_all(
    ctx: HandlerContext, wanted, max_bytes: int, replica_id: int, isolation: int = 0
) -> list[PartitionResult]:
    """Consumers read below the HW (read_committed: below the last stable offset, told of
    the aborted transactions in what they get); followers (replica_id >= 0) up to the LEO,
    and their fetch offset tells the leader their LEO."""
    from_replica = replica_id >= 0
    read_committed = isolation == READ_COMMITTED and not from_replica
    results: list[PartitionResult] = []
    remaining = max_bytes
    got_data = False  # a flag, not a look back over the results: fetches list thousands
    for (topic, partition), state in wanted.items():
        result = PartitionResult(topic, partition)
        leader = None
        try:
            leader = ctx.replicas.leader(topic, partition)
            if state.current_leader_epoch >= 0:
                if state.current_leader_epoch < leader.leader_epoch:
                    raise KafkaError(ErrorCode.fenced_leader_epoch)
                if state.current_leader_epoch > leader.leader_epoch:
                    raise KafkaError(ErrorCode.unknown_leader_epoch)
            if from_replica:
                ctx.replicas.record_follower_fetch(replica_id, leader, state.fetch_offset)
            partition_log = leader.log
            high_watermark = partition_log.high_watermark
            result.high_watermark = high_watermark
            last_stable_offset = partition_log.last_stable_offset
            result.last_stable_offset = last_stable_offset
            result.log_start_offset = partition_log.log_start_offset
            limit = min(state.max_bytes, remaining)
            # KIP-74: the first partition with data may exceed the limits by one batch.
            first_data = not got_data
            if limit > 0 or first_data:
                data = partition_log.read(
                    state.fetch_offset,
                    max(limit, 0),
                    max_offset=None
                    if from_replica
                    else last_stable_offset
                    if read_committed
                    else high_watermark,
                    min_one_message=first_data,
                    owned=True,  # its own descriptor: sent later, maybe after a delete
                )
                if data.region is not None and data.region.length > 0:
                    result.region = data.region
                    remaining -= data.region.length
                    got_data = True
                    if read_committed:
                        result.aborted_transactions = [
                            (txn.producer_id, txn.first_offset)
                            for txn in partition_log.aborted_transactions_for_read(data)
                        ]
            if result.region is None:
                end = (
                    partition_log.log_end_offset
                    if from_replica
                    else last_stable_offset
                    if read_committed
                    else high_watermark
                )
                result.caught_up = state.fetch_offset >= end
        except Exception as exc:  # noqa: BLE001 - the error belongs to this partition
            result = PartitionResult(topic, partition, error_code_of(exc))
            if leader is not None and result.error == ErrorCode.offset_out_of_range:
                # A follower restarts from the leader's log start when it fell behind it.
                result.log_start_offset = leader.log.log_start_offset
                result.high_watermark = leader.log.high_watermark
            if result.error == ErrorCode.unknown_server_error:
                log.exception("fetch from %s-%d failed", topic, partition)
        results.append(result)
    return results


# Encoding -----------------------------------------------------------------------------------

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _string(text: str, flexible: bool) -> bytes:
    raw = text.encode("utf-8")
    return (_uvarint(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw


def _array_length(count: int, flexible: bool) -> bytes:
    return _uvarint(count + 1) if flexible else _I32.pack(count)


def _encode(
    request: Request,
    error: ErrorCode,
    session_id: int,
    results: list[PartitionResult],
    isolation: int = 0,
    version: int | None = None,
) -> ResponseParts:
    version = request.api_version if version is None else version
    flexible = version >= FLEXIBLE_FROM
    parts: list[Any] = []
    out = bytearray()
    out += _I32.pack(0)  # throttle_time_ms
    if version >= 7:
        out += _I16.pack(error) + _I32.pack(session_id)
    by_topic: OrderedDict[str, list[PartitionResult]] = OrderedDict()
    for r in results:
        by_topic.setdefault(r.topic, []).append(r)
    out += _array_length(len(by_topic), flexible)
    for topic, partitions in by_topic.items():
        out += _string(topic, flexible)
        out += _array_length(len(partitions), flexible)
        for r in partitions:
            out += _I32.pack(r.partition) + _I16.pack(r.error)
            out += _I64.pack(r.high_watermark) + _I64.pack(r.last_stable_offset)
            if version >= 5:
                out += _I64.pack(r.log_start_offset)
            # aborted_transactions: null for read_uncommitted.
            if isolation == READ_COMMITTED:
                aborted = r.aborted_transactions or ()
                out += _array_length(len(aborted), flexible)
                for producer_id, first_offset in aborted:
                    out += _I64.pack(producer_id) + _I64.pack(first_offset)
                    if flexible:
                        out += b"\x00"  # aborted transaction tagged fields
            else:
                out += b"\x00" if flexible else _I32.pack(-1)
            if version >= 11:
                out += _I32.pack(-1)  # preferred_read_replica
            size = r.size
            out += _uvarint(size + 1) if flexible else _I32.pack(size)
            if size:
                parts.append(bytes(out))
                parts.append(r.region)
                out = bytearray()
            if flexible:
                out += b"\x00"  # partition tagged fields
        if flexible:
            out += b"\x00"  # topic tagged fields
    if flexible:
        out += b"\x00"  # response tagged fields
    parts.append(bytes(out))
    header = response_header(request.api_key, request.correlation_id, flexible)
    body_size = sum(len(p) if isinstance(p, bytes) else p.length for p in parts)
    return ResponseParts([SIZE.pack(len(header) + body_size) + header, *parts])


HANDLERS = {1: handle_fetch}
