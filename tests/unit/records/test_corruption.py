"""Damaged or hostile bytes: detected by the CRC, and never any error but the record ones.

The broker reads untrusted bytes (produce requests, a log after a crash). Every read path
must fail with CorruptRecordError (InvalidRecordError from validate_from_client), never with
IndexError, struct.error, UnicodeDecodeError, MemoryError, a hang or a library's own error.
"""

import struct
from contextlib import suppress

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerd.records import compression, iter_entries, legacy, read_entry
from brokerd.records.batch import (
    CRC_POS,
    HEADER,
    HEADER_SIZE,
    CorruptRecordError,
    InvalidRecordError,
    RecordBatch,
    SimpleRecord,
    build_batch,
    crc_of,
    encode_record,
    iter_batches,
)
from brokerd.records.legacy import LegacyEntry, build_message_set, encode_message, up_convert
from brokerd.records.varint import encode_varint

from .strategies import LEGACY_CODECS, V2_CODECS, simple_records

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def touch_entry(entry) -> None:
    """Everything a reader may ask of one entry, each step allowed to fail only cleanly."""
    steps = [entry.validate, entry.is_valid, entry.records, lambda: entry.base_offset]
    if isinstance(entry, LegacyEntry):
        steps += [lambda: entry.timestamp, entry.key_value]
    for step in steps:
        with suppress(CorruptRecordError):
            step()
    if isinstance(entry, RecordBatch):
        with suppress(CorruptRecordError, InvalidRecordError):
            entry.validate_from_client()


def read_everything(buf) -> None:
    for read in (
        lambda: [touch_entry(e) for e in iter_entries(buf)],
        lambda: [touch_entry(b) for b in iter_batches(buf)],
        lambda: [touch_entry(e) for e in legacy.iter_entries(buf)],
        lambda: touch_entry(read_entry(buf)),
        lambda: touch_entry(RecordBatch(buf)),
        lambda: touch_entry(LegacyEntry(buf)),
        lambda: RecordBatch(buf).records(),
        lambda: LegacyEntry(buf).records(),
        lambda: up_convert(buf),
    ):
        with suppress(CorruptRecordError):
            read()


def with_fixed_crc(buf: bytearray) -> bytearray:
    """Make a mutated v2 batch pass the CRC, so reading gets past validate()."""
    if len(buf) >= HEADER_SIZE:
        struct.pack_into(">I", buf, CRC_POS, crc_of(buf, 0, len(buf)))
    return buf


def v2_batch_around(payload: bytes, *, codec: int, count: int, last_offset_delta: int) -> bytearray:
    buf = bytearray(HEADER_SIZE + len(payload))
    HEADER.pack_into(
        buf, 0, 0, len(buf) - 12, 0, 2, 0, codec, last_offset_delta, 0, 0, -1, -1, -1, count
    )
    buf[HEADER_SIZE:] = payload
    return with_fixed_crc(buf)


# The CRC catches every single-byte change -------------------------------------------------


@pytest.mark.parametrize("codec", V2_CODECS)
@settings(max_examples=15, deadline=None)
@given(records=simple_records(), mask=st.integers(1, 255))
def test_every_byte_flip_under_the_v2_crc_is_detected(codec, records, mask):
    original = build_batch(records, compression_type=codec)
    RecordBatch(original).validate()
    # CRC-32C detects every error burst up to 32 bits, so no flip of one byte can slip by.
    for pos in range(CRC_POS, len(original)):
        damaged = bytearray(original)
        damaged[pos] ^= mask
        batch = RecordBatch(damaged)
        assert not batch.is_valid()
        with pytest.raises(CorruptRecordError):
            batch.validate()
        with pytest.raises(CorruptRecordError):
            batch.validate_from_client()


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@settings(max_examples=10, deadline=None)
@given(records=simple_records(with_headers=False), mask=st.integers(1, 255))
def test_every_byte_flip_under_a_legacy_crc_is_detected(magic, codec, records, mask):
    original = build_message_set(records, magic=magic, compression_type=codec)
    for entry in iter_entries(original):
        start = entry.pos
        for pos in range(start + 12, start + entry.size):  # crc, then magic..value
            damaged = bytearray(original)
            damaged[pos] ^= mask
            with pytest.raises(CorruptRecordError):
                read_entry(damaged, start).validate()


