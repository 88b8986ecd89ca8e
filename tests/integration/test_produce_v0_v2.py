"""Produce v0-v2 (old clients, and what older librdkafka needs advertised to compress):
message sets of magic 0/1 land as v2 batches, answered in each version's response shape."""

import datetime

import pytest

from brokerd.protocol import produce_legacy
from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.framing import decode_response
from brokerd.records import compression
from brokerd.records.batch import LOG_APPEND_TIME, RecordBatch, SimpleRecord
from brokerd.records.legacy import build_message_set
from tests.integration.wire import WireClient
from tests.integration.wire_calls import create, fetch

SECOND = datetime.timedelta(seconds=1)


def produce_legacy_version(client, version, topic, records, partition=0, acks=1):
    request_type = produce_legacy.SCHEMAS[version][0]
    data = produce_legacy.PartitionProduceData(index=partition, records=bytes(records))
    body = request_type(
        acks=acks,
        timeout=SECOND,
        topic_data=(produce_legacy.TopicProduceData(name=topic, partition_data=(data,)),),
    )
    correlation_id = client.send(body)
    frame = client.read_frame()
    response = decode_response(frame, 0, version)
    assert int.from_bytes(frame[:4], "big") == correlation_id
    return response


def records(*values, start_ts=1_000):
    return [SimpleRecord(v, b"k%d" % i, (), start_ts + i) for i, v in enumerate(values)]


@pytest.mark.parametrize(
    ("version", "magic", "codec"),
    [(0, 0, compression.NONE), (0, 0, compression.GZIP), (1, 1, compression.SNAPPY),
     (2, 1, compression.LZ4), (2, 1, compression.NONE)],
)  # fmt: skip
def test_legacy_versions_append_and_answer_in_their_shape(
    broker, topic_name, version, magic, codec
):
    create(broker, topic_name)
    with WireClient(broker.bootstrap) as client:
        first = build_message_set(records(b"a", b"b"), magic=magic, compression_type=codec)
        second = build_message_set(records(b"c"), magic=magic, compression_type=codec)
        answers = [produce_legacy_version(client, version, topic_name, s) for s in (first, second)]
        parts = [a.responses[0].partition_responses[0] for a in answers]
        assert [(p.index, p.error_code, p.base_offset) for p in parts] == [
            (0, ErrorCode.none, 0),
            (0, ErrorCode.none, 2),
        ]
        assert hasattr(answers[0], "throttle_time") == (version >= 1)
        assert hasattr(parts[0], "log_append_time") == (version >= 2)
        if version >= 2:
            assert parts[0].log_append_time is None  # CreateTime topic: -1 on the wire
        stored = fetch(client, topic_name, 0).responses[0].partitions[0].records
    batches = list(_batches(stored))
    assert [b.compression for b in batches] == [codec, codec]
    values = [r.value for b in batches for r in b]
    assert values == [b"a", b"b", b"c"]
    if magic == 1:
        assert [r.timestamp for b in batches for r in b] == [1000, 1001, 1000]


def test_v2_reports_log_append_time(broker, topic_name):
    create(broker, topic_name, **{"message.timestamp.type": "LogAppendTime"})
    with WireClient(broker.bootstrap) as client:
        answer = produce_legacy_version(
            client, 2, topic_name, build_message_set(records(b"x"), magic=1)
        )
        part = answer.responses[0].partition_responses[0]
        assert part.error_code == ErrorCode.none and part.log_append_time is not None
        stored = fetch(client, topic_name, 0).responses[0].partitions[0].records
    assert RecordBatch(stored).timestamp_type == LOG_APPEND_TIME


def test_errors_per_partition_and_bad_input(broker, topic_name):
    create(broker, topic_name)
    with WireClient(broker.bootstrap) as client:
        unknown = produce_legacy_version(
            client, 1, topic_name + "-missing", build_message_set(records(b"x"), magic=0)
        )
        assert unknown.responses[0].partition_responses[0].error_code in (
            ErrorCode.unknown_topic_or_partition,
            ErrorCode.leader_not_available,
        )
        corrupt = bytearray(build_message_set(records(b"x"), magic=1))
        corrupt[-1] ^= 0xFF  # the value's last byte: the CRC no longer matches
        answer = produce_legacy_version(client, 0, topic_name, corrupt)
        part = answer.responses[0].partition_responses[0]
        assert (part.error_code, part.base_offset) == (ErrorCode.corrupt_message, -1)
        ok = produce_legacy_version(
            client, 0, topic_name, build_message_set(records(b"y"), magic=0)
        )
        assert ok.responses[0].partition_responses[0].base_offset == 0


def _batches(data: bytes):
    position = 0
    while position + 12 <= len(data):
        length = int.from_bytes(data[position + 8 : position + 12], "big")
        yield RecordBatch(data[position : position + 12 + length])
        position += 12 + length


@pytest.mark.parametrize(("version", "expected"), [(6, ErrorCode.unsupported_compression_type), (7, ErrorCode.none)])  # fmt: skip
def test_zstd_needs_produce_v7(broker, topic_name, version, expected):
    from brokerd.records.batch import build_batch
    from tests.integration.wire import nested, request

    create(broker, topic_name)
    zstd = build_batch(records(b"z"), compression_type=compression.ZSTD)
    data = nested(0, version, "PartitionProduceData", index=0, records=zstd)
    body = request(
        0,
        version,
        transactional_id=None,
        acks=1,
        timeout=SECOND,
        topic_data=(
            nested(0, version, "TopicProduceData", name=topic_name, partition_data=(data,)),
        ),
    )
    with WireClient(broker.bootstrap) as client:
        assert client.call(body).responses[0].partition_responses[0].error_code == expected
