"""Size-prefixed frames, request headers in, response headers out.

A frame is `int32 size` + `size` bytes. A request starts with api_key int16, api_version
int16 and correlation_id int32 in every header version, so those are read before the
header version is known. The header is v2 (tagged fields) when the request body version is
flexible, else v1. Responses carry header v1 when flexible, v0 otherwise, except that the
ApiVersions response header is ALWAYS v0: clients parse it before they know the version.
"""

from __future__ import annotations

import asyncio
import functools
import io
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kio.index import load_request_schema as _kio_request_schema
from kio.index import load_response_schema as _kio_response_schema
from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16

from . import bounds, interbroker
from .errors import ErrorCode
from .versions import API_VERSIONS_KEY, SUPPORTED, api_name, is_supported

# kio resolves a schema by importing its module path at each call (~25-70 us, more than
# decoding a small request): kept per (api key, version), a bounded set.
load_request_schema = functools.cache(_kio_request_schema)
load_response_schema = functools.cache(_kio_response_schema)

SIZE = struct.Struct(">i")
FIXED_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_UVARINT_ZERO = b"\x00"  # an empty tagged-field section


class FrameError(Exception):
    """A frame that cannot be read: the connection is closed, the broker goes on."""


class UnsupportedRequest(FrameError):
    """An API or version the broker does not advertise (Kafka closes the connection)."""


