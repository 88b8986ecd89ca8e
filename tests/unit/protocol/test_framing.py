import asyncio
import io
import struct

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.request_header.v2.header import RequestHeader
from kio.serial import entity_reader, entity_writer

from brokerd.protocol import framing
from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.versions import SUPPORTED


def encode_request(api_key, api_version, correlation_id, body=b"", client_id="test"):
    buffer = io.BytesIO()
    header = RequestHeader(
        request_api_key=api_key,
        request_api_version=api_version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    entity_writer(RequestHeader)(buffer, header)
    return buffer.getvalue() + body


def api_versions_v3_frame(correlation_id=7):
    body = io.BytesIO()
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    entity_writer(ApiVersionsRequest)(body, request)
    return encode_request(18, 3, correlation_id, body.getvalue())


def test_decode_flexible_request_with_header_v2():
    request = framing.decode_request(api_versions_v3_frame(42))
    assert (request.api_key, request.api_version, request.correlation_id) == (18, 3, 42)
    assert request.client_id == "test"
    assert request.body.client_software_name == "t"


def test_trailing_bytes_are_ignored_as_kafka_does():
    request = framing.decode_request(api_versions_v3_frame() + b"\x01\x00\x00")
    assert request.body.client_software_name == "t"


def test_unadvertised_api_is_unsupported():
    with pytest.raises(framing.UnsupportedRequest):
        framing.decode_request(struct.pack(">hhi", 999, 0, 1) + b"\xff\xff")


def test_newer_api_versions_request_gets_v0_shaped_error():
    request = framing.decode_request(encode_request(18, 99, 5))
    assert request.unsupported_api_versions
    frame = framing.unsupported_api_versions_response(request)
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    (correlation_id,) = struct.unpack_from(">i", frame, 4)
    assert correlation_id == 5
    response, used = entity_reader(ApiVersionsResponseV0)(frame, 8)
    assert used == len(frame) - 8
    assert response.error_code == ErrorCode.unsupported_version
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert ranges[18] == (SUPPORTED[18].min_version, SUPPORTED[18].max_version)


def test_api_versions_response_header_is_never_flexible():
    request = framing.decode_request(api_versions_v3_frame(9))
    response = ApiVersionsResponse(
        error_code=ErrorCode.none, api_keys=(), throttle_time=__import__("datetime").timedelta(0)
    )
    frame = framing.encode_response(request, response)
    # size, correlation id, then the body at once: error code 0 (no tagged-field byte).
    assert frame[4:8] == struct.pack(">i", 9)
    assert frame[8:10] == b"\x00\x00"


async def read_frames(data: bytes, max_bytes=1024):
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    frames = []
    while True:
        frame = await framing.read_frame(reader, max_bytes)
        if frame is None:
            return frames
        frames.append(frame)


async def test_read_frames_until_clean_eof():
    payload = struct.pack(">hhi", 18, 0, 1)
    frames = await read_frames(struct.pack(">i", len(payload)) * 1 + payload + payload[:0])
    assert frames == [payload]


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">i", -1),
        struct.pack(">i", 3) + b"abc",
        struct.pack(">i", 5000) + b"x" * 5000,
        struct.pack(">i", 100) + b"short",
        b"\x00\x00",
    ],
)
async def test_bad_frames_raise_frame_error(data):
    with pytest.raises(framing.FrameError):
        await read_frames(data)


def test_null_in_non_nullable_array_is_a_frame_error():
    # Metadata v12 with a null topics array is legal (all topics) ...
    header = encode_request(3, 12, 1)
    framing.decode_request(header + b"\x00\x00\x00\x00")
    # ... but ApiVersions v3 with a null software name is not.
    with pytest.raises(framing.FrameError):
        framing.decode_request(encode_request(18, 3, 1) + b"\x00\x00\x00")
