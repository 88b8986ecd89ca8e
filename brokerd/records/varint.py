"""Protocol Buffers varints as Kafka uses them in record batch v2.

Signed values are ZigZag-encoded first (-1 -> 1, 1 -> 2, -2 -> 3), then written as
little-endian groups of 7 bits with the high bit as the continuation flag.
"""

from __future__ import annotations


class VarintError(ValueError):
    """A varint ran past its buffer or past the 10 bytes a 64-bit value can take."""


def zigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)


def unzigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def encode_unsigned(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


# The one-byte varints of -64..63 (lengths, deltas and counts of small records), by value + 64.
_ONE_BYTE = [bytes([((v << 1) ^ (v >> 63)) & 0xFF]) for v in range(-64, 64)]


def encode_varint(value: int) -> bytes:
    """Signed (zigzag) varint of a 64-bit value."""
    if -64 <= value < 64:
        return _ONE_BYTE[value + 64]
    if not INT64_MIN <= value <= INT64_MAX:
        # Masking would silently write a different number (e.g. a wrapped timestamp delta).
        raise ValueError(f"{value} does not fit a 64-bit varint")
    return encode_unsigned(zigzag(value) & 0xFFFFFFFFFFFFFFFF)


def size_of_varint(value: int) -> int:
    v = zigzag(value) & 0xFFFFFFFFFFFFFFFF
    size = 1
    while v > 0x7F:
        v >>= 7
        size += 1
    return size


def decode_unsigned(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Return (value, next position)."""
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise VarintError("varint runs past the end of the buffer")
        if shift > 63:
            raise VarintError("varint longer than 10 bytes")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def decode_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Signed (zigzag) varint: return (value, next position)."""
    raw, pos = decode_unsigned(buf, pos)
    if raw >> 64:
        raise VarintError("varint exceeds 64 bits")
    return unzigzag(raw), pos


def decode_varint32(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """A field Kafka declares as varint (int32), not varlong: lengths, offsetDelta, counts."""
    value, pos = decode_varint(buf, pos)
    if not INT32_MIN <= value <= INT32_MAX:
        raise VarintError(f"varint {value} exceeds 32 bits")
    return value, pos


def wrap_int64(value: int) -> int:
    """Two's-complement wrap, as Java's long arithmetic does."""
    return ((value - INT64_MIN) & 0xFFFFFFFFFFFFFFFF) + INT64_MIN
