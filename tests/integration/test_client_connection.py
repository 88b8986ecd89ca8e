"""brokerd.client's connections and cluster routing against real brokers: version
negotiation, pipelining, timeouts, reconnects, bootstrap, metadata-refresh retries.

Leader changes (NOT_LEADER_OR_FOLLOWER after a leader moves) cannot be exercised until
brokers replicate: every test cluster here has one broker, so that retry path is covered
only through UNKNOWN_TOPIC_OR_PARTITION and partitions the cached metadata lacks.
"""

import asyncio
import datetime

import pytest
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import NewPartitions
from confluent_kafka.admin import NewTopic as ConfluentNewTopic

from brokerd.client import (
    AdminClient,
    BrokerConnection,
    Cluster,
    Consumer,
    ErrorCode,
    KafkaConnectionError,
    KafkaResponseError,
    KafkaTimeoutError,
    NewTopic,
    Producer,
    UnsupportedVersionError,
)
from brokerd.client.requests import CLIENT_VERSIONS, Nested, negotiate
from brokerd.protocol.versions import SUPPORTED, VersionRange
from brokerd.records.batch import SimpleRecord
from tests.harness import free_port


async def test_versions_are_the_highest_both_sides_speak(broker):
    connection = BrokerConnection("127.0.0.1", broker.port)
    await connection.connect()
    try:
        assert connection.api_versions == SUPPORTED  # what the broker advertises
        for api_key, ours in CLIENT_VERSIONS.items():
            theirs = SUPPORTED.get(api_key)
            if theirs is None:
                with pytest.raises(UnsupportedVersionError, match="does not advertise"):
                    connection.version_for(api_key)
                continue
            assert connection.version_for(api_key) == min(ours.max_version, theirs.max_version)
    finally:
        await connection.close()
    assert negotiate(3, VersionRange(0, 4)) == 4
    with pytest.raises(UnsupportedVersionError, match="the broker speaks v0-0"):
        negotiate(3, VersionRange(0, 0))  # Metadata v0 lies below what the client implements


async def test_pipelined_requests_are_matched_by_correlation_id(broker, topic_name):
    async with Cluster(broker.bootstrap) as cluster:
        await AdminClient(cluster).create_topics([NewTopic(topic_name, 1, 1)])
        async with Producer(cluster) as producer:
            records = [SimpleRecord(b"%d" % i) for i in range(100)]
            for start in range(0, 100, 1):
                await producer.send(topic_name, records[start].value, partition=0)
            await producer.flush()
        connection = await cluster.connection(1)

        async def fetch_at(offset):
            part = Nested(
                "FetchPartition", partition=0, fetch_offset=offset, partition_max_bytes=64
            )
            values = {
                "max_wait": datetime.timedelta(0),
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "topics": [Nested("FetchTopic", topic=topic_name, partitions=[part])],
                "forgotten_topics_data": [],
            }
            response = await connection.call(1, values)
            return response.responses[0].partitions[0].records

        answers = await asyncio.gather(*(fetch_at(offset) for offset in range(100)))
        consumer = Consumer(cluster)
        for offset, data in enumerate(answers):
            decoded = [r.value for r in consumer_decode(consumer, topic_name, data, offset)]
            assert decoded[0] == b"%d" % offset


def consumer_decode(consumer, topic, data, offset):
    from brokerd.client.consumer import decode_partition

    return decode_partition(topic, 0, data, offset, 1 << 62)[0]


async def test_timeout_drops_the_late_answer_and_keeps_the_connection(broker, topic_name):
    async with Cluster(broker.bootstrap) as cluster:
        await AdminClient(cluster).create_topics([NewTopic(topic_name, 1, 1)])
        connection = await cluster.connection(1)
        part = Nested("FetchPartition", partition=0, fetch_offset=0, partition_max_bytes=1024)
        long_poll = {
            "max_wait": datetime.timedelta(seconds=1.5),
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "topics": [Nested("FetchTopic", topic=topic_name, partitions=[part])],
            "forgotten_topics_data": [],
        }
        with pytest.raises(KafkaTimeoutError, match="Fetch"):
            await connection.call(1, long_poll, timeout=0.2)
        await asyncio.sleep(1.6)  # the late answer arrives and is dropped
        metadata = await connection.call(
            3, {"topics": None, "include_topic_authorized_operations": False}
        )
        assert topic_name in {t.name for t in metadata.topics}
        assert connection.connected


