"""What checking every length before kio's native reader costs the request path.

decode_request walks each request's schema (brokerd.protocol.bounds) before kio parses it,
because kio's native reader reserves what a count claims and aborts the process when the
reservation fails. The walk also refuses nulls where the schema forbids them, which a
second walk over the parsed entities did before. The peer is kio's reader alone, with no
check, on the same frames, timed in alternating blocks (process CPU time: the work is
CPU-bound, and other processes' load then matters less); the ratio is the checked parse's
throughput over the unchecked one (1.0: the checks are free).

Cases are the requests that dominate a broker's parsing: a consumer's or a follower's Fetch
over many partitions, a Produce of one 16 KiB batch and of 100 partitions, and Metadata for
many topics.
"""

from __future__ import annotations

import datetime
import time

from kio.index import load_request_schema
from kio.serial import entity_reader

from brokerd.protocol import framing
from brokerd.protocol.messages import build, request_module

from . import Result, median, say

AIM_AT_LEAST = 0.4
BLOCK = 50


def nested_type(api_key: int, version: int, name: str) -> type:
    return getattr(request_module(api_key, version), name)


def _frame(body) -> bytes:
    header_type = body.__header_schema__
    header = build(
        header_type,
        request_api_key=body.__api_key__,
        request_api_version=body.__version__,
        correlation_id=1,
        client_id="bench",
    )
    return framing.encode_body(header) + framing.encode_body(body)


def _fetch(partitions: int) -> bytes:
    fetch_partition = nested_type(1, 12, "FetchPartition")
    fetch_topic = nested_type(1, 12, "FetchTopic")
    parts = tuple(
        build(
            fetch_partition,
            partition=i,
            current_leader_epoch=3,
            fetch_offset=1_000_000 + i,
            last_fetched_epoch=-1,
            log_start_offset=0,
            partition_max_bytes=1 << 20,
        )
        for i in range(partitions)
    )
    topics = tuple(
        build(fetch_topic, topic=f"topic-{t}", partitions=parts[t::10]) for t in range(10)
    )
    return _frame(
        build(
            load_request_schema(1, 12),
            replica_id=-1,
            max_wait=datetime.timedelta(milliseconds=500),
            min_bytes=1,
            max_bytes=50 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=topics,
            forgotten_topics_data=(),
            rack_id="",
        )
    )


def _produce(partitions: int, batch_bytes: int) -> bytes:
    partition_type = nested_type(0, 9, "PartitionProduceData")
    topic_type = nested_type(0, 9, "TopicProduceData")
    records = b"\x00" * batch_bytes
    parts = tuple(build(partition_type, index=i, records=records) for i in range(partitions))
    return _frame(
        build(
            load_request_schema(0, 9),
            transactional_id=None,
            acks=-1,
            timeout=datetime.timedelta(seconds=30),
            topic_data=(build(topic_type, name="events", partition_data=parts),),
        )
    )


def _metadata(topics: int) -> bytes:
    topic_type = nested_type(3, 12, "MetadataRequestTopic")
    return _frame(
        build(
            load_request_schema(3, 12),
            topics=tuple(build(topic_type, topic_id=None, name=f"t{i}") for i in range(topics)),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    )


def _unguarded(frame: bytes) -> None:
    """kio's reader alone, with no check at all."""
    api_key, api_version, _ = framing.peek_header(frame)
    schema = load_request_schema(api_key, api_version)
    _, used = entity_reader(schema.__header_schema__)(frame, 0)
    entity_reader(schema)(frame, used)


def _compare(case: str, frame: bytes, rounds: int) -> Result:
    guarded_s: list[float] = []
    unguarded_s: list[float] = []
    for _ in range(rounds):
        for action, into in ((framing.decode_request, guarded_s), (_unguarded, unguarded_s)):
            started = time.process_time()  # CPU time: steadier than wall time on a busy box
            for _ in range(BLOCK):
                action(frame)
            into.append((time.process_time() - started) / BLOCK)
    guarded, unguarded = median(guarded_s), median(unguarded_s)
    say(f"  {case}: {guarded * 1e6:,.1f} µs guarded, {unguarded * 1e6:,.1f} µs kio alone")
    return Result(
        benchmark="request_parsing",
        case=case,
        unit="µs per request",
        measured_label="bounds + kio",
        measured=guarded * 1e6,
        peer_label="kio alone",
        peer=unguarded * 1e6,
        ratio=unguarded / guarded,
        aim_at_least=AIM_AT_LEAST,
        note=f"{len(frame):,} B frame",
    )


def run(quick: bool) -> list[Result]:
    rounds = 20 if quick else 100
    say("request_parsing: decode_request (bounds + kio) vs kio's reader alone")
    return [
        _compare("Fetch v12, 1,000 partitions", _fetch(1000), rounds),
        _compare("Fetch v12, 10 partitions", _fetch(10), rounds),
        _compare("Produce v9, one 16 KiB batch", _produce(1, 16 << 10), rounds),
        _compare("Produce v9, 100 partitions", _produce(100, 1 << 10), rounds),
        _compare("Metadata v12, 1,000 topics", _metadata(1000), rounds),
    ]
