"""Topic administration through kafka-python's, aiokafka's and confluent-kafka's admin
clients: create, configure (AlterConfigs and IncrementalAlterConfigs), describe, add
partitions, delete records, delete (test_admin_clients.py covers confluent's basics)."""

import pytest
from aiokafka import TopicPartition as AioTopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource as AioConfigResource
from aiokafka.admin.config_resource import ConfigResourceType as AioConfigResourceType
from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, OffsetSpec
from confluent_kafka.admin import NewPartitions as CkNewPartitions
from confluent_kafka.admin import NewTopic as CkNewTopic
from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType
from kafka.errors import InvalidPartitionsError, OffsetOutOfRangeError

DEFAULT_SOURCE = "DEFAULT_CONFIG"
DYNAMIC_SOURCE = "DYNAMIC_TOPIC_CONFIG"


def _produce(broker, topic, count, partition=0):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(count):
        producer.send(topic, b"v%d" % i, partition=partition)
    producer.flush()
    producer.close()


def _kp_topic_configs(admin, topic):
    described = admin.describe_configs(
        [KpConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"
    )
    return described["topic"][topic]


def test_kafka_python_admin_full_cycle(broker, topic_name):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        created = admin.create_topics(
            {
                topic_name: {
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "configs": {"retention.ms": "1000000"},
                }
            }
        )
        assert created["topics"][0]["error_code"] == 0
        configs = _kp_topic_configs(admin, topic_name)
        assert configs["retention.ms"]["value"] == "1000000"
        assert configs["retention.ms"]["config_source"] == DYNAMIC_SOURCE
        assert configs["segment.ms"]["config_source"] == DEFAULT_SOURCE

        resource = KpConfigResource(ConfigResourceType.TOPIC, topic_name)
        # IncrementalAlterConfigs (the client's default on a broker that has it).
        resource.configs = {"segment.ms": "2000000"}
        assert admin.alter_configs([resource]) == {"topic": {topic_name: "OK"}}
        # AlterConfigs (legacy): the client re-sends the other dynamic keys itself.
        resource.configs = {"segment.ms": "3000000"}
        assert admin.alter_configs([resource], incremental=False) == {"topic": {topic_name: "OK"}}
        modified = admin.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, topic_name)])
        modified = modified["topic"][topic_name]
        assert {k: v["value"] for k, v in modified.items()} == {
            "retention.ms": "1000000",
            "segment.ms": "3000000",
        }
        resource.configs = {"segment.ms": "-5"}
        refused = admin.alter_configs([resource])["topic"][topic_name]
        assert "InvalidConfigurationError: segment.ms" in refused

        admin.create_partitions({topic_name: 3})
        (described,) = admin.describe_topics([topic_name])
        assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1, 2]
        with pytest.raises(InvalidPartitionsError):
            admin.create_partitions({topic_name: 2})

        _produce(broker, topic_name, 10)
        deleted = admin.delete_records({TopicPartition(topic_name, 0): 4})
        assert deleted[TopicPartition(topic_name, 0)]["low_watermark"] == 4
        earliest = admin.list_partition_offsets({TopicPartition(topic_name, 0): -2})
        assert earliest[TopicPartition(topic_name, 0)].offset == 4
        with pytest.raises(OffsetOutOfRangeError):
            admin.delete_records({TopicPartition(topic_name, 0): 11})

        admin.delete_topics([topic_name])
        assert topic_name not in admin.list_topics()
    finally:
        admin.close()


async def test_aiokafka_admin_full_cycle(broker, topic_name):
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await admin.start()
    try:
        created = await admin.create_topics(
            [NewTopic(topic_name, 1, 1, topic_configs={"retention.ms": "1000000"})]
        )
        assert [e[1] for e in created.topic_errors] == [0]
        cluster = await admin.describe_cluster()
        assert [b["node_id"] for b in cluster["brokers"]] == [1]
        assert cluster["controller_id"] == 1

        resource = AioConfigResource(AioConfigResourceType.TOPIC, topic_name)
        (before,) = await admin.describe_configs([resource])
        entries = {e[0]: e for e in before.resources[0][4]}
        assert entries["retention.ms"][1] == "1000000"
        assert entries["retention.ms"][3] == ConfigSource.DYNAMIC_TOPIC_CONFIG.value

        # AlterConfigs replaces the whole set: retention.ms, left out, reverts to default.
        (altered,) = await admin.alter_configs(
            [AioConfigResource(AioConfigResourceType.TOPIC, topic_name, {"segment.ms": "2000000"})]
        )
        assert altered.resources[0][0] == 0
        (after,) = await admin.describe_configs([resource])
        entries = {e[0]: e for e in after.resources[0][4]}
        assert entries["segment.ms"][1:4:2] == ("2000000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
        assert entries["retention.ms"][1:4:2] == ("604800000", ConfigSource.DEFAULT_CONFIG.value)

        await admin.create_partitions({topic_name: NewPartitions(3)})
        (described,) = await admin.describe_topics([topic_name])
        assert sorted(p["partition"] for p in described["partitions"]) == [0, 1, 2]

        _produce(broker, topic_name, 10, partition=2)
        low = await admin.delete_records({AioTopicPartition(topic_name, 2): RecordsToDelete(6)})
        assert low == {AioTopicPartition(topic_name, 2): 6}

        deleted = await admin.delete_topics([topic_name])
        assert [e[1] for e in deleted.topic_error_codes] == [0]
        assert topic_name not in await admin.list_topics()
    finally:
        await admin.close()


def test_confluent_alter_configs_delete_records_and_offsets(broker, topic_name):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([CkNewTopic(topic_name, 2, 1, config={"retention.ms": "1000000"})])[
        topic_name
    ].result(15)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name, set_config={"segment.ms": "7"})
    # Legacy AlterConfigs on purpose (deprecated in the client, still sent by old tools).
    with pytest.warns(DeprecationWarning):
        admin.alter_configs([resource])[resource].result(15)
    configs = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic_name)])
    (configs,) = [f.result(15) for f in configs.values()]
    assert configs["segment.ms"].value == "7"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    _produce(broker, topic_name, 10, partition=1)
    partition = CkTopicPartition(topic_name, 1, 3)
    (result,) = admin.delete_records([partition]).values()
    assert result.result(15).low_watermark == 3
    offsets = admin.list_offsets(
        {
            CkTopicPartition(topic_name, 1): OffsetSpec.earliest(),
        }
    )
    assert [f.result(15).offset for f in offsets.values()] == [3]
    latest = admin.list_offsets({CkTopicPartition(topic_name, 1): OffsetSpec.latest()})
    assert [f.result(15).offset for f in latest.values()] == [10]

    with pytest.raises(KafkaException, match="INVALID_PARTITIONS"):
        admin.create_partitions([CkNewPartitions(topic_name, 1)])[topic_name].result(15)
    admin.create_partitions([CkNewPartitions(topic_name, 5)], validate_only=True)[
        topic_name
    ].result(15)
    metadata = admin.list_topics(topic_name, timeout=10)
    assert len(metadata.topics[topic_name].partitions) == 2  # validate-only changed nothing
    admin.delete_topics([topic_name])[topic_name].result(15)
