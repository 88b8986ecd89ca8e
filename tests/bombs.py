"""Compression bombs: tiny record batches whose payload claims gigabytes when decoded."""

from __future__ import annotations

import gzip
import struct

import zstandard

from brokerd.records import compression
from brokerd.records.batch import (
    CRC_POS,
    HEADER_SIZE,
    LENGTH_POS,
    RecordBatch,
    SimpleRecord,
    build_batch,
)
from brokerd.records.legacy import encode_message

_MIB = 1 << 20


def bomb_payload(codec: int, decoded_mib: int) -> bytes:
    """`decoded_mib` MiB of zeros as concatenated 1 MiB frames (gzip members): a few bytes
    each compressed, so the payload is tiny while its decoding is not."""
    if codec == compression.ZSTD:
        frame = zstandard.ZstdCompressor(level=19).compress(bytes(_MIB))
    elif codec == compression.GZIP:
        frame = gzip.compress(bytes(_MIB), compresslevel=9, mtime=0)
    else:
        frame = compression.compress(codec, bytes(_MIB))
    return frame * decoded_mib


def bomb_batch(codec: int, decoded_mib: int, key: bytes = b"k") -> bytearray:
    """A v2 batch (valid header and CRC) whose records section is a bomb."""
    template = build_batch([SimpleRecord(b"v", key)], compression_type=codec)
    batch = template[:HEADER_SIZE] + bomb_payload(codec, decoded_mib)
    struct.pack_into(">i", batch, LENGTH_POS, len(batch) - 12)
    view = RecordBatch(batch)
    struct.pack_into(">I", batch, CRC_POS, view.compute_crc())
    return batch


def bomb_wrapper(codec: int, decoded_mib: int, magic: int = 1) -> bytes:
    """A legacy (v0/v1) compressed wrapper message whose value is a bomb."""
    return encode_message(0, magic, None, bomb_payload(codec, decoded_mib), attributes=codec)
