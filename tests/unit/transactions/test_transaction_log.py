"""`__transaction_state` records, byte for byte in Kafka's TransactionLogKey v0 and
TransactionLogValue v0/v1 formats, and the partition formula."""

from __future__ import annotations

import pytest

from brokerd.transactions import transaction_log as tl
from brokerd.transactions.transaction_log import TxnLogValue, TxnState


def test_status_ids_and_names_are_kafkas():
    assert [(s.value, s.kafka_name) for s in TxnState] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]


def test_key_is_type_prefix_then_string():
    # int16 0 (CoordinatorRecordType TRANSACTION_LOG), int16 length, UTF-8
    assert tl.key("tx-1") == bytes.fromhex("00000004") + b"tx-1"
    assert tl.decode_key(tl.key("ünï")) == "ünï"


ONGOING = TxnLogValue(
    producer_id=1000,
    producer_epoch=3,
    transaction_timeout_ms=60000,
    state=TxnState.ONGOING,
    partitions={"ab": [0, 2], "c": [1]},
    last_update_timestamp_ms=0x0102030405,
    start_timestamp_ms=0x0A0B0C0D0E,
)

ONGOING_V0 = bytes.fromhex(
    "0000"  # value version 0
    "00000000000003e8"  # producer id 1000
    "0003"  # epoch
    "0000ea60"  # timeout 60000
    "01"  # Ongoing
    "00000002"  # two topics
    "0002" + "6162" + "00000002" + "00000000" + "00000002"
    "0001" + "63" + "00000001" + "00000001"
    "0000000102030405"  # last update
    "0000000a0b0c0d0e"  # start
)


def test_value_v0_bytes():
    assert tl.value(ONGOING) == ONGOING_V0
    decoded = tl.decode_value(ONGOING_V0)
    assert decoded == ONGOING
    assert decoded.topic_partitions == {("ab", 0), ("ab", 2), ("c", 1)}


def test_empty_state_writes_a_null_partition_list():
    empty = TxnLogValue(7, 0, 1000, TxnState.EMPTY, {}, 5, -1)
    data = tl.value(empty)
    assert data == bytes.fromhex(
        "000000000000000000070000000003e800ffffffff0000000000000005ffffffffffffffff"
    )
    assert tl.decode_value(data) == empty
    with pytest.raises(ValueError):
        tl.value(TxnLogValue(7, 0, 1000, TxnState.EMPTY, {"t": [0]}))


def test_value_v1_flexible_with_tagged_fields():
    record = TxnLogValue(
        1000,
        3,
        60000,
        TxnState.PREPARE_COMMIT,
        {"c": [1]},
        5,
        6,
        previous_producer_id=999,
        client_transaction_version=2,
    )
    data = bytes.fromhex(
        "0001"
        "00000000000003e8"
        "0003"
        "0000ea60"
        "02"
        "02"  # compact array: 1 topic
        "02"
        "63"  # compact string "c"
        "02"
        "00000001"  # compact int32 array [1]
        "00"  # the topic's tagged fields
        "0000000000000005"
        "0000000000000006"
        "02"  # two tagged fields
        "00"
        "08"
        "00000000000003e7"  # tag 0 PreviousProducerId
        "02"
        "02"
        "0002"  # tag 2 ClientTransactionVersion
    )
    assert tl.encode_value_v1(record) == data
    assert tl.decode_value(data) == record


@pytest.mark.parametrize(
    "data",
    [
        b"",
        bytes.fromhex("0002") + ONGOING_V0[2:],  # unknown version
        ONGOING_V0[:-1],  # truncated
        ONGOING_V0[:17] + bytes.fromhex("7fffffff") + ONGOING_V0[21:],  # huge array
        ONGOING_V0[:16] + bytes.fromhex("09") + ONGOING_V0[17:],  # unknown status
    ],
)
def test_bad_values_are_format_errors(data):
    with pytest.raises(tl.RecordFormatError):
        tl.decode_value(data)


def test_bad_keys_are_format_errors():
    for data in (b"", bytes.fromhex("0001") + b"\x00\x01a", bytes.fromhex("00000005") + b"ab"):
        with pytest.raises(tl.RecordFormatError):
            tl.decode_key(data)
    assert tl.decode_record(tl.key("x"), None) == ("x", None)


def test_partition_formula_is_kafkas():
    # Utils.abs("hello".hashCode) % 50, "hello".hashCode == 99162322
    assert tl.partition_for("hello", 50) == 99162322 % 50
    # Integer.MIN_VALUE hashes map to 0 ("polygenelubricants".hashCode is MIN_VALUE)
    assert tl.partition_for("polygenelubricants", 50) == 0


def test_topic_configs_are_kafkas():
    assert tl.topic_configs(1024, 2) == {
        "cleanup.policy": "compact",
        "compression.type": "uncompressed",
        "min.insync.replicas": "2",
        "segment.bytes": "1024",
        "unclean.leader.election.enable": "false",
    }