def test_a_batch_longer_than_its_buffer_is_corrupt():
    buf = build_batch([SimpleRecord(b"value")])
    for cut in range(HEADER_SIZE, len(buf)):
        with pytest.raises(CorruptRecordError):
            RecordBatch(buf[:cut]).validate()
        with pytest.raises(CorruptRecordError):
            RecordBatch(buf[:cut]).records()


@pytest.mark.parametrize("length", [-1, -12, -(2**31), 0, 48])
def test_batch_length_below_the_header_is_corrupt(length):
    buf = build_batch([SimpleRecord(b"value")])
    struct.pack_into(">i", buf, 8, length)
    with pytest.raises(CorruptRecordError):
        RecordBatch(buf).validate()
    with pytest.raises(CorruptRecordError):
        RecordBatch(buf).records()
    with pytest.raises(CorruptRecordError):
        list(iter_entries(buf))


@pytest.mark.parametrize("size", [-12, -1, 0, 13])
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_size_below_the_overhead_is_corrupt_and_never_loops(size, magic):
    buf = bytearray(build_message_set([SimpleRecord(b"v")] * 3, magic=magic))
    struct.pack_into(">i", buf, 8, size)
    for reader in (iter_entries, legacy.iter_entries):
        with pytest.raises(CorruptRecordError):
            list(reader(buf))


def test_magic_1_message_shorter_than_its_timestamp_is_corrupt():
    buf = bytearray(encode_message(0, 0, None, None))  # 14-byte message, then relabel as v1
    buf[16] = 1
    entry = LegacyEntry(buf)
    with pytest.raises(CorruptRecordError):
        entry.timestamp  # noqa: B018 - the property read is the point
    with pytest.raises(CorruptRecordError):
        entry.records()


@pytest.mark.parametrize("magic", [3, 4, 127, 255])
def test_unknown_magic_is_corrupt(magic):
    buf = bytearray(build_batch([SimpleRecord(b"value")]))
    buf[16] = magic
    for read in (read_entry, RecordBatch, LegacyEntry, lambda b: list(iter_entries(b))):
        with pytest.raises(CorruptRecordError):
            read(buf)


def test_a_cut_log_yields_its_whole_entries_then_stops():
    log = bytes(build_batch([SimpleRecord(b"a")])) + build_message_set(
        [SimpleRecord(b"b")], magic=1
    )
    whole = [e.bytes() for e in iter_entries(log)]
    entry_ends = [len(whole[0]), len(log)]
    for cut in range(len(log) + 1):
        complete = sum(1 for entry_end in entry_ends if entry_end <= cut)
        assert [e.bytes() for e in iter_entries(log[:cut])] == whole[:complete]


def test_garbage_after_the_records_is_corrupt():
    records = [SimpleRecord(b"value", b"key")]
    payload = build_batch(records)[HEADER_SIZE:] + b"\x00"
    batch = RecordBatch(v2_batch_around(payload, codec=0, count=1, last_offset_delta=0))
    batch.validate()
    with pytest.raises(CorruptRecordError, match="left over"):
        batch.records()


def test_record_count_larger_than_the_records_is_corrupt():
    payload = encode_record(0, 0, None, b"v")
    for count in (2, 2**31 - 1, -1):
        batch = RecordBatch(v2_batch_around(payload, codec=0, count=count, last_offset_delta=0))
        with pytest.raises(CorruptRecordError):
            batch.records()


