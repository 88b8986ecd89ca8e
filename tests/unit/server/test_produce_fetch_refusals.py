"""Produce and Fetch refusals decided before any log is touched: the replica manager is
not in the context, so reaching it fails the test."""

import pytest

from brokerd.protocol.errors import ErrorCode
from brokerd.records import compression
from brokerd.records.batch import SimpleRecord, build_batch
from brokerd.server.fetch_session import FetchSessionCache
from brokerd.server.handlers.fetch import handle_fetch
from brokerd.server.handlers.produce import handle_produce
from tests.unit.server.handler_context import (
    call,
    context,
    fetch_request,
    on_listener,
    produce_request,
)


@pytest.mark.parametrize(
    ("records", "acks", "version", "expected"),
    [
        (build_batch([SimpleRecord(b"v", b"k")]), 2, 9, ErrorCode.invalid_required_acks),
        (b"", 1, 9, ErrorCode.corrupt_message),
        (
            build_batch([SimpleRecord(b"v", b"k")], compression_type=compression.ZSTD),
            1,
            6,
            ErrorCode.unsupported_compression_type,
        ),
    ],
)
async def test_produce_refusals_before_the_log(records, acks, version, expected):
    response = await call(handle_produce, context(), produce_request(bytes(records), acks, version))
    (partition,) = response.responses[0].partition_responses
    assert partition.error_code == expected
    assert partition.base_offset == -1


async def test_a_follower_fetch_on_a_client_listener_is_refused_without_a_session():
    ctx = context()
    with on_listener("PLAINTEXT"):
        response = await call(handle_fetch, ctx, fetch_request(replica_id=2, epoch=0, topics=["t"]))
    assert response.error_code == ErrorCode.none and response.session_id == 0
    (partition,) = response.responses[0].partitions
    assert partition.error_code == ErrorCode.topic_authorization_failed
    assert ctx.fetch_sessions.sessions == {}


async def test_fetch_session_errors_are_top_level():
    ctx = context(fetch_sessions=FetchSessionCache(10))
    response = await call(handle_fetch, ctx, fetch_request(session_id=12345, epoch=1))
    assert response.error_code == ErrorCode.fetch_session_id_not_found
    session = ctx.fetch_sessions.new_session()
    response = await call(handle_fetch, ctx, fetch_request(session_id=session.session_id, epoch=5))
    assert response.error_code == ErrorCode.invalid_fetch_session_epoch


async def test_an_empty_fetch_opens_a_session_and_an_incremental_one_continues_it():
    ctx = context(fetch_sessions=FetchSessionCache(10))
    opened = await call(handle_fetch, ctx, fetch_request(epoch=0))
    assert opened.error_code == ErrorCode.none and opened.session_id != 0
    again = await call(handle_fetch, ctx, fetch_request(session_id=opened.session_id, epoch=1))
    assert again.error_code == ErrorCode.none and again.session_id == opened.session_id
