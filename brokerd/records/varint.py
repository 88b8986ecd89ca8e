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


def encode_varint(value: int) -> bytes:
    """Signed (zigzag) varint of a 64-bit value."""
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
