"""Topic and config administration through confluent-kafka's and kafka-python's admin clients."""

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)
from kafka import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic


@pytest.fixture
def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _wait(futures):
    return {key: future.result(15) for key, future in futures.items()}


def test_create_describe_alter_delete_topic(admin, topic_name):
    _wait(admin.create_topics([NewTopic(topic_name, 2, 1, config={"retention.ms": "3600000"})]))
    metadata = admin.list_topics(topic_name, timeout=10)
    assert sorted(metadata.topics[topic_name].partitions) == [0, 1]

    resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name)
    configs = _wait(admin.describe_configs([resource]))[resource]
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["segment.bytes"].value == "1073741824"
    assert not configs["cleanup.policy"].is_read_only

    change = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic_name,
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    _wait(admin.incremental_alter_configs([change]))
    configs = _wait(admin.describe_configs([resource]))[resource]
    assert configs["cleanup.policy"].value == "compact"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    _wait(admin.create_partitions([NewPartitions(topic_name, 4)]))
    assert sorted(admin.list_topics(topic_name, timeout=10).topics[topic_name].partitions) == [
        0,
        1,
        2,
        3,
    ]
    _wait(admin.delete_topics([topic_name]))
    assert topic_name not in admin.list_topics(timeout=10).topics


def test_create_topic_errors(admin, topic_name):
    futures = admin.create_topics(
        [
            NewTopic(topic_name + "-bad-config", 1, 1, config={"cleanup.policy": "shred"}),
            NewTopic(topic_name + "-bad-rf", 1, 3),
            NewTopic("bad/name", 1, 1),
        ]
    )
    codes = {}
    for name, future in futures.items():
        with pytest.raises(KafkaException) as caught:
            future.result(15)
        codes[name] = caught.value.args[0].name()
    assert codes == {
        topic_name + "-bad-config": "INVALID_CONFIG",
        topic_name + "-bad-rf": "INVALID_REPLICATION_FACTOR",
        "bad/name": "TOPIC_EXCEPTION",  # librdkafka's name for INVALID_TOPIC_EXCEPTION (17)
    }
    _wait(admin.create_topics([NewTopic(topic_name, 1, 1)]))
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        _wait(admin.create_topics([NewTopic(topic_name, 1, 1)]))


def test_validate_only_creates_nothing(admin, topic_name):
    _wait(admin.create_topics([NewTopic(topic_name, 3, 1)], validate_only=True))
    metadata = admin.list_topics(timeout=10)
    assert topic_name not in metadata.topics


def test_broker_configs_with_synonyms(admin, broker):
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    configs = _wait(admin.describe_configs([resource]))[resource]
    assert configs["num.partitions"].value == "3"
    assert configs["num.partitions"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["log.segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["broker.id"].is_read_only
    assert configs["zookeeper.connect"].value.startswith("127.0.0.1:")


def test_kafka_python_admin_create_and_describe(broker, topic_name):
    from kafka.admin import ConfigResource as KpConfigResource
    from kafka.admin import ConfigResourceType

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics(
            [KpNewTopic(topic_name, 2, 1, topic_configs={"max.message.bytes": "2000"})]
        )
        described = admin.describe_configs(
            [KpConfigResource(ConfigResourceType.TOPIC, topic_name)], include_synonyms=True
        )
        assert described
        admin.delete_topics([topic_name])
    finally:
        admin.close()
