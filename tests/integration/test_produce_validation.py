"""A real broker validates produced batches as Kafka's LogValidator: batches whose records
disagree with their header, and compression bombs on any topic, are refused with nothing
appended while other clients carry on; record errors name the bad records (KIP-467)."""

import struct

import pytest

from brokerd.protocol.errors import ErrorCode
from brokerd.records import compression
from brokerd.records.batch import (
    CRC_POS,
    LAST_OFFSET_DELTA_POS,
    RECORDS_COUNT_POS,
    SimpleRecord,
    build_batch,
    crc_of,
)
from brokerd.records.legacy import build_message_set
from tests.bombs import bomb_batch
from tests.client_reads import confluent_read
from tests.integration.wire import WireClient
from tests.integration.wire_calls import batch, create, fetch, produce

NOW_ISH = 1_700_000_000_000


def lying(buf, count: int, last_offset_delta: int) -> bytearray:
    """The batch with other count and lastOffsetDelta, its CRC recomputed so it passes."""
    buf = bytearray(buf)
    struct.pack_into(">i", buf, RECORDS_COUNT_POS, count)
    struct.pack_into(">i", buf, LAST_OFFSET_DELTA_POS, last_offset_delta)
    struct.pack_into(">I", buf, CRC_POS, crc_of(buf, 0, len(buf)))
    return buf


def five(codec=compression.NONE) -> bytearray:
    return build_batch([SimpleRecord(b"bad%d" % i, b"k") for i in range(5)], compression_type=codec)


def log_end(client, topic) -> int:
    return fetch(client, topic, 0).responses[0].partitions[0].high_watermark


def refused_and_nothing_appended(broker, topic, bad, code):
    """Produce `bad` between two good batches from another connection; the bad one gets
    `code`, the log end does not move for it, and a consumer reads only the good ones."""
    with WireClient(broker.bootstrap) as bystander, WireClient(broker.bootstrap) as attacker:
        assert produce(bystander, topic, batch(b"before")).base_offset == 0
        answer = produce(attacker, topic, bad)
        assert answer.error_code == code, answer
        assert answer.base_offset == -1
        assert log_end(bystander, topic) == 1
        assert produce(bystander, topic, batch(b"after")).base_offset == 1
        # The attacker's connection still works too.
        assert produce(attacker, topic, batch(b"last")).base_offset == 2
    values = [value for _, _, value, _, _ in confluent_read(broker.bootstrap, topic, 0, 3)]
    assert values == [b"before", b"after", b"last"]
    return answer


@pytest.mark.parametrize("codec", [compression.NONE, compression.LZ4])
def test_a_record_count_that_lies_is_refused(broker, topic_name, codec):
    # Header: 3 records at offsets 0..2; inside: 5 records (offsets would overlap).
    create(broker, topic_name)
    answer = refused_and_nothing_appended(
        broker, topic_name, lying(five(codec), 3, 2), ErrorCode.invalid_record
    )
    assert "incorrect declared batch size" in answer.error_message


def test_a_last_offset_delta_that_lies_would_have_overlapped(broker, topic_name):
    # Count and lastOffsetDelta agree (2 records, delta 1) but 5 records are inside: stored,
    # the next batch's offsets would repeat those of records 2-4.
    create(broker, topic_name)
    refused_and_nothing_appended(broker, topic_name, lying(five(), 2, 1), ErrorCode.invalid_record)


def test_offset_deltas_that_skip_are_refused_and_named(broker, topic_name):
    create(broker, topic_name)
    # The header is consistent (2 records, lastOffsetDelta 1); record 1 claims delta 3.
    skipping = build_batch(
        [SimpleRecord(b"a", b"k"), SimpleRecord(b"b", b"k")],
        offset_deltas=[0, 3],
        last_offset_delta=1,
    )
    answer = refused_and_nothing_appended(broker, topic_name, skipping, ErrorCode.invalid_record)
    assert [e.batch_index for e in answer.record_errors] == [1]
    assert "offset delta 3" in answer.record_errors[0].batch_index_error_message


def test_a_count_that_would_jump_the_log_end_by_2_31_is_refused(broker, topic_name):
    create(broker, topic_name)
    jump = lying(batch(b"one"), 2**31 - 1, 2**31 - 2)
    refused_and_nothing_appended(broker, topic_name, jump, ErrorCode.invalid_record)


@pytest.mark.parametrize(("codec", "mib"), [(compression.ZSTD, 2048), (compression.GZIP, 256)])
def test_a_bomb_on_a_delete_policy_topic_is_refused(broker, topic_name, codec, mib):
    # ~100 KB of zstd that inflate to 2 GiB; ~260 KB of gzip to 256 MiB.
    create(broker, topic_name, **{"cleanup.policy": "delete"})
    answer = refused_and_nothing_appended(
        broker, topic_name, bomb_batch(codec, mib), ErrorCode.corrupt_message
    )
    assert "decompresses to more than" in answer.error_message


def test_record_errors_name_records_without_a_key_on_a_compacted_topic(broker, topic_name):
    create(broker, topic_name, **{"cleanup.policy": "compact"})
    keyless = build_batch(
        [SimpleRecord(b"a", b"k"), SimpleRecord(b"b"), SimpleRecord(b"c", b"k")],
        compression_type=compression.ZSTD,
    )
    with WireClient(broker.bootstrap) as client:
        answer = produce(client, topic_name, keyless)
        assert answer.error_code == ErrorCode.invalid_record
        assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == [
            (
                1,
                "Compacted topic cannot accept message without key in topic partition "
                f"{topic_name}-0.",
            )
        ]
        assert answer.error_message.startswith(
            "One or more records have been rejected due to 1 record errors in total"
        )
        assert log_end(client, topic_name) == 0


def test_record_errors_name_records_with_timestamps_out_of_range(broker, topic_name):
    create(broker, topic_name, **{"message.timestamp.difference.max.ms": "3600000"})
    with WireClient(broker.bootstrap) as client:
        # first and max timestamps (the header's) are now; record 2 is from 2023.
        stamps = [None, None, NOW_ISH, None]
        old = build_batch([SimpleRecord(b"v", b"k", (), ts) for ts in stamps])
        answer = produce(client, topic_name, old)
        assert answer.error_code == ErrorCode.invalid_timestamp
        assert [e.batch_index for e in answer.record_errors] == [2]
        assert answer.record_errors[0].batch_index_error_message.startswith(
            f"Timestamp {NOW_ISH} of message with offset 2 is out of range"
        )
        assert log_end(client, topic_name) == 0
        assert produce(client, topic_name, batch(b"now")).error_code == ErrorCode.none


def test_legacy_message_sets_of_mixed_magic_are_refused(broker, topic_name):
    create(broker, topic_name)
    mixed = build_message_set([SimpleRecord(b"v0", b"k")], magic=0) + build_message_set(
        [SimpleRecord(b"v1", b"k", (), NOW_ISH)], magic=1
    )
    refused_and_nothing_appended(broker, topic_name, mixed, ErrorCode.corrupt_message)
