"""Fetch edge cases at the protocol level: KIP-74 response sizing across partitions, absurd
sizes, unknown partitions and out-of-range offsets next to partitions that have data."""

import datetime

import pytest

from brokerd.protocol.errors import ErrorCode
from brokerd.records.batch import RecordBatch
from tests.integration.wire import WireClient, nested, request
from tests.integration.wire_calls import batch, create, fetch_many, produce

BATCH_VALUE = b"x" * 1000  # each batch ~1.1 KB


def batches_of(records):
    """The complete batches; like Kafka, a size limit may cut the last one short, and
    clients drop that partial tail."""
    out, pos = [], 0
    while records and len(records) - pos >= 61:
        found = RecordBatch(records, pos)
        if pos + found.size > len(records):
            break
        found.validate()
        out.append(found)
        pos += found.size
    return out


@pytest.fixture
def three_full_partitions(broker, topic_name):
    """Three partitions of three ~1.1 KB batches each (offsets 0-2)."""
    create(broker, topic_name, partitions=3)
    with WireClient(broker.bootstrap) as client:
        for partition in range(3):
            for _ in range(3):
                assert produce(client, topic_name, batch(BATCH_VALUE), partition).error_code == 0
    return topic_name


def _everything(topic, partition_max=1 << 20):
    return [(topic, p, 0, partition_max) for p in range(3)]


def test_response_max_bytes_spans_partitions_in_order(broker, three_full_partitions):
    topic = three_full_partitions
    size = batches_of(_fetch_all(broker, topic, 1 << 20)[(topic, 0)].records)[0].size
    with WireClient(broker.bootstrap) as client:
        # Room for four batches: three from partition 0, one from partition 1, none from 2.
        got = fetch_many(client, _everything(topic), max_bytes=4 * size + 10)
        assert [len(batches_of(got[(topic, p)].records)) for p in range(3)] == [3, 1, 0]
        assert sum(len(got[(topic, p)].records or b"") for p in range(3)) == 4 * size + 10
        assert all(got[(topic, p)].error_code == ErrorCode.none for p in range(3))
        assert all(got[(topic, p)].high_watermark == 3 for p in range(3))


def _fetch_all(broker, topic, max_bytes):
    with WireClient(broker.bootstrap) as client:
        return fetch_many(client, _everything(topic), max_bytes=max_bytes)


def test_kip74_only_the_first_partition_with_data_may_exceed(broker, three_full_partitions):
    topic = three_full_partitions
    with WireClient(broker.bootstrap) as client:
        # The response limit is below one batch: partition 0 still gets its first batch.
        got = fetch_many(client, _everything(topic), max_bytes=100)
        assert [len(batches_of(got[(topic, p)].records)) for p in range(3)] == [1, 0, 0]
        # Per-partition limits below one batch: again only the first partition with data.
        got = fetch_many(client, _everything(topic, partition_max=100), max_bytes=1 << 20)
        assert [len(batches_of(got[(topic, p)].records)) for p in range(3)] == [1, 0, 0]
        # Partition 0 at its end has no data: the oversize allowance passes to partition 1.
        wanted = [(topic, 0, 3, 100), (topic, 1, 0, 100), (topic, 2, 0, 100)]
        got = fetch_many(client, wanted, max_bytes=100)
        assert [len(batches_of(got[(topic, p)].records)) for p in range(3)] == [0, 1, 0]


@pytest.mark.parametrize(
    ("max_bytes", "partition_max"),
    [(0x7FFFFFFF, 0x7FFFFFFF), (0, 0), (-1, -1), (-(1 << 31), 1 << 20), (1 << 20, -(1 << 31))],
)
def test_absurd_max_bytes(broker, three_full_partitions, max_bytes, partition_max):
    topic = three_full_partitions
    with WireClient(broker.bootstrap) as client:
        got = fetch_many(client, _everything(topic, partition_max), max_bytes=max_bytes)
        assert set(got) == {(topic, p) for p in range(3)}
        assert all(p.error_code == ErrorCode.none for p in got.values())
        assert [got[(topic, p)].high_watermark for p in range(3)] == [3, 3, 3]
        counts = [len(batches_of(got[(topic, p)].records)) for p in range(3)]
        # Whatever the limits, the first batch comes back (KIP-74), and never a torn one.
        assert counts[0] >= 1
        if max_bytes == 0x7FFFFFFF:
            assert counts == [3, 3, 3]
        # The connection is still good for a normal request.
        assert (
            len(batches_of(fetch_many(client, _everything(topic), 1 << 20)[(topic, 2)].records))
            == 3
        )


def test_unknown_topic_and_partition_next_to_data(broker, three_full_partitions):
    topic = three_full_partitions
    wanted = [
        ("no-such-topic", 0, 0, 1 << 20),
        (topic, 7, 0, 1 << 20),
        (topic, 1, 0, 1 << 20),
    ]
    with WireClient(broker.bootstrap) as client:
        got = fetch_many(client, wanted, max_bytes=1 << 20, wait_ms=2000, min_bytes=1 << 30)
    assert got[("no-such-topic", 0)].error_code == ErrorCode.unknown_topic_or_partition
    assert got[(topic, 7)].error_code == ErrorCode.unknown_topic_or_partition
    assert got[(topic, 1)].error_code == ErrorCode.none
    assert len(batches_of(got[(topic, 1)].records)) == 3


def test_offset_out_of_range_next_to_data(broker, three_full_partitions):
    topic = three_full_partitions
    with WireClient(broker.bootstrap) as client:
        deleted = client.call(
            request(
                21,
                2,
                topics=(
                    nested(
                        21,
                        2,
                        "DeleteRecordsTopic",
                        name=topic,
                        partitions=(
                            nested(21, 2, "DeleteRecordsPartition", partition_index=2, offset=2),
                        ),
                    ),
                ),
                timeout=datetime.timedelta(seconds=5),
            )
        )
        assert deleted.topics[0].partitions[0].low_watermark == 2
        wanted = [(topic, 0, 4, 1 << 20), (topic, 1, 1, 1 << 20), (topic, 2, 1, 1 << 20)]
        got = fetch_many(client, wanted, max_bytes=1 << 20)
        assert got[(topic, 0)].error_code == ErrorCode.offset_out_of_range  # past the end
        assert got[(topic, 2)].error_code == ErrorCode.offset_out_of_range  # below log start
        assert got[(topic, 1)].error_code == ErrorCode.none
        assert [b.base_offset for b in batches_of(got[(topic, 1)].records)] == [1, 2]
        # At exactly the log start and exactly the end: no error.
        wanted = [(topic, 0, 3, 1 << 20), (topic, 2, 2, 1 << 20)]
        got = fetch_many(client, wanted, max_bytes=1 << 20)
        assert [got[(topic, p)].error_code for p in (0, 2)] == [ErrorCode.none] * 2
        assert got[(topic, 2)].log_start_offset == 2
        assert [b.base_offset for b in batches_of(got[(topic, 2)].records)] == [2]