async def test_errors_carry_the_kafka_code_and_name(broker):
    async with Cluster(broker.bootstrap, retries=0) as cluster:
        with pytest.raises(KafkaResponseError) as caught:
            await Consumer(cluster).fetch_range("no-such-topic-at-all", 0, 0, 1)
        error = caught.value
        assert error.error_code == ErrorCode.unknown_topic_or_partition
        assert error.name == "UNKNOWN_TOPIC_OR_PARTITION"
        assert error.retriable and error.needs_metadata_refresh
        assert "no-such-topic-at-all-0" in str(error)


async def test_reconnects_with_backoff_after_the_broker_restarts(make_broker, topic_name):
    broker = make_broker(num_partitions="1").start()
    async with Cluster(broker.bootstrap, retries=0) as cluster:
        await AdminClient(cluster).create_topics([NewTopic(topic_name, 1, 1)])
        async with Producer(cluster, retries=0) as producer:
            await producer.send_and_wait(topic_name, b"before", partition=0)
            connection = await cluster.connection(1)
            broker.kill()
            with pytest.raises(KafkaConnectionError):
                await producer.send_and_wait(topic_name, b"lost", partition=0)
            failures = connection._failures
            for more in (1, 2, 3):
                with pytest.raises(KafkaConnectionError, match="cannot connect"):
                    await connection.connect()
                assert connection._failures == failures + more  # each doubles the backoff
            broker.start()
            async with Producer(cluster, retries=10, retry_backoff=0.2) as again:
                metadata = await again.send_and_wait(topic_name, b"after", partition=0)
            assert metadata.offset == 1
            assert connection._failures == 0
        records = await Consumer(cluster).fetch_range(topic_name, 0, 0, 2)
        assert [r.value for r in records] == [b"before", b"after"]


async def test_bootstrap_skips_dead_addresses(broker):
    dead = f"127.0.0.1:{free_port()}"
    async with Cluster(f"{dead},{broker.bootstrap}") as cluster:
        assert list(cluster.metadata.brokers) == [1]
        assert cluster.metadata.controller_id == 1
    with pytest.raises(KafkaConnectionError, match="no broker reachable"):
        await Cluster([dead], connect_timeout=2).start()
    with pytest.raises(ValueError, match="host:port"):
        Cluster("localhost")


async def test_stale_metadata_is_refreshed_and_the_request_retried(broker, topic_name):
    confluent = ConfluentAdmin({"bootstrap.servers": broker.bootstrap})
    async with Cluster(broker.bootstrap, retries=20, retry_backoff=0.05) as cluster:
        admin = AdminClient(cluster)
        await admin.create_topics([NewTopic(topic_name, 1, 1)])
        assert await cluster.partitions_for(topic_name) == [0]
        # Another client adds a partition: our cache does not know it yet.
        confluent.create_partitions([NewPartitions(topic_name, 2)])[topic_name].result(15)
        async with Producer(cluster) as producer:
            assert (
                await producer.produce_batch(topic_name, 1, [SimpleRecord(b"x")])
            ).base_offset == 0

        # Another client deletes and recreates the topic while we still route to it: the
        # broker answers UNKNOWN_TOPIC_OR_PARTITION, we refresh and retry until it is back.
        confluent.delete_topics([topic_name])[topic_name].result(15)

        async def recreate():
            while True:
                future = confluent.create_topics([ConfluentNewTopic(topic_name, 1, 1)])
                try:
                    future[topic_name].result(15)
                    return
                except Exception:
                    await asyncio.sleep(0.05)

        listed, _ = await asyncio.gather(
            admin.list_offsets({(topic_name, 0): "latest"}), _later(recreate)
        )
        assert listed[(topic_name, 0)].offset == 0


async def _later(make):
    await asyncio.sleep(0.3)
    await make()
