"""brokerd.client's AdminClient against a real broker, cross-checked with confluent-kafka's
AdminClient (and the log directory on disk)."""

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import ConfigResource as ConfluentResource
from confluent_kafka.admin import OffsetSpec

from brokerd.client import (
    AdminClient,
    AdminError,
    AlterConfigOp,
    Cluster,
    ConfigResource,
    ConfigSource,
    ErrorCode,
    NewTopic,
    Producer,
)
from brokerd.records.batch import SimpleRecord

BASE_TS = 1_700_000_000_000


def resolved(futures):
    return {key: future.result(15) for key, future in futures.items()}


@pytest.fixture
def confluent(broker):
    return ConfluentAdmin({"bootstrap.servers": broker.bootstrap})


async def test_topics_agree_with_confluent(broker, confluent, topic_name):
    async with Cluster(broker.bootstrap) as cluster:
        admin = AdminClient(cluster)
        created = await admin.create_topics(
            [NewTopic(topic_name, 2, 1, {"retention.ms": "3600000"})]
        )
        assert created[topic_name].num_partitions == 2
        assert created[topic_name].configs["retention.ms"] == "3600000"

        theirs = confluent.list_topics(timeout=10).topics
        ours = await admin.list_topics()
        assert topic_name in ours and set(ours) <= set(theirs)
        described = (await admin.describe_topics([topic_name]))[topic_name]
        assert {
            p: (i.leader, list(i.replicas), list(i.isr)) for p, i in described.partitions.items()
        } == {p: (i.leader, i.replicas, i.isrs) for p, i in theirs[topic_name].partitions.items()}
        assert all(i.leader_epoch >= 0 for i in described.partitions.values())

        # validate_only creates nothing; errors come per topic with their codes.
        dry = f"{topic_name}-dry"
        await admin.create_topics([NewTopic(dry, 3, 1)], validate_only=True)
        assert dry not in confluent.list_topics(timeout=10).topics
        with pytest.raises(AdminError) as caught:
            await admin.create_topics([NewTopic(topic_name, 1, 1), NewTopic(dry, 0, 1)])
        assert caught.value.errors[topic_name].error_code == ErrorCode.topic_already_exists
        assert caught.value.errors[dry].error_code == ErrorCode.invalid_partitions
        with pytest.raises(AdminError) as unknown:
            await admin.describe_topics(["no-such-" + topic_name])
        assert unknown.value.error_code == ErrorCode.unknown_topic_or_partition

        await admin.create_partitions({topic_name: 4}, validate_only=True)
        assert len(confluent.list_topics(topic_name, timeout=10).topics[topic_name].partitions) == 2
        await admin.create_partitions({topic_name: 4})
        assert len(confluent.list_topics(topic_name, timeout=10).topics[topic_name].partitions) == 4
        assert await cluster.partitions_for(topic_name) == [0, 1, 2, 3]
        with pytest.raises(AdminError) as shrink:
            await admin.create_partitions({topic_name: 2})
        assert shrink.value.error_code == ErrorCode.invalid_partitions

        await admin.delete_topics([topic_name])
        assert topic_name not in confluent.list_topics(timeout=10).topics
        with pytest.raises(AdminError) as gone:
            await admin.delete_topics([topic_name])
        assert gone.value.error_code == ErrorCode.unknown_topic_or_partition


def _confluent_configs(confluent, resource):
    entries = resolved(confluent.describe_configs([resource]))[resource]
    return {
        name: (
            e.value,
            int(e.source),
            e.is_default,
            e.is_read_only,
            e.is_sensitive,
            [(s.name, s.value, int(s.source)) for s in e.synonyms.values()],
        )
        for name, e in entries.items()
    }


def _our_configs(entries):
    return {
        name: (
            e.value,
            int(e.source),
            e.is_default,
            e.read_only,
            e.is_sensitive,
            # confluent-kafka keeps synonyms in a dict by name (the last one wins).
            list({s.name: (s.name, s.value, int(s.source)) for s in e.synonyms}.values()),
        )
        for name, e in entries.items()
    }


