"""Every byte-exact vector of shared/reference/vectors.json, in both directions."""

import crc32c
import pytest

from brokerd.records import read_entry
from brokerd.records.batch import RecordBatch, SimpleRecord, build_batch
from brokerd.records.legacy import build_message_set, encode_message
from brokerd.records.varint import decode_varint, encode_varint, size_of_varint

V2 = [
    "v2_batch_offset0_key_value",
    "v2_batch_offset1_nullkey_value",
    "v2_batch_10_records_6_byte_values",
    "v2_batch_with_headers",
]
LEGACY = [
    "v0_offset0_key_value",
    "v0_offset1_nullkey_value",
    "v1_offset0_key_value_ts1524709879130",
]


def test_crc32c_check_value(vectors):
    check = vectors["crc32c_check"]
    assert crc32c.crc32c(check["input_ascii"].encode()) == check["crc32c"]


def test_varints_both_ways(vectors):
    for text, hexed in vectors["varints_signed_zigzag"].items():
        value = int(text)
        assert encode_varint(value).hex() == hexed
        assert decode_varint(bytes.fromhex(hexed), 0) == (value, len(hexed) // 2)
        assert size_of_varint(value) == len(hexed) // 2


@pytest.mark.parametrize("name", V2)
def test_v2_vector_reads_and_rebuilds(vectors, name):
    vector = vectors[name]
    raw = bytes.fromhex(vector["hex"])
    batch = RecordBatch(raw)
    batch.validate()
    assert batch.size == vector["size"] == len(raw)
    assert batch.crc == vector["crc32c"]
    records = batch.records()
    rebuilt = build_batch(
        [
            SimpleRecord(r.value, r.key, [(h.key, h.value) for h in r.headers], r.timestamp)
            for r in records
        ],
        base_offset=batch.base_offset,
        partition_leader_epoch=batch.partition_leader_epoch,
        first_timestamp=batch.first_timestamp,
        max_timestamp=batch.max_timestamp,
    )
    assert bytes(rebuilt) == raw


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_vector_reads_and_rebuilds(vectors, name):
    vector = vectors[name]
    raw = bytes.fromhex(vector["hex"])
    entry = read_entry(raw)
    entry.validate()
    assert entry.size == vector["size"]
    assert entry.crc == vector["crc32"]
    (record,) = entry.records()
    rebuilt = encode_message(
        record.offset, entry.magic, record.key, record.value, timestamp=record.timestamp
    )
    assert rebuilt == raw


def test_first_v2_vector_values(vectors):
    batch = RecordBatch(bytes.fromhex(vectors["v2_batch_offset0_key_value"]["hex"]))
    (record,) = batch.records()
    assert (record.offset, record.key, record.value) == (0, b"key", b"value")
    assert record.timestamp == 1524709879130


def test_sizes(vectors):
    sizes = vectors["sizes"]
    assert len(build_batch([SimpleRecord(b"x" * 16384, None, (), 0)])) == sizes["v2_16KiB_value"]
    v1 = build_message_set([SimpleRecord(b"x" * 16384, None, (), 0)], magic=1)
    assert len(v1) == sizes["v1_16KiB_value"]
    empty = build_batch([], last_offset_delta=0)
    assert len(empty) == sizes["v2_batch_header"]
    assert len(build_message_set([SimpleRecord(None)], magic=0)) == 12 + sizes["v0_min_message"]
    assert len(build_message_set([SimpleRecord(None)], magic=1)) == 12 + sizes["v1_min_message"]
