"""Our record code and kafka-python's read each other's batches identically, in every codec.

kafka-python's snappy and old-Kafka LZ4 paths need the optional `python-snappy` and `xxhash`
modules, which this project does not install. When they are missing, `kafka_codecs` gives
kafka.codec equivalents: python-snappy 0.7 is itself a thin wrapper over cramjam's raw
snappy, and xxh32 comes from our implementation, which
test_compression.test_xxh32_matches_lz4s_content_checksum checks against the lz4 library.
kafka-python's own framing code (xerial, the broken LZ4 header checksum) runs unchanged.
"""

import struct
from types import SimpleNamespace

import cramjam
import kafka.codec
import pytest
from hypothesis import given, settings
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from brokerd.records import compression, iter_entries
from brokerd.records.batch import (
    HEADER,
    HEADER_SIZE,
    LOG_APPEND_TIME,
    RecordBatch,
    build_batch,
    crc_of,
)
from brokerd.records.control import ABORT, COMMIT, build_end_txn_marker
from brokerd.records.legacy import build_message_set

from .strategies import (
    LEGACY_CODECS,
    V2_CODECS,
    compressible_records,
    offsets,
    record_tuples,
    simple_records,
    timestamps,
)

INTEROP = settings(max_examples=60, deadline=None)
BATCH_SIZE = 1 << 24


class _Xxh32Digest:
    def __init__(self, data: bytes):
        self._value = compression.lz4_xxh32(bytes(data))

    def digest(self) -> bytes:
        return self._value.to_bytes(4, "big")


@pytest.fixture(scope="module", autouse=True)
def kafka_codecs():
    with pytest.MonkeyPatch.context() as patch:
        if kafka.codec.snappy is None:
            patch.setattr(
                kafka.codec,
                "snappy",
                SimpleNamespace(
                    compress=lambda data: bytes(cramjam.snappy.compress_raw(bytes(data))),
                    decompress=lambda data: bytes(cramjam.snappy.decompress_raw(bytes(data))),
                ),
            )
        if kafka.codec.xxhash is None:
            patch.setattr(kafka.codec, "xxhash", SimpleNamespace(xxh32=_Xxh32Digest))
        yield


# kafka-python -> us ----------------------------------------------------------------------


def kafka_python_v2(records, codec, *, producer=(-1, -1, -1), transactional=False) -> bytearray:
    builder = DefaultRecordBatchBuilder(2, codec, transactional, *producer, BATCH_SIZE)
    for i, r in enumerate(records):
        assert builder.append(i, r.timestamp, r.key, r.value, list(r.headers)) is not None
    return builder.build()


def kafka_python_legacy(records, magic, codec) -> bytearray:
    builder = LegacyRecordBatchBuilder(magic, codec, BATCH_SIZE)
    for i, r in enumerate(records):
        assert builder.append(i, r.timestamp, r.key, r.value) is not None
    return builder.build()


def kafka_python_reads(raw) -> list[tuple]:
    """Every record kafka-python finds in a buffer, as our record_tuples shape."""
    out = []
    for batch in MemoryRecords(bytes(raw)):
        assert batch.validate_crc()
        for r in batch:
            headers = [tuple(h) for h in r.headers]
            timestamp = -1 if r.timestamp is None else r.timestamp  # magic 0 has none
            out.append((r.offset, timestamp, r.key, r.value, headers))
    return out


def our_reads(raw) -> list[tuple]:
    out = []
    for entry in iter_entries(raw):
        entry.validate()
        out.extend(record_tuples(entry.records()))
    return out


@pytest.mark.parametrize("codec", V2_CODECS)
def test_kafka_python_v2_batches_are_really_compressed(codec):
    raw = kafka_python_v2(compressible_records(), codec)
    assert RecordBatch(raw).compression == codec  # it falls back to none when nothing shrinks
    assert our_reads(raw) == kafka_python_reads(raw)
    assert [r.value for r in RecordBatch(raw).records()] == [
        r.value for r in compressible_records()
    ]


@pytest.mark.parametrize("codec", V2_CODECS)
@INTEROP
@given(records=simple_records())
def test_we_read_kafka_python_v2_batches(codec, records):
    raw = kafka_python_v2(records, codec)
    batch = RecordBatch(raw)
    batch.validate()
    batch.validate_from_client()
    expected = [
        (i, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers])
        for i, r in enumerate(records)
    ]
    assert record_tuples(batch.records()) == expected == kafka_python_reads(raw)


def test_we_read_kafka_python_idempotent_transactional_batch():
    raw = kafka_python_v2(
        compressible_records(3), compression.NONE, producer=(42, 7, 100), transactional=True
    )
    batch = RecordBatch(raw)
    batch.validate_from_client()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 7, 100)
    assert batch.is_transactional and batch.is_idempotent
    assert batch.last_sequence == 102


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_kafka_python_legacy_sets_are_really_compressed(magic, codec):
    records = compressible_records()
    raw = kafka_python_legacy(records, magic, codec)
    entries = list(iter_entries(raw))
    assert {e.compression for e in entries} == {codec}
    assert our_reads(raw) == kafka_python_reads(raw)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@INTEROP
@given(records=simple_records(with_headers=False))
def test_we_read_kafka_python_legacy_sets(magic, codec, records):
    raw = kafka_python_legacy(records, magic, codec)
    expected = [
        (i, r.timestamp if magic else -1, r.key, r.value, []) for i, r in enumerate(records)
    ]
    assert our_reads(raw) == expected == kafka_python_reads(raw)