async def test_configs_agree_with_confluent(broker, confluent, topic_name):
    async with Cluster(broker.bootstrap) as cluster:
        admin = AdminClient(cluster)
        await admin.create_topics([NewTopic(topic_name, 1, 1, {"retention.ms": "3600000"})])
        topic = ConfigResource.topic(topic_name)
        their_topic = ConfluentResource("topic", topic_name)
        ours = await admin.describe_topic_configs(topic_name)
        assert _our_configs(ours) == _confluent_configs(confluent, their_topic)
        assert ours["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG
        # As Kafka: the broker's only retention setting is log.retention.hours' default,
        # which is no synonym of log.retention.ms (ConfigHelper.configSynonyms).
        assert [(s.value, s.source) for s in ours["retention.ms"].synonyms] == [
            ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ]
        assert [(s.name, s.source) for s in ours["segment.bytes"].synonyms] == [
            ("log.segment.bytes", ConfigSource.DEFAULT_CONFIG),
        ]
        assert ours["segment.bytes"].is_default

        broker_entries = await admin.describe_broker_configs(1)
        their_broker = ConfluentResource("broker", "1")
        assert _our_configs(broker_entries) == _confluent_configs(confluent, their_broker)
        assert broker_entries["num.partitions"].value == "3"
        assert broker_entries["num.partitions"].source == ConfigSource.STATIC_BROKER_CONFIG
        only = await admin.describe_configs([topic], keys=["cleanup.policy"])
        assert list(only[topic]) == ["cleanup.policy"]

        change = {topic: [("cleanup.policy", AlterConfigOp.SET, "compact")]}
        await admin.incremental_alter_configs(change, validate_only=True)
        assert (await admin.describe_topic_configs(topic_name))["cleanup.policy"].value == "delete"
        await admin.incremental_alter_configs(change)
        await admin.incremental_alter_configs({topic: [("retention.ms", "DELETE", None)]})
        theirs = _confluent_configs(confluent, their_topic)
        assert theirs["cleanup.policy"][:2] == ("compact", int(ConfigSource.DYNAMIC_TOPIC_CONFIG))
        assert theirs["retention.ms"][:3] == ("604800000", int(ConfigSource.DEFAULT_CONFIG), True)

        # AlterConfigs replaces the whole set of dynamic configs.
        await admin.alter_configs({topic: {"max.message.bytes": "5000"}})
        theirs = _confluent_configs(confluent, their_topic)
        assert theirs["max.message.bytes"][:2] == ("5000", int(ConfigSource.DYNAMIC_TOPIC_CONFIG))
        assert theirs["cleanup.policy"][:2] == ("delete", int(ConfigSource.DEFAULT_CONFIG))

        with pytest.raises(AdminError) as bad:
            await admin.incremental_alter_configs({topic: [("retention.ms", "SET", "soon")]})
        assert bad.value.error_code == ErrorCode.invalid_config
        with pytest.raises(AdminError) as unknown:
            await admin.describe_configs([ConfigResource.topic("no-such-" + topic_name)])
        assert unknown.value.error_code == ErrorCode.unknown_topic_or_partition


async def test_cluster_and_log_dirs(broker, confluent, topic_name):
    async with Cluster(broker.bootstrap) as cluster:
        admin = AdminClient(cluster)
        await admin.create_topics([NewTopic(topic_name, 2, 1)])
        async with Producer(cluster) as producer:
            await producer.produce_batch(topic_name, 1, [SimpleRecord(b"x" * 100)] * 5)
        described = await admin.describe_cluster()
        theirs = confluent.describe_cluster().result(15)
        assert described.cluster_id == theirs.cluster_id == cluster.metadata.cluster_id
        assert described.controller_id == theirs.controller.id == 1
        assert [(b.node_id, b.host, b.port) for b in described.brokers] == [
            (n.id, n.host, n.port) for n in theirs.nodes
        ]

        dirs = await admin.describe_log_dirs()
        assert list(dirs) == [1]
        (log_dir,) = dirs[1]
        assert log_dir.error_code == 0 and log_dir.path == str(broker.dir / "logs")
        for partition in (0, 1):
            on_disk = sum(
                f.stat().st_size
                for f in (broker.dir / "logs" / f"{topic_name}-{partition}").glob("*.log")
            )
            assert log_dir.replicas[(topic_name, partition)].size == on_disk
        assert log_dir.replicas[(topic_name, 1)].size > 500
        only = await admin.describe_log_dirs(topics={topic_name: [1]})
        assert list(only[1][0].replicas) == [(topic_name, 1)]


async def test_offsets_and_delete_records_agree_with_confluent(broker, confluent, topic_name):
    async with Cluster(broker.bootstrap) as cluster:
        admin = AdminClient(cluster)
        await admin.create_topics([NewTopic(topic_name, 2, 1)])
        async with Producer(cluster) as producer:
            records = [SimpleRecord(b"v", timestamp=BASE_TS + i * 10) for i in range(10)]
            records[4] = SimpleRecord(b"peak", timestamp=BASE_TS + 1000)
            await producer.produce_batch(topic_name, 0, records[:6])
            await producer.produce_batch(topic_name, 0, records[6:])

        def theirs(spec):
            futures = confluent.list_offsets({TopicPartition(topic_name, p): spec for p in (0, 1)})
            return {
                (tp.topic, tp.partition): (r.offset, r.timestamp)
                for tp, r in resolved(futures).items()
            }

        for ours_spec, their_spec in (
            ("earliest", OffsetSpec.earliest()),
            ("latest", OffsetSpec.latest()),
            ("max_timestamp", OffsetSpec.max_timestamp()),
            (BASE_TS + 55, OffsetSpec.for_timestamp(BASE_TS + 55)),
        ):
            listed = await admin.list_offsets({(topic_name, p): ours_spec for p in (0, 1)})
            assert {tp: (r.offset, r.timestamp) for tp, r in listed.items()} == theirs(their_spec)
        assert (await admin.high_watermarks(topic_name)) == {0: 10, 1: 0}
        assert (await admin.offsets_for_time(topic_name, BASE_TS + 55))[0] == 4
        maximum = await admin.list_offsets({(topic_name, 0): "max_timestamp"})
        assert (maximum[(topic_name, 0)].offset, maximum[(topic_name, 0)].timestamp) == (
            4,
            BASE_TS + 1000,
        )

        assert await admin.delete_records({(topic_name, 0): 3}) == {(topic_name, 0): 3}
        assert theirs(OffsetSpec.earliest())[(topic_name, 0)][0] == 3
        resolved(confluent.delete_records([TopicPartition(topic_name, 0, 7)]))
        assert (await admin.earliest_offsets(topic_name)) == {0: 7, 1: 0}
        with pytest.raises(AdminError) as beyond:
            await admin.delete_records({(topic_name, 0): 50})
        assert beyond.value.error_code == ErrorCode.offset_out_of_range
