"""walk_records: a produced batch's records must be exactly what its header declares.

The walk is the broker's only look at the records of a plain batch before it is stored, so
whatever it accepts must read back through the broker's own decoder (and any client's) as
`count` records with offsets base..base+count-1. Every test runs against both
implementations (the Python reference and the compiled walk, tests/unit/records/walkers.py).
"""

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerd.records import compression
from brokerd.records.batch import (
    CRC_POS,
    HEADER_SIZE,
    LAST_OFFSET_DELTA_POS,
    RECORDS_COUNT_POS,
    CorruptRecordError,
    RecordBatch,
    SimpleRecord,
    build_batch,
    crc_of,
    encode_record,
)
from brokerd.records.validation import RecordStructureError, record_facts
from brokerd.records.varint import encode_varint

from .strategies import simple_records
from .walkers import WALKERS

pytestmark = pytest.mark.parametrize("walk_records", WALKERS)

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def walk(walk_records, buf, count=None) -> None:
    """walk_records over a plain batch's records section."""
    header_count = struct.unpack_from(">i", buf, RECORDS_COUNT_POS)[0]
    walk_records(buf, HEADER_SIZE, len(buf), header_count if count is None else count)


def with_header_ints(buf, **values) -> bytearray:
    buf = bytearray(buf)
    positions = {"count": RECORDS_COUNT_POS, "last_offset_delta": LAST_OFFSET_DELTA_POS}
    for name, value in values.items():
        struct.pack_into(">i", buf, positions[name], value)
    struct.pack_into(">I", buf, CRC_POS, crc_of(buf, 0, len(buf)))
    return buf


def five_records():
    return [SimpleRecord(b"v%d" % i, b"k%d" % i, (), 1000 + i) for i in range(5)]


@settings(max_examples=200, deadline=None)
@given(records=simple_records(max_size=20))
def test_every_batch_the_builder_makes_passes(walk_records, records):
    buf = build_batch(records)
    walk(walk_records, buf)
    facts = record_facts(buf, HEADER_SIZE, len(records))
    assert [has_key for _, has_key in facts] == [r.key is not None for r in records]
    assert [delta + records[0].timestamp for delta, _ in facts] == [r.timestamp for r in records]


@pytest.mark.parametrize("count", [200, 9000])
def test_long_batches_with_multi_byte_offset_deltas_pass(walk_records, count):
    # Offset deltas of 64+ take two varint bytes, 8192+ three; lengths vary likewise.
    records = [SimpleRecord(b"x" * (i % 300), b"k" if i % 2 else None) for i in range(count)]
    walk(walk_records, build_batch(records, now_ms=1))


@pytest.mark.parametrize(
    ("count", "message"),
    [
        (3, "bytes remain after 3 records"),  # fewer declared than held
        (4, "bytes remain after 4 records"),
        (6, "6 records declared, the batch holds 5"),
        (2**31 - 1, "2147483647 records declared, the batch holds 5"),
    ],
)
def test_a_declared_count_that_lies_is_refused(walk_records, count, message):
    buf = with_header_ints(build_batch(five_records()), count=count, last_offset_delta=count - 1)
    with pytest.raises(RecordStructureError, match=message) as caught:
        walk(walk_records, buf)
    assert caught.value.record_index is None  # the batch lies, not one record


@pytest.mark.parametrize("deltas", [[0, 2], [1, 2], [0, 0], [0, -1], [0, 2**31 - 1]])
def test_offset_deltas_must_be_consecutive_from_zero(walk_records, deltas):
    records = [SimpleRecord(b"a"), SimpleRecord(b"b")]
    buf = build_batch(records, offset_deltas=deltas, last_offset_delta=1, now_ms=1)
    bad = next(i for i, delta in enumerate(deltas) if delta != i)
    with pytest.raises(RecordStructureError, match=f"record {bad} has offset delta") as caught:
        walk(walk_records, buf)
    assert caught.value.record_index == bad


def raw_batch(*encoded_records: bytes) -> bytearray:
    """A plain batch around hand-encoded records (the builder only makes valid ones)."""
    template = build_batch([SimpleRecord(b"x")] * len(encoded_records), now_ms=1)
    buf = template[:HEADER_SIZE] + b"".join(encoded_records)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    return buf


def record_with_length(body: bytes, length: int) -> bytes:
    return encode_varint(length) + body


GOOD_BODY = encode_record(0, 0, b"k", b"v")[1:]  # without its length prefix


