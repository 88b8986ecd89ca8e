"""Produce and Fetch at the protocol level: per-partition errors, sizes, sessions."""

import datetime

from confluent_kafka.admin import AdminClient, NewTopic

from brokerd.protocol.errors import ErrorCode
from brokerd.records.batch import LOG_APPEND_TIME, RecordBatch, SimpleRecord, build_batch
from brokerd.records.legacy import build_message_set
from tests.integration.wire import WireClient, nested, request

SECOND = datetime.timedelta(seconds=1)


def create(broker, name, partitions=1, **configs):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs)])[name].result(15)


def produce(client, topic, records, partition=0, acks=1):
    data = nested(0, 9, "PartitionProduceData", index=partition, records=bytes(records))
    body = request(
        0,
        9,
        transactional_id=None,
        acks=acks,
        timeout=SECOND,
        topic_data=(nested(0, 9, "TopicProduceData", name=topic, partition_data=(data,)),),
    )
    if acks == 0:
        client.send(body)
        return None
    return client.call(body).responses[0].partition_responses[0]


def fetch(
    client,
    topic,
    offset,
    partition=0,
    max_bytes=1 << 20,
    partition_max=1 << 20,
    min_bytes=1,
    wait_ms=0,
    session_id=0,
    epoch=-1,
    version=12,
):
    part = nested(
        1,
        version,
        "FetchPartition",
        partition=partition,
        fetch_offset=offset,
        partition_max_bytes=partition_max,
        current_leader_epoch=-1,
        log_start_offset=-1,
        last_fetched_epoch=-1,
    )
    body = request(
        1,
        version,
        replica_id=-1,
        max_wait=datetime.timedelta(milliseconds=wait_ms),
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=session_id,
        session_epoch=epoch,
        topics=(nested(1, version, "FetchTopic", topic=topic, partitions=(part,)),),
        forgotten_topics_data=(),
        rack_id="",
    )
    return client.call(body)


def batch(*values, key=b"k"):
    return build_batch([SimpleRecord(v, key) for v in values])


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
