"""Produce and Fetch at the protocol level: per-partition errors, sizes, sessions."""

from brokerd.protocol.errors import ErrorCode
from brokerd.records.batch import LOG_APPEND_TIME, RecordBatch, SimpleRecord
from brokerd.records.legacy import build_message_set
from tests.integration.wire import WireClient
from tests.integration.wire_calls import batch, create, fetch, produce


def test_offsets_and_per_partition_errors(broker, topic_name):
    create(broker, topic_name, partitions=2)
    with WireClient(broker.bootstrap) as client:
        first = produce(client, topic_name, batch(b"a", b"b", b"c"))
        assert (first.error_code, first.base_offset) == (ErrorCode.none, 0)
        second = produce(client, topic_name, batch(b"d"))
        assert second.base_offset == 3
        missing = produce(client, topic_name, batch(b"x"), partition=7)
        assert missing.error_code == ErrorCode.unknown_topic_or_partition
        corrupt = bytearray(batch(b"y"))
        corrupt[-1] ^= 0xFF
        assert produce(client, topic_name, corrupt).error_code == ErrorCode.corrupt_message


def test_fetch_from_mid_batch_returns_whole_batch(broker, topic_name):
    create(broker, topic_name)
    with WireClient(broker.bootstrap) as client:
        produce(client, topic_name, batch(b"a", b"b", b"c"))
        response = fetch(client, topic_name, 1)
        partition = response.responses[0].partitions[0]
        assert partition.high_watermark == 3
        got = RecordBatch(partition.records)
        assert (got.base_offset, got.record_count) == (0, 3)


def test_kip74_first_batch_exceeds_max_bytes(broker, topic_name):
    create(broker, topic_name)
    with WireClient(broker.bootstrap) as client:
        produce(client, topic_name, batch(b"x" * 5000))
        response = fetch(client, topic_name, 0, max_bytes=100, partition_max=100)
        records = response.responses[0].partitions[0].records
        assert RecordBatch(records).record_count == 1 and len(records) > 5000


def test_max_message_bytes_and_keys_on_compacted_topics(broker, topic_name):
    create(broker, topic_name, **{"max.message.bytes": "1000", "cleanup.policy": "compact"})
    with WireClient(broker.bootstrap) as client:
        too_large = produce(client, topic_name, batch(b"x" * 2000))
        assert too_large.error_code == ErrorCode.message_too_large
        keyless = produce(client, topic_name, batch(b"v", key=None))
        assert keyless.error_code == ErrorCode.invalid_record
        assert produce(client, topic_name, batch(b"v")).error_code == ErrorCode.none


def test_log_append_time(broker, topic_name):
    create(broker, topic_name, **{"message.timestamp.type": "LogAppendTime"})
    with WireClient(broker.bootstrap) as client:
        result = produce(client, topic_name, batch(b"v"))
        assert result.log_append_time is not None
        stored = RecordBatch(fetch(client, topic_name, 0).responses[0].partitions[0].records)
        assert stored.timestamp_type == LOG_APPEND_TIME


def test_legacy_message_sets_are_up_converted(broker, topic_name):
    create(broker, topic_name)
    with WireClient(broker.bootstrap) as client:
        legacy = build_message_set([SimpleRecord(b"old", b"k", (), 1000)], magic=1)
        assert produce(client, topic_name, legacy).error_code == ErrorCode.none
        stored = RecordBatch(fetch(client, topic_name, 0).responses[0].partitions[0].records)
        assert [r.value for r in stored] == [b"old"]


def test_acks_zero_gets_no_response(broker, topic_name):
    create(broker, topic_name)
    with WireClient(broker.bootstrap) as client:
        produce(client, topic_name, batch(b"quiet"), acks=0)
        # The next response on the connection belongs to the next request.
        assert produce(client, topic_name, batch(b"loud")).base_offset == 1


def test_fetch_session_leaves_out_unchanged_partitions(broker, topic_name):
    create(broker, topic_name)
    with WireClient(broker.bootstrap) as client:
        produce(client, topic_name, batch(b"a"))
        full = fetch(client, topic_name, 0, epoch=0)
        assert full.session_id != 0 and len(full.responses) == 1
        quiet = fetch(client, topic_name, 1, session_id=full.session_id, epoch=1)
        assert quiet.responses == ()
        stale = fetch(client, topic_name, 1, session_id=full.session_id, epoch=1)
        assert stale.error_code == ErrorCode.invalid_fetch_session_epoch


def test_long_poll_times_out_empty(broker, topic_name):
    create(broker, topic_name)
    with WireClient(broker.bootstrap) as client:
        response = fetch(client, topic_name, 0, wait_ms=300, min_bytes=1)
        assert response.responses[0].partitions[0].records in (None, b"")
