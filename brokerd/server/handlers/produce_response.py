"""Produce's answer in the common case, written directly: every partition appended, create
time (no log-append time), Produce v3-v9 (the versions this broker speaks from v3 on).

kio writes an entity field by field through generic Python writers; for a Produce of one
partition (librdkafka sends one partition per request, so a producer spread over many
partitions sends one request per batch) that cost more than the append itself. Anything
else (an error, a record error, log-append time, v0-v2) is encoded by kio as before. The
bytes are the same as kio's: tests/unit/server/test_produce_response.py compares them for
every version.
"""

from __future__ import annotations

import struct

from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.framing import Request, response_header

MIN_VERSION, MAX_VERSION = 3, 9
FLEXIBLE_FROM = 9
RECORD_ERRORS_FROM = 8  # record_errors and error_message
LOG_START_FROM = 5

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_NO_LOG_APPEND_TIME = _INT64.pack(-1)
_NO_THROTTLE = _INT32.pack(0)


def encoded(request: Request, topics: list[tuple[str, list[dict]]]) -> bytes | None:
    """The whole response frame, or None where kio must write it (see module doc)."""
    version = request.api_version
    if not MIN_VERSION <= version <= MAX_VERSION:
        return None
    flexible = version >= FLEXIBLE_FROM
    parts = [_count(len(topics), flexible)]
    for name, partitions in topics:
        encoded_name = name.encode()
        if flexible:
            parts.append(_uvarint(len(encoded_name) + 1))
        else:
            parts.append(_INT16.pack(len(encoded_name)))
        parts.append(encoded_name)
        parts.append(_count(len(partitions), flexible))
        for fields in partitions:
            if (
                fields["error_code"] != ErrorCode.none
                or fields["log_append_time"] is not None
                or fields["record_errors"]
                or fields["error_message"] is not None
            ):
                return None
            parts.append(_INT32.pack(fields["index"]))
            parts.append(b"\0\0")  # error_code NONE
            parts.append(_INT64.pack(fields["base_offset"]))
            parts.append(_NO_LOG_APPEND_TIME)
            if version >= LOG_START_FROM:
                parts.append(_INT64.pack(fields["log_start_offset"]))
            if version >= RECORD_ERRORS_FROM:
                # no record errors, a null error message
                parts.append(b"\x01\x00\x00" if flexible else b"\0\0\0\0\xff\xff")
        if flexible:
            parts.append(b"\0")  # the topic's tagged fields
    parts.append(_NO_THROTTLE)
    if flexible:
        parts.append(b"\0")  # the response's tagged fields
    payload = response_header(request.api_key, request.correlation_id, flexible) + b"".join(parts)
    return _INT32.pack(len(payload)) + payload


def _count(count: int, flexible: bool) -> bytes:
    return _uvarint(count + 1) if flexible else _INT32.pack(count)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