# us -> kafka-python ----------------------------------------------------------------------


@pytest.mark.parametrize("codec", V2_CODECS)
@INTEROP
@given(records=simple_records(), base_offset=offsets)
def test_kafka_python_reads_our_v2_batches(codec, records, base_offset):
    raw = build_batch(records, base_offset=base_offset, compression_type=codec)
    batch = DefaultRecordBatch(raw)
    assert batch.validate_crc()
    assert (batch.compression_type, batch.base_offset, batch.last_offset) == (
        codec,
        base_offset,
        base_offset + len(records) - 1,
    )
    assert kafka_python_reads(raw) == our_reads(raw)
    assert [r[0] for r in our_reads(raw)] == list(range(base_offset, base_offset + len(records)))


@pytest.mark.parametrize("codec", V2_CODECS)
@INTEROP
@given(records=simple_records(), append_time=timestamps)
def test_kafka_python_sees_our_log_append_time(codec, records, append_time):
    raw = build_batch(records, compression_type=codec)
    RecordBatch(raw).set_log_append_time(append_time)
    batch = DefaultRecordBatch(raw)
    assert batch.validate_crc()
    assert batch.timestamp_type == LOG_APPEND_TIME
    assert {r.timestamp for r in batch} == {append_time}


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@INTEROP
@given(records=simple_records(with_headers=False), base_offset=offsets)
def test_kafka_python_reads_our_legacy_sets(magic, codec, records, base_offset):
    raw = build_message_set(records, magic=magic, base_offset=base_offset, compression_type=codec)
    expected = [
        (base_offset + i, r.timestamp if magic else -1, r.key, r.value, [])
        for i, r in enumerate(records)
    ]
    assert kafka_python_reads(raw) == expected == our_reads(raw)


@pytest.mark.parametrize("control_type", [ABORT, COMMIT])
def test_kafka_python_reads_our_transaction_marker(control_type):
    raw = build_end_txn_marker(
        control_type,
        producer_id=9,
        producer_epoch=2,
        coordinator_epoch=5,
        base_offset=40,
        timestamp=123,
    )
    batch = DefaultRecordBatch(raw)
    assert batch.validate_crc() and batch.is_control_batch and batch.is_transactional
    (record,) = list(batch)
    assert (record.offset, record.type, record.version) == (40, control_type, 0)


# Codec framings ---------------------------------------------------------------------------


def test_large_snappy_payloads_span_several_xerial_blocks_both_ways():
    data = bytes(range(256)) * 700  # 179,200 bytes: six 32 KiB blocks
    ours = compression.compress(compression.SNAPPY, data)
    assert ours.startswith(b"\x82SNAPPY\x00")
    assert kafka.codec.snappy_decode(ours) == data
    assert compression.decompress(compression.SNAPPY, kafka.codec.snappy_encode(data)) == data


def test_raw_snappy_as_librdkafka_writes_it_is_accepted():
    data = b"raw snappy block " * 200
    raw_block = kafka.codec.snappy_encode(data, xerial_compatible=False)
    assert not raw_block.startswith(b"\x82SNAPPY")
    assert compression.decompress(compression.SNAPPY, raw_block) == data


def test_v2_batch_with_raw_snappy_records_is_read():
    records = compressible_records(5)
    plain = build_batch(records, base_offset=3)
    payload = kafka.codec.snappy_encode(bytes(plain[HEADER_SIZE:]), xerial_compatible=False)
    raw = bytearray(HEADER_SIZE + len(payload))
    header = list(HEADER.unpack_from(plain))
    header[1] = len(raw) - 12
    header[5] |= compression.SNAPPY
    HEADER.pack_into(raw, 0, *header)
    raw[HEADER_SIZE:] = payload
    struct.pack_into(">I", raw, 17, crc_of(raw, 0, len(raw)))
    assert our_reads(raw) == our_reads(plain) == kafka_python_reads(raw)


def test_empty_snappy_payload_is_readable_by_kafka_python():
    assert kafka.codec.snappy_decode(compression.compress(compression.SNAPPY, b"")) == b""


def test_magic_0_lz4_uses_kafkas_broken_header_checksum_both_ways():
    data = b"old kafka lz4 " * 100
    ours = compression.compress(compression.LZ4, data, magic=0)
    with pytest.raises(RuntimeError):  # a standard LZ4 reader rejects the pre-KIP-57 checksum
        kafka.codec.lz4_decode(ours)
    assert kafka.codec.lz4_decode_old_kafka(ours) == data
    theirs = kafka.codec.lz4_encode_old_kafka(data)
    assert compression.decompress(compression.LZ4, theirs, magic=0) == data
    # Magic 1 and later use the standard checksum, so the broken one is corrupt there.
    with pytest.raises(compression.CompressionError):
        compression.decompress(compression.LZ4, theirs, magic=1)


def test_magic_1_lz4_with_content_size_from_kafka_python():
    data = b"new kafka lz4 " * 100
    frame = kafka.codec.lz4_encode(data)
    assert frame[4] & 0x08  # kafka-python stores the content size
    assert compression.decompress(compression.LZ4, frame, magic=1) == data
    assert kafka.codec.lz4_decode(compression.compress(compression.LZ4, data, magic=1)) == data
