"""Compression codecs of Kafka's attributes bits 0-2, byte-compatible with the clients.

- gzip (1): an ordinary gzip stream (Java's GZIPOutputStream, librdkafka's zlib).
- snappy (2): the Java client writes snappy-java's xerial framing; librdkafka may write a
  raw snappy block. Reading accepts both; writing uses the xerial framing as Kafka does.
- lz4 (3): the LZ4 frame format. Magic-0 messages carry the pre-KIP-57 header checksum
  (computed over the magic bytes too), which we fix up before decoding.
- zstd (4): a zstd frame, possibly without a content size (streamed), v2 batches only.

gzip, LZ4 and zstd streams may hold several concatenated members/frames, as their formats
allow; all are decoded. A truncated frame, or bytes after the last frame that are not one,
is an error rather than silently shorter output.

Decoding is capped (`MAX_DECOMPRESSED_BYTES`): a few KiB of gzip or zstd can claim gigabytes
(a compression bomb), and the broker decodes produced batches (compacted topics, timestamp
checks, legacy wrappers) and stored ones (the cleaner). Streams are fed to their decoder in
small slices, so output past the cap is never more than one slice's worth of expansion.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import cramjam
import lz4.frame
import zstandard

from .varint import VarintError, decode_unsigned

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
BY_NAME = {name: codec for codec, name in NAMES.items()}

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
# A snappy element yields at most 64 bytes from 3 (a 2-byte-offset copy), so a raw block can
# never decode to more than ~21.3x its size; a larger declared length is corrupt, and refusing
# it spares the decoder a huge up-front allocation.
_SNAPPY_MAX_EXPANSION = 22

_zstd_compressor = zstandard.ZstdCompressor(level=3)

# Kafka sets no uncompressed limit; this one sits above any batch a client builds (the Java
# client's buffer.memory is 32 MiB, librdkafka's batch.size at most 2 GB but 1 MB by
# default) and alike to socket.request.max.bytes (100 MiB).
MAX_DECOMPRESSED_BYTES = 128 << 20
# Compressed bytes per decoder call: zstd expands at most ~32,768x (an RLE block), gzip
# ~1,032x, LZ4 ~255x, so one call overshoots the cap by at most ~32 MiB / 16 MiB / 4 MiB.
_ZSTD_STEP = 1 << 10
_STEP = 16 << 10


class CompressionError(ValueError):
    """A payload that its codec cannot decode, or an unknown codec id."""


class DecompressedSizeError(CompressionError):
    """A payload that decodes to more than the cap allows (a compression bomb)."""


def compress(codec: int, data: bytes | bytearray, magic: int = 2) -> bytes | bytearray:
    if codec == NONE:
        return data
    if codec == GZIP:
        return gzip.compress(data, compresslevel=6, mtime=0)
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        frame = lz4.frame.compress(
            data,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
        return _break_lz4_header_checksum(frame) if magic == 0 else frame
    if codec == ZSTD:
        if magic < 2:
            raise CompressionError("zstd needs record batch v2")
        return _zstd_compressor.compress(data)
    raise CompressionError(f"unknown compression codec {codec}")


def decompress(
    codec: int, data: bytes | memoryview, magic: int = 2, max_size: int = MAX_DECOMPRESSED_BYTES
) -> bytes:
    """The decoded payload; DecompressedSizeError when it would exceed `max_size` bytes."""
    data = bytes(data)
    if codec == ZSTD and magic < 2:
        raise CompressionError("zstd needs record batch v2")
    try:
        if codec == NONE:
            return data
        if codec == GZIP:
            return _decode_frames(data, _gzip_decoder, "gzip", max_size, _STEP)
        if codec == SNAPPY:
            return _snappy_decompress(data, max_size)
        if codec == LZ4:
            if magic == 0:
                data = _fix_lz4_header_checksum(data)
            # The streaming decoder, unlike lz4.frame.decompress, does not allocate a frame's
            # declared content size up front (a forged size would be a MemoryError).
            return _decode_frames(data, lz4.frame.LZ4FrameDecompressor, "lz4", max_size, _STEP)
        if codec == ZSTD:
            return _decode_frames(data, _zstd_decoder, "zstd", max_size, _ZSTD_STEP)
    except CompressionError:
        raise
    except Exception as exc:  # each library raises its own types
        raise CompressionError(f"cannot decompress {NAMES.get(codec, codec)}: {exc}") from exc
    raise CompressionError(f"unknown compression codec {codec}")


def _gzip_decoder():
    return zlib.decompressobj(wbits=31)


def _zstd_decoder():
    return zstandard.ZstdDecompressor().decompressobj()


def _decode_frames(data: bytes, new_decoder, codec_name: str, max_size: int, step: int) -> bytes:
    """Decode one or more concatenated frames (each decoder object handles exactly one),
    feeding `step` bytes at a time so that a bomb is stopped near `max_size`."""
    out = bytearray()
    view = memoryview(data)
    pos = 0
    decoder = new_decoder()
    while True:
        if decoder.eof:
            chunk = decoder.unused_data  # the next frame's start, fed to a new decoder
            if not chunk and pos >= len(view):
                return bytes(out)
            decoder = new_decoder()
        elif pos < len(view):
            chunk = bytes(view[pos : pos + step])
            pos += step
        else:
            raise CompressionError(f"truncated {codec_name} stream")
        if chunk:
            out += decoder.decompress(chunk)
        if len(out) > max_size:
            raise DecompressedSizeError(
                f"{codec_name} payload of {len(data)} bytes decompresses to more than "
                f"{max_size} bytes"
            )


def _xerial_compress(data: bytes | bytearray) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    # Empty input still gets one (empty) block: kafka-python takes a bare 16-byte header
    # for raw snappy and fails on it.
    for start in range(0, max(len(data), 1), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def _snappy_decompress(data: bytes, max_size: int) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_decompress_block(data, max_size)
    # The version and compat ints after the magic are not checked: some producers write
    # them little-endian, and the Java and Python clients ignore them too.
    if len(data) < len(_XERIAL_HEADER):
        raise CompressionError("truncated xerial snappy header")
    pos = len(_XERIAL_HEADER)
    out = bytearray()
    while pos < len(data):
        if pos + 4 > len(data):
            raise CompressionError("truncated xerial snappy block length")
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise CompressionError("truncated xerial snappy block")
        out += _snappy_decompress_block(data[pos : pos + size], max_size - len(out))
        pos += size
    return bytes(out)


def _snappy_decompress_block(block: bytes, max_size: int) -> bytes:
    try:
        declared, _ = decode_unsigned(block, 0)
    except VarintError as exc:
        raise CompressionError(f"bad snappy length prefix: {exc}") from exc
    if declared > _SNAPPY_MAX_EXPANSION * len(block):
        raise CompressionError(f"snappy block of {len(block)} bytes claims {declared} bytes")
    if declared > max_size:  # raw snappy states its decoded length up front
        raise DecompressedSizeError(f"snappy payload decompresses to more than {max_size} bytes")
    return bytes(cramjam.snappy.decompress_raw(block))


def _lz4_header_checksum(header: bytes) -> int:
    return (lz4_xxh32(header) >> 8) & 0xFF


def lz4_xxh32(data: bytes) -> int:
    return _xxh32(data, 0)


def _fix_lz4_header_checksum(frame: bytes) -> bytes:
    """Kafka < 0.10 hashed the magic too; recompute the HC over the descriptor only."""
    if len(frame) < 7 or frame[:4] != b"\x04\x22\x4d\x18":
        return frame
    flg = frame[4]
    descriptor_end = 6 + (8 if flg & 0x08 else 0)
    if len(frame) <= descriptor_end:
        return frame
    correct = _lz4_header_checksum(frame[4:descriptor_end])
    broken = _lz4_header_checksum(frame[0:descriptor_end])
    if frame[descriptor_end] == broken and broken != correct:
        return frame[:descriptor_end] + bytes([correct]) + frame[descriptor_end + 1 :]
    return frame


def _break_lz4_header_checksum(frame: bytes) -> bytes:
    flg = frame[4]
    descriptor_end = 6 + (8 if flg & 0x08 else 0)
    broken = _lz4_header_checksum(frame[0:descriptor_end])
    return frame[:descriptor_end] + bytes([broken]) + frame[descriptor_end + 1 :]


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32(data: bytes, seed: int) -> int:
    """xxHash32, needed only for the few bytes of an LZ4 frame descriptor."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                (lane,) = struct.unpack_from("<I", data, pos)
                v[i] = (_rotl((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + lane * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