@pytest.mark.parametrize(
    "record",
    [
        record_with_length(GOOD_BODY, len(GOOD_BODY) + 1),  # length longer than its fields
        record_with_length(GOOD_BODY, len(GOOD_BODY) - 1),  # shorter
        record_with_length(GOOD_BODY, -1),
        record_with_length(GOOD_BODY, 0),
        record_with_length(GOOD_BODY, 2**31 - 1),
        encode_varint(8) + b"\x00\x00\x00\x01\x01" + encode_varint(1) + b"\x01\x01",  # null key
        encode_varint(7) + b"\x00\x00\x00\x01\x01" + encode_varint(-1) + b"\x00",  # -1 headers
        encode_varint(7) + b"\x00\x00\x00\x01\x01" + encode_varint(2**30) + b"\x00",
        encode_varint(9) + b"\x00" + b"\xff" * 8,  # a varint that never ends
        encode_varint(16) + b"\x00" + b"\xff" * 10 + b"\x01" + b"\x00\x01\x01\x00",  # 11 bytes
        encode_varint(10) + b"\x00\x00" + b"\xff\xff\xff\xff\x7f" + b"\x01\x01\x00",  # 2^35
    ],
)
def test_records_whose_fields_disagree_with_their_length_are_refused(walk_records, record):
    with pytest.raises(RecordStructureError):
        walk(walk_records, raw_batch(record))
    with pytest.raises(CorruptRecordError):  # and the broker's own reader agrees
        RecordBatch(raw_batch(record)).records()


@pytest.mark.parametrize(
    "record",
    [
        encode_varint(7) + b"\x00\x00\x00" + encode_varint(-2) + b"\x02v\x00",  # key length -2
        encode_varint(6) + b"\x00\x00\x00\x01" + encode_varint(-3) + b"\x00",  # value length -3
    ],
)
def test_lengths_below_minus_one_are_refused(walk_records, record):
    # Java and our own reader take them as null, the format allows only -1: never stored.
    with pytest.raises(RecordStructureError, match="length -"):
        walk(walk_records, raw_batch(record))


def test_a_record_running_past_the_buffer_is_refused_cleanly(walk_records):
    buf = build_batch(five_records())
    for cut in range(HEADER_SIZE, len(buf)):
        with pytest.raises(RecordStructureError):
            walk_records(buf[:cut], HEADER_SIZE, cut, 5)


def test_headers_are_walked(walk_records):
    records = [SimpleRecord(b"v", b"k", [("h1", b"x"), ("h2", None), ("", b"")], 5)]
    walk(walk_records, build_batch(records))
    header_count_lie = raw_batch(
        encode_record(0, 0, b"k", b"v", [("h", b"x")]).replace(b"\x02\x02h\x02x", b"\x04\x02h\x02x")
    )
    with pytest.raises(RecordStructureError):
        walk(walk_records, header_count_lie)


@st.composite
def mutated_plain_batches(draw):
    records = draw(simple_records(max_size=6))
    buf = bytearray(build_batch(records))
    for _ in range(draw(st.integers(1, 3))):
        pos = draw(st.integers(HEADER_SIZE, len(buf) - 1))
        kind = draw(st.sampled_from(["flip", "insert", "delete", "count"]))
        if kind == "flip":
            buf[pos] ^= draw(st.integers(1, 255))
        elif kind == "insert":
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete":
            del buf[pos : pos + draw(st.integers(1, 4))]
        else:
            delta = draw(st.integers(-2, 2))
            struct.pack_into(">i", buf, RECORDS_COUNT_POS, len(records) + delta)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    return buf


@FUZZ
@given(buf=mutated_plain_batches())
def test_whatever_the_walk_accepts_reads_back_as_declared(walk_records, buf):
    count = struct.unpack_from(">i", buf, RECORDS_COUNT_POS)[0]
    try:
        walk_records(buf, HEADER_SIZE, len(buf), count)
    except RecordStructureError:
        return
    records = RecordBatch(buf).records()  # must not raise
    assert [r.offset for r in records] == list(range(count))


@pytest.mark.parametrize("codec", [c for c in compression.NAMES if c != compression.NONE])
def test_a_compressed_payload_walks_like_a_plain_one(walk_records, codec):
    records = five_records()
    buf = build_batch(records, compression_type=codec)
    payload = RecordBatch(buf).records_payload()
    walk_records(payload, 0, len(payload), 5)
    with pytest.raises(RecordStructureError):
        walk_records(payload, 0, len(payload), 4)