@pytest.mark.parametrize(
    "varint",
    [
        b"\xff" * 10 + b"\x01",  # 11 bytes
        b"\xff" * 9 + b"\x7f",  # 10 bytes but more than 64 bits
        b"\x80\x80\x80\x80\x80\x01",  # 6 bytes: beyond an int32 field
        b"\xff",  # runs off the end
    ],
)
def test_malformed_varints_are_corrupt(varint):
    body = b"\x00" + varint
    for payload in (varint + body, b"\x0e" + body + b"\x00" * 12):
        batch = RecordBatch(v2_batch_around(payload, codec=0, count=1, last_offset_delta=0))
        batch.validate()
        with pytest.raises(CorruptRecordError):
            batch.records()


def record_with_one_header(header_key: bytes) -> bytes:
    """attributes, timestampDelta 0, offsetDelta 0, null key, value "v", one header -> "x"."""
    body = b"\x00\x00\x00" + b"\x01" + b"\x02v" + b"\x02" + header_key + b"\x02x"
    return encode_varint(len(body)) + body


def test_null_header_key_is_corrupt():
    payload = record_with_one_header(b"\x01")  # key length -1
    batch = RecordBatch(v2_batch_around(payload, codec=0, count=1, last_offset_delta=0))
    with pytest.raises(CorruptRecordError, match="null header key"):
        batch.records()


def test_invalid_utf8_header_key_does_not_raise():
    payload = record_with_one_header(b"\x02\xff")  # key: the single byte 0xff
    (read,) = RecordBatch(v2_batch_around(payload, codec=0, count=1, last_offset_delta=0)).records()
    assert [(h.key, h.value) for h in read.headers] == [("\ufffd", b"x")]  # replaced, as Java does


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_is_corrupt_to_a_reader(codec):
    batch = RecordBatch(v2_batch_around(b"\x00", codec=codec, count=1, last_offset_delta=0))
    batch.validate()
    with pytest.raises(CorruptRecordError):
        batch.records()


def test_zstd_inside_a_legacy_wrapper_is_corrupt():
    inner = encode_message(0, 1, None, b"v", timestamp=0)
    wrapper = encode_message(
        0, 1, None, compression.compress(compression.ZSTD, inner), attributes=compression.ZSTD
    )
    with pytest.raises(CorruptRecordError):
        LegacyEntry(wrapper).records()


def legacy_wrapper(inner_set: bytes, magic: int = 1, codec: int = compression.GZIP) -> bytes:
    compressed = compression.compress(codec, inner_set, magic)
    return encode_message(5, magic, None, compressed, attributes=codec, timestamp=0)


@pytest.mark.parametrize(
    "inner_set",
    [
        b"",  # no messages
        encode_message(0, 1, None, b"v", timestamp=0)[:-1],  # partial message
        encode_message(0, 1, None, b"v", timestamp=0) + b"\x00" * 5,  # trailing bytes
        encode_message(0, 0, None, b"v"),  # magic differs from the wrapper's
        legacy_wrapper(encode_message(0, 1, None, b"v", timestamp=0)),  # nested compression
    ],
    ids=["empty", "partial", "trailing", "magic-mismatch", "nested"],
)
def test_malformed_inner_message_sets_are_corrupt(inner_set):
    entry = LegacyEntry(legacy_wrapper(inner_set))
    entry.validate()  # the wrapper itself is intact
    with pytest.raises(CorruptRecordError):
        entry.records()


def test_inner_message_with_a_bad_crc_is_corrupt():
    inner = bytearray(encode_message(0, 1, b"k", b"value", timestamp=0))
    inner[-1] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC"):
        LegacyEntry(legacy_wrapper(bytes(inner))).records()


def test_compressed_wrapper_without_a_value_is_corrupt():
    wrapper = encode_message(0, 1, None, None, attributes=compression.GZIP, timestamp=0)
    with pytest.raises(CorruptRecordError):
        LegacyEntry(wrapper).records()


# Fuzzing ---------------------------------------------------------------------------------


