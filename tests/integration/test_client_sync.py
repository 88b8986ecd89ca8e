"""The synchronous facade used from plain threads (as Django views, Celery tasks and Spark
executors will), against a real broker and checked with kafka-python."""

import threading
from concurrent.futures import Future

import pytest

from brokerd.client import (
    AdminError,
    ErrorCode,
    KafkaClientError,
    KafkaResponseError,
    NewTopic,
    OffsetOutOfRangeError,
    RecordMetadata,
    SyncClient,
)
from brokerd.records.batch import SimpleRecord
from tests.client_reads import kafka_python_all

THREADS = 4
PER_THREAD = 200


def test_one_client_shared_by_plain_threads(broker, topic_name):
    with SyncClient(broker.bootstrap) as client:
        client.admin.create_topics([NewTopic(topic_name, THREADS, 1)])
        producer = client.producer(idempotent=True, compression_type="lz4")
        errors = []

        def work(partition):
            try:
                futures = [
                    producer.send(topic_name, b"%d-%d" % (partition, i), b"k", partition=partition)
                    for i in range(PER_THREAD)
                ]
                assert all(isinstance(f, Future) for f in futures)
                offsets = [f.result(30).offset for f in futures]
                assert offsets == list(range(PER_THREAD))
                consumer = client.consumer()
                records = consumer.fetch_range(topic_name, partition, 0, PER_THREAD)
                assert [r.value for r in records] == [
                    b"%d-%d" % (partition, i) for i in range(PER_THREAD)
                ]
                assert client.admin.high_watermarks(topic_name)[partition] == PER_THREAD
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(p,)) for p in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == []
        producer.close()

    read = kafka_python_all(broker.bootstrap, topic_name, THREADS)
    seen = sorted((m.partition, m.offset, m.value) for m in read)
    assert seen == sorted(
        (p, i, b"%d-%d" % (p, i)) for p in range(THREADS) for i in range(PER_THREAD)
    )


def test_blocking_calls_iterators_and_errors(broker, topic_name):
    client = SyncClient(broker.bootstrap)
    try:
        client.admin.create_topics([NewTopic(topic_name, 1, 1)])
        producer = client.producer()
        result = producer.produce_batch(
            topic_name, 0, [SimpleRecord(b"v%d" % i) for i in range(50)]
        )
        assert result.base_offset == 0
        assert isinstance(producer.send_and_wait(topic_name, b"last", partition=0), RecordMetadata)
        metadata = producer.send_many(topic_name, [{"value": b"m", "partition": 0}] * 3)
        assert [m.offset for m in metadata] == [51, 52, 53]

        consumer = client.consumer(max_partition_bytes=200)  # several fetches for the range
        chunks = list(consumer.iter_range(topic_name, 0, 10, 54))
        assert len(chunks) > 1
        assert [r.offset for chunk in chunks for r in chunk] == list(range(10, 54))
        consumer.assign({(topic_name, 0): 50})
        assert [r.value for r in consumer.poll(0)] == [b"last", b"m", b"m", b"m"]
        assert consumer.position(topic_name, 0) == 54

        with pytest.raises(AdminError) as exists:
            client.admin.create_topics([NewTopic(topic_name, 1, 1)])
        assert exists.value.error_code == ErrorCode.topic_already_exists
        with pytest.raises(OffsetOutOfRangeError):
            consumer.fetch_range(topic_name, 0, 100, 101)
        with pytest.raises(KafkaResponseError):
            producer.send_and_wait(topic_name, b"x", partition=9)

        # The async API stays reachable through run().
        async def topic_count():
            return len(await client.cluster.partitions_for(topic_name))

        assert client.run(topic_count()) == 1
    finally:
        client.close()
    client.close()  # idempotent
    with pytest.raises(KafkaClientError, match="closed"):
        client.admin.list_topics()
