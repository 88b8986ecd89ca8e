"""Produce's answer written directly (brokerd/server/handlers/produce_response.py) is byte for
byte what kio writes for the same answer, in every version it covers; anything it does not
cover is left to kio."""

import datetime

import pytest

from brokerd.protocol import framing
from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.server.handlers import produce_response
from brokerd.server.handlers.produce import handle_produce
from tests.integration.wire_calls import batch
from tests.unit.replication.replica_setup import LOCAL
from tests.unit.server.handler_context import (
    as_received,
    broker_config,
    context,
    produce_request,
)


def _fields(index: int, base_offset: int, **changed) -> dict:
    return {
        "index": index,
        "error_code": ErrorCode.none,
        "base_offset": base_offset,
        "log_append_time": None,
        "log_start_offset": 3,
        "record_errors": (),
        "error_message": None,
        **changed,
    }


def _kio_frame(request, topics) -> bytes:
    module = response_module(0, request.api_version)
    response = build(
        module.ProduceResponse,
        responses=tuple(
            build(
                module.TopicProduceResponse,
                name=name,
                partition_responses=tuple(
                    build(module.PartitionProduceResponse, **fields) for fields in partitions
                ),
            )
            for name, partitions in topics
        ),
        throttle_time=NO_THROTTLE,
    )
    return framing.encode_response(request, response)


@pytest.mark.parametrize(
    "version", range(produce_response.MIN_VERSION, produce_response.MAX_VERSION + 1)
)
def test_every_version_is_written_as_kio_writes_it(version):
    request = as_received(produce_request(b"", version=version))
    topics = [
        ("orders", [_fields(0, 0), _fields(7, 1 << 40)]),
        ("ünïcode-" + "x" * 200, [_fields(300, 5)]),  # a name past one varint byte
    ]
    assert produce_response.encoded(request, topics) == _kio_frame(request, topics)


@pytest.mark.parametrize(
    "changed",
    [
        {"error_code": ErrorCode.not_leader_or_follower},
        {"log_append_time": datetime.datetime(2026, 11, 28, tzinfo=datetime.UTC)},
        {"error_message": "why"},
    ],
)
def test_what_it_does_not_cover_is_left_to_kio(changed):
    request = as_received(produce_request(b"", version=9))
    assert (
        produce_response.encoded(request, [("t", [_fields(0, 0), _fields(1, 0, **changed)])])
        is None
    )
    old = framing.Request(0, 2, 1, None, None, 0)  # v0-v2: the legacy shapes
    assert produce_response.encoded(old, [("t", [_fields(0, 0)])]) is None


async def test_the_handler_answers_with_it(replicas):
    state = await replicas.create_topic("t", [LOCAL], [LOCAL])
    await replicas.become("t", state, [LOCAL])
    ctx = context(
        broker_config({"broker.id": str(LOCAL)}),
        metadata=replicas.metadata,
        replicas=replicas.replicas,
        log_manager=replicas.log_manager,
    )
    for version, expected_offset in ((9, 0), (3, 2)):
        received = as_received(produce_request(bytes(batch(b"a", b"b")), version=version))
        frame = await handle_produce(ctx, received)
        assert isinstance(frame, bytes)  # written directly
        response = framing.decode_response(frame[4:], 0, version)
        (answer,) = response.responses[0].partition_responses
        assert (answer.error_code, answer.base_offset) == (ErrorCode.none, expected_offset)