@st.composite
def valid_encodings(draw) -> bytes:
    records = draw(simple_records(max_size=4))
    if draw(st.booleans()):
        return bytes(build_batch(records, compression_type=draw(st.sampled_from(V2_CODECS))))
    plain = [SimpleRecord(r.value, r.key, (), r.timestamp) for r in records]
    magic = draw(st.sampled_from([0, 1]))
    return build_message_set(
        plain, magic=magic, compression_type=draw(st.sampled_from(LEGACY_CODECS))
    )


@st.composite
def mutated(draw, source) -> bytearray:
    buf = bytearray(draw(source))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "append", "overwrite-int"]))
        pos = draw(st.integers(0, max(len(buf) - 1, 0)))
        if kind == "flip" and buf:
            buf[pos] ^= draw(st.integers(1, 255))
        elif kind == "truncate":
            del buf[pos:]
        elif kind == "insert":
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "append":
            buf += draw(st.binary(min_size=1, max_size=32))
        elif kind == "overwrite-int" and pos + 4 <= len(buf):
            value = draw(st.sampled_from([-1, -2, 0, 1, 2**31 - 1, -(2**31), 13, 49, 61]))
            struct.pack_into(">i", buf, pos, value)
    return buf


@FUZZ
@given(buf=st.binary(max_size=200))
def test_random_bytes_raise_only_record_errors(buf):
    read_everything(buf)


@FUZZ
@given(buf=mutated(valid_encodings()))
def test_mutated_encodings_raise_only_record_errors(buf):
    read_everything(buf)
    read_everything(with_fixed_crc(bytearray(buf)))  # get past validate() into the records


@FUZZ
@given(
    buf=mutated(valid_encodings()),
    prefix=st.sampled_from(
        [
            b"",
            bytes(build_batch([SimpleRecord(b"x")])),
            build_message_set([SimpleRecord(b"x")], magic=0),
        ]
    ),
)
def test_damage_after_a_good_entry_raises_only_record_errors(buf, prefix):
    read_everything(prefix + bytes(buf))


@FUZZ
@given(
    payload=st.binary(max_size=120),
    codec=st.integers(0, 7),
    count=st.integers(-2, 5),
    last_offset_delta=st.integers(-2, 5),
)
def test_well_framed_batch_with_random_records_raises_only_record_errors(
    payload, codec, count, last_offset_delta
):
    # Random bytes both as the (claimed) compressed section and, compressed for real, as the
    # decompressed records, so the record decoder is exercised behind every codec.
    read_everything(
        v2_batch_around(payload, codec=codec, count=count, last_offset_delta=last_offset_delta)
    )
    if codec in compression.NAMES:
        real = compression.compress(codec, payload)
        read_everything(
            v2_batch_around(real, codec=codec, count=count, last_offset_delta=last_offset_delta)
        )


@FUZZ
@given(records=simple_records(max_size=3), damage=st.data())
def test_damaged_records_behind_a_codec_raise_only_record_errors(records, damage):
    codec = damage.draw(st.sampled_from(V2_CODECS))
    plain = build_batch(records)[HEADER_SIZE:]
    damaged = damage.draw(mutated(st.just(bytes(plain))))
    payload = compression.compress(codec, bytes(damaged))
    read_everything(
        v2_batch_around(
            payload, codec=codec, count=len(records), last_offset_delta=len(records) - 1
        )
    )


@FUZZ
@given(
    inner=st.one_of(
        st.binary(max_size=120),
        mutated(
            st.builds(
                lambda r: build_message_set(r, magic=1),
                simple_records(with_headers=False, max_size=3),
            )
        ),
    ),
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from(LEGACY_CODECS[1:]),
)
def test_wrapper_with_damaged_inner_messages_raises_only_record_errors(inner, magic, codec):
    read_everything(legacy_wrapper(bytes(inner), magic=magic, codec=codec))


@FUZZ
@given(
    codec=st.sampled_from(list(compression.NAMES)),
    data=st.binary(max_size=120),
    magic=st.sampled_from([0, 1, 2]),
)
def test_decompress_raises_only_compression_errors(codec, data, magic):
    with suppress(compression.CompressionError):
        compression.decompress(codec, data, magic)
