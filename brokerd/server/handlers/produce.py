"""Produce (0): per-partition appends; errors stay with their partition.

The log validates batches as Kafka's LogValidator does (CRC, max.message.bytes, the
records against their header, compressed ones decompressed under a cap, keys on compacted
topics, timestamps) and up-converts v0/v1 message sets; this handler routes and reports,
with v8+'s record_errors naming the records at fault (KIP-467).
Versions 0-2 (schemas in brokerd/protocol/produce_legacy.py) carry those message sets and
get the older response shapes, which `build` fills from the same fields. zstd needs v7+,
as in Kafka (a client that negotiated less cannot expect it to be read back).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from typing import TYPE_CHECKING

from brokerd.protocol.errors import ErrorCode, KafkaError, error_code_of
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation as Op
from brokerd.security.acl import ResourceType

from ..request_order import effect_taken
from . import produce_response
from .context import HandlerContext

if TYPE_CHECKING:
    from brokerd.log.log import Log

log = logging.getLogger(__name__)

VALID_ACKS = (-1, 0, 1)
TRANSACTIONAL = 0x10  # v2 batch attributes bit 4
ZSTD_MIN_VERSION = 7
ZSTD = 4


def _has_zstd_batch(records: bytes) -> bool:
    """Whether any v2 batch header says zstd (legacy message sets cannot hold it)."""
    position = 0
    while position + 23 <= len(records):
        length = int.from_bytes(records[position + 8 : position + 12], "big", signed=True)
        if records[position + 16] == 2 and records[position + 22] & 0x07 == ZSTD:
            return True
        if length <= 0:
            return False  # the log reports the corruption
        position += 12 + length
    return False


def _record_errors(module, record_errors) -> tuple:
    """KIP-467: the records that made the batch fail, by index in the batch (Produce v8+;
    `build` leaves the field out of older versions)."""
    entry = getattr(module, "BatchIndexAndErrorMessage", None)
    if entry is None or not record_errors:
        return ()
    return tuple(
        entry(batch_index=index, batch_index_error_message=message)
        for index, message in record_errors
    )


def _log_append_time(ms: int) -> datetime.datetime | None:
    if ms < 0:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)


async def handle_produce(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    acks = body.acks
    if getattr(body, "transactional_id", None) is None and _has_transactional_batch(body):
        # Kafka: transactional records need the request's transactional id (and WRITE on
        # it); without one the whole request is refused.
        return _refuse_all(module, body, ErrorCode.transactional_id_authorization_failed)
    # Every append happens before the first await (see _append); fsyncs come after.
    appended: list[tuple[str, list[dict]]] = []
    to_flush: list[tuple[dict, Log, int]] = []
    to_replicate: list[tuple[dict, object, int]] = []
    refused = _authorization_error(ctx, body)  # ACLs: WRITE on each topic (KafkaApis)
    for topic_data in body.topic_data:
        partitions = []
        for partition_data in topic_data.partition_data:
            if topic_data.name in refused:
                partitions.append(_refused(partition_data.index, refused[topic_data.name]))
                continue
            fields, flush = _append(
                ctx, topic_data.name, partition_data, acks, request.api_version, module
            )
            partitions.append(fields)
            if flush is not None:
                to_flush.append((fields, *flush))
            replicate = fields.pop("_replicate", None)
            if replicate is not None:
                to_replicate.append((fields, *replicate))
        appended.append((topic_data.name, partitions))
    # Appended: a Produce pipelined behind this one on the connection may start (it waits
    # for none of this one's fsync or replication, see brokerd/server/request_order.py).
    effect_taken()
    if to_flush:
        # flush.messages / flush.ms: Kafka acknowledges after the fsync. Run it on a
        # thread so that the loop keeps serving while the disk works.
        await asyncio.to_thread(_flush, to_flush)
    if to_replicate:
        await _wait_for_replication(ctx, to_replicate, body.timeout.total_seconds())
    if acks == 0:
        return None  # the client reads no response; errors show only in broker logs
    written = produce_response.encoded(request, appended)  # the common case, kio's bytes
    if written is not None:
        return written
    topics = [
        build(
            module.TopicProduceResponse,
            name=name,
            partition_responses=tuple(
                build(module.PartitionProduceResponse, **fields) for fields in partitions
            ),
        )
        for name, partitions in appended
    ]
    return build(module.ProduceResponse, responses=tuple(topics), throttle_time=NO_THROTTLE)


async def _wait_for_replication(ctx: HandlerContext, pending, timeout: float) -> None:
    """acks=all: each partition answers once its ISR has the batch (the produce purgatory)."""
    codes = await asyncio.gather(
        *(ctx.replicas.wait_for_replication(p, offset, timeout) for _, p, offset in pending)
    )
    for (fields, _, _), code in zip(pending, codes, strict=True):
        if code != ErrorCode.none and fields["error_code"] == ErrorCode.none:
            fields.update(error_code=code, base_offset=-1, log_start_offset=-1)
            fields["error_message"] = f"acks=all: {ErrorCode(code).name}"


def _authorization_error(ctx: HandlerContext, body) -> dict[str, ErrorCode]:
    """Topics refused by the ACLs and why: a transactional producer needs WRITE on its
    transactional id, and every producer WRITE on each topic, as Kafka checks them."""
    names = [t.name for t in body.topic_data]
    if not ctx.auth.enabled:
        return {}
    transactional_id = getattr(body, "transactional_id", None)
    if transactional_id is not None and not ctx.auth.authorize(
        Op.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        return dict.fromkeys(names, ErrorCode.transactional_id_authorization_failed)
    writable = ctx.auth.filter(Op.WRITE, ResourceType.TOPIC, names)
    return {n: ErrorCode.topic_authorization_failed for n in names if n not in writable}


def _refused(index: int, code: ErrorCode) -> dict:
    return {
        "index": index,
        "error_code": code,
        "base_offset": -1,
        "log_append_time": None,
        "log_start_offset": -1,
        "record_errors": (),
        "error_message": None,
    }


def _has_transactional_batch(body) -> bool:
    """Whether any partition's first v2 batch has the transactional bit (a produce request
    of v3+ holds one batch per partition; v0/v1 message sets cannot be transactional)."""
    for topic_data in body.topic_data:
        for partition_data in topic_data.partition_data:
            records = partition_data.records
            if records and len(records) > 22 and records[16] == 2 and records[22] & TRANSACTIONAL:
                return True
    return False


def _refuse_all(module, body, code: ErrorCode):
    """Every partition of the request answered `code` (Kafka's error response)."""
    if body.acks == 0:
        return None
    fields = {
        "error_code": code,
        "base_offset": -1,
        "log_append_time": None,
        "log_start_offset": -1,
        "record_errors": (),
        "error_message": None,
    }
    topics = tuple(
        build(
            module.TopicProduceResponse,
            name=topic_data.name,
            partition_responses=tuple(
                build(module.PartitionProduceResponse, index=p.index, **fields)
                for p in topic_data.partition_data
            ),
        )
        for topic_data in body.topic_data
    )
    return build(module.ProduceResponse, responses=topics, throttle_time=NO_THROTTLE)


def _flush(to_flush: list[tuple[dict, Log, int]]) -> None:
    for fields, partition_log, offset in to_flush:
        try:
            partition_log.flush(offset)
        except (OSError, ValueError) as exc:
            log.error("fsync of %s failed: %s", partition_log.dir.name, exc)
            fields.update(error_code=ErrorCode.kafka_storage_error, base_offset=-1)
            fields["error_message"] = f"fsync failed: {exc}"


def _append(
    ctx: HandlerContext, topic: str, partition_data, acks: int, version: int, module
) -> tuple[dict, tuple | None]:
    """The partition's response fields, and (log, offset) when an fsync is due first."""
    fields = {
        "index": partition_data.index,
        "error_code": ErrorCode.none,
        "base_offset": -1,
        "log_append_time": None,
        "log_start_offset": -1,
        "record_errors": (),
        "error_message": None,
    }
    try:
        if acks not in VALID_ACKS:
            raise KafkaError(ErrorCode.invalid_required_acks)
        if not partition_data.records:
            raise KafkaError(ErrorCode.corrupt_message, "empty record set")
        if version < ZSTD_MIN_VERSION and _has_zstd_batch(partition_data.records):
            raise KafkaError(
                ErrorCode.unsupported_compression_type,
                f"zstd needs Produce v{ZSTD_MIN_VERSION}+, this request is v{version}",
            )
        leader = ctx.replicas.leader(topic, partition_data.index)
        # On the loop, no await before it: pipelined requests append in arrival order,
        # which idempotent producers (up to 5 in flight) rely on. A write is short.
        info = ctx.replicas.append(leader, partition_data.records, acks, defer_flush=True)
    except Exception as exc:  # noqa: BLE001 - every failure is this partition's answer
        code = error_code_of(exc)
        if code == ErrorCode.unknown_server_error:
            log.exception("produce to %s-%d failed", topic, partition_data.index)
        fields["error_code"] = code
        fields["error_message"] = getattr(exc, "message", None) or str(exc) or None
        fields["record_errors"] = _record_errors(module, getattr(exc, "record_errors", ()))
        return fields, None
    fields["base_offset"] = info.first_offset
    fields["log_append_time"] = _log_append_time(info.log_append_time)
    fields["log_start_offset"] = info.log_start_offset
    if acks == -1:
        fields["_replicate"] = (leader, info.last_offset + 1)
    return fields, (leader.log, info.last_offset + 1) if info.flush_needed else None


HANDLERS = {0: handle_produce}
