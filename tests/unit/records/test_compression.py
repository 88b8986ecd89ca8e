"""Codec framing: round trips, concatenated frames, truncation, trailing bytes, hostile sizes."""

import resource
import struct

import cramjam
import lz4.frame
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokerd.records import compression
from brokerd.records.compression import (
    CompressionError,
    DecompressedSizeError,
    compress,
    decompress,
)
from tests.bombs import bomb_payload

from .strategies import V2_CODECS

FRAMED = [compression.GZIP, compression.LZ4, compression.ZSTD]


@pytest.mark.parametrize("codec", V2_CODECS)
@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=2048) | st.binary(max_size=64).map(lambda b: b * 1500))
def test_codec_round_trip(codec, data):
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [compression.GZIP, compression.SNAPPY, compression.LZ4])
def test_legacy_codec_round_trip(codec, magic):
    data = b"legacy payload " * 300
    assert decompress(codec, compress(codec, data, magic), magic) == data


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=300))
def test_xxh32_matches_lz4s_content_checksum(data):
    # The LZ4 frame's content checksum is xxh32(content, seed 0), little-endian, at the end:
    # an independent reference for the hash behind Kafka's broken magic-0 header checksum.
    frame = lz4.frame.compress(data, content_checksum=True)
    assert compression.lz4_xxh32(data) == struct.unpack("<I", frame[-4:])[0]


@pytest.mark.parametrize("codec", FRAMED)
def test_concatenated_frames_are_all_decoded(codec):
    joined = compress(codec, b"first ") + compress(codec, b"second")
    assert decompress(codec, joined) == b"first second"


@pytest.mark.parametrize("codec", FRAMED)
def test_truncated_stream_is_an_error(codec):
    whole = compress(codec, b"some records " * 50)
    for cut in range(len(whole)):
        with pytest.raises(CompressionError):
            decompress(codec, whole[:cut])


def test_truncated_xerial_block_is_an_error():
    whole = compress(compression.SNAPPY, b"some records " * 50)
    # Xerial framing has no end marker: a cut exactly after the 16-byte header is an empty
    # stream, and the records layer catches the missing records. Inside a block it is corrupt.
    assert decompress(compression.SNAPPY, whole[:16]) == b""
    for cut in [*range(16), *range(17, len(whole))]:
        with pytest.raises(CompressionError):
            decompress(compression.SNAPPY, whole[:cut])


@pytest.mark.parametrize("codec", FRAMED)
def test_trailing_bytes_after_a_frame_are_an_error(codec):
    with pytest.raises(CompressionError):
        decompress(codec, compress(codec, b"records") + b"\x01garbage")


def test_zstd_needs_magic_2():
    with pytest.raises(CompressionError):
        compress(compression.ZSTD, b"x", magic=1)
    with pytest.raises(CompressionError):
        decompress(compression.ZSTD, compress(compression.ZSTD, b"x"), magic=1)


@pytest.mark.parametrize("codec", [5, 6, 7, -1])
def test_unknown_codec(codec):
    with pytest.raises(CompressionError):
        compress(codec, b"x")
    with pytest.raises(CompressionError):
        decompress(codec, b"x")


def test_lz4_frame_claiming_a_huge_content_size_is_refused_without_allocating_it():
    descriptor = bytes([0x68, 0x40]) + struct.pack("<Q", 1 << 50)  # content-size flag set
    checksum = (compression.lz4_xxh32(descriptor) >> 8) & 0xFF
    frame = b"\x04\x22\x4d\x18" + descriptor + bytes([checksum]) + b"\x00\x00\x00\x00"
    with pytest.raises(CompressionError):
        decompress(compression.LZ4, frame)


def test_snappy_block_claiming_an_impossible_length_is_refused():
    with pytest.raises(CompressionError, match="claims"):
        decompress(compression.SNAPPY, b"\xff\xff\xff\xff\x0f\x00")


def test_xerial_header_alone_is_empty_but_a_cut_header_is_an_error():
    header = compress(compression.SNAPPY, b"")[:16]
    assert decompress(compression.SNAPPY, header) == b""
    with pytest.raises(CompressionError):
        decompress(compression.SNAPPY, header[:12])


# Compression bombs ---------------------------------------------------------------------
@pytest.mark.parametrize("codec", FRAMED)
def test_output_over_the_cap_is_refused(codec):
    payload = bomb_payload(codec, 8)
    assert len(decompress(codec, payload, max_size=8 << 20)) == 8 << 20  # at the cap: fine
    with pytest.raises(DecompressedSizeError, match="more than"):
        decompress(codec, payload, max_size=(8 << 20) - 1)


def test_snappy_refuses_a_block_declaring_more_than_the_cap():
    data = b"s" * 100_000
    for payload in (compress(compression.SNAPPY, data), cramjam.snappy.compress_raw(data)):
        assert decompress(compression.SNAPPY, bytes(payload)) == data
        with pytest.raises(DecompressedSizeError):
            decompress(compression.SNAPPY, bytes(payload), max_size=50_000)


@pytest.mark.parametrize("codec", [compression.GZIP, compression.ZSTD])
def test_a_gigabyte_bomb_stops_at_the_default_cap(codec):
    # 2 GiB of zeros in a ~2 MiB gzip or ~100 KiB zstd payload: refused after at most the cap
    # plus one decoder step, never decoded whole (that would need 2-4 GiB of memory).
    payload = bomb_payload(codec, 2048)
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(DecompressedSizeError):
        decompress(codec, payload)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    assert grown_kib * 1024 < 2 * compression.MAX_DECOMPRESSED_BYTES