@dataclass(slots=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any  # the kio request entity; None for an unsupported ApiVersions version
    size: int

    @property
    def name(self) -> str:
        return api_name(self.api_key)

    @property
    def unsupported_api_versions(self) -> bool:
        return self.body is None


async def read_frame(
    reader: asyncio.StreamReader,
    max_bytes: int,
    min_size: int = FIXED_HEADER.size,
    admit: Callable[[int], Awaitable[object]] | None = None,
    progressed: Callable[[], object] | None = None,
) -> bytes | None:
    """The next frame's payload, or None at a clean end of stream between frames.

    `min_size` is a request header's; a client reading responses passes 4 (a correlation id).
    The payload is read as its bytes arrive: memory grows with what the peer really sent,
    never with what its size prefix claims. `admit(size)`, awaited once the size is known and
    checked and before the payload is read, may hold reading back (the broker's
    queued.max.request.bytes); `progressed()` is called whenever bytes came in.
    """
    try:
        prefix = await reader.readexactly(SIZE.size)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise FrameError("connection closed inside a size prefix") from exc
    if progressed is not None:
        progressed()
    (size,) = SIZE.unpack(prefix)
    if size < min_size:
        raise FrameError(f"invalid frame size {size}")
    if size > max_bytes:
        raise FrameError(f"frame of {size} bytes exceeds socket.request.max.bytes {max_bytes}")
    if admit is not None:
        await admit(size)
    chunks = []
    remaining = size
    while remaining:
        chunk = await reader.read(remaining)  # what is buffered, up to the frame's end
        if not chunk:
            raise FrameError(f"connection closed {remaining} bytes short")
        chunks.append(chunk)
        remaining -= len(chunk)
        if progressed is not None:
            progressed()
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)  # one chunk: no copy


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id): the fields common to all header versions."""
    if len(frame) < FIXED_HEADER.size:
        raise FrameError("frame shorter than a request header")
    return FIXED_HEADER.unpack_from(frame, 0)


def decode_request(frame: bytes) -> Request:
    """Parse header and body; raise UnsupportedRequest/FrameError to close the connection."""
    api_key, api_version, correlation_id = peek_header(frame)
    if not is_supported(api_key, api_version):
        if api_key == API_VERSIONS_KEY and api_version > SUPPORTED[API_VERSIONS_KEY].max_version:
            # A newer client probing: it gets UNSUPPORTED_VERSION and retries lower.
            return Request(api_key, api_version, correlation_id, None, None, len(frame))
        raise UnsupportedRequest(f"{api_name(api_key)} v{api_version} is not supported")
    # Any: the kio_style schemas get kio's class attributes (__header_schema__, ...) at run
    # time, which kio's RequestPayload protocol cannot see.
    request_type: Any = interbroker.request_schema(api_key, api_version) or load_request_schema(
        api_key, api_version
    )
    try:
        # Every length is checked against the frame first (kio's native reader would
        # reserve what a count claims before reading, and a failed reservation aborts),
        # and so is every null where the schema forbids one, as Kafka's parsers refuse it.
        header_size = bounds.check(request_type.__header_schema__, frame, 0)
        bounds.check(request_type, frame, header_size)
        header, header_size = entity_reader(request_type.__header_schema__)(frame, 0)
        body, body_size = entity_reader(request_type)(frame, header_size)
    except Exception as exc:  # kio raises several types for malformed input
        raise FrameError(f"malformed {api_name(api_key)} v{api_version} request: {exc}") from exc
    # Trailing bytes are ignored, as Kafka's parser ignores them (librdkafka sends some).
    return Request(api_key, api_version, correlation_id, header.client_id, body, len(frame))


def response_header(api_key: int, correlation_id: int, flexible: bool) -> bytes:
    header = SIZE.pack(correlation_id)
    if flexible and api_key != API_VERSIONS_KEY:
        header += _UVARINT_ZERO
    return header


def encode_body(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def encode_response(request: Request, response: Any) -> bytes:
    """A whole response frame (size prefix, header, body) for a kio response entity."""
    payload = response_header(request.api_key, request.correlation_id, response.__flexible__)
    payload += encode_body(response)
    return SIZE.pack(len(payload)) + payload


def unsupported_api_versions_response(request: Request) -> bytes:
    """ApiVersions v0 shape with UNSUPPORTED_VERSION and the ranges this broker speaks."""
    response = ApiVersionsResponseV0(
        error_code=ErrorCode.unsupported_version,
        api_keys=tuple(
            ApiVersionV0(
                api_key=i16(key), min_version=i16(r.min_version), max_version=i16(r.max_version)
            )
            for key, r in sorted(SUPPORTED.items())
        ),
    )
    return encode_response(request, response)


# The client side: requests out, responses in ------------------------------------------------
def encode_request(body: Any, correlation_id: int, client_id: str | None) -> bytes:
    """A whole request frame for a kio request entity; its header version follows the body's."""
    header_type = type(body).__header_schema__
    values = {
        "request_api_key": body.__api_key__,
        "request_api_version": body.__version__,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }
    names = {f for f in header_type.__dataclass_fields__}
    header = header_type(**{k: v for k, v in values.items() if k in names})
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")  # size, patched below
    entity_writer(header_type)(buffer, header)
    entity_writer(type(body))(buffer, body)
    frame = buffer.getbuffer()
    SIZE.pack_into(frame, 0, len(frame) - SIZE.size)
    return bytes(frame)


def response_correlation_id(frame: bytes) -> int:
    """The correlation id that starts every response header version."""
    if len(frame) < SIZE.size:
        raise FrameError("response shorter than its correlation id")
    return SIZE.unpack_from(frame, 0)[0]


def decode_response(frame: bytes, api_key: int, api_version: int) -> Any:
    """The kio response entity of a response frame (header included) to a known request."""
    response_type: Any = interbroker.response_schema(api_key, api_version) or (
        load_response_schema(api_key, api_version)
    )
    try:
        used = bounds.check(response_type.__header_schema__, frame, 0)
        bounds.check(response_type, frame, used)  # a broker's bytes are hostile too
        _header, used = entity_reader(response_type.__header_schema__)(frame, 0)
        body, _ = entity_reader(response_type)(frame, used)
    except Exception as exc:  # kio raises several types for malformed input
        raise FrameError(f"malformed {api_name(api_key)} v{api_version} response: {exc}") from exc
    return body
