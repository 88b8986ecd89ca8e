"""Every config name Kafka 3.x defines, through a real broker and real admin clients.

brokerd accepts, validates, stores and describes each broker and topic config Kafka
defines, where Kafka accepts it (CreateTopics, AlterConfigs, IncrementalAlterConfigs,
server.properties), with Kafka's checks, errors, sources and flags, even where brokerd gives
the config no effect (DescribeConfigs' documentation then says so).
"""

import time

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from brokerd.protocol.errors import ErrorCode
from tests.harness import BrokerProcess
from tests.integration.wire import WireClient, nested, request

TOPIC, BROKER = ConfigResource.Type.TOPIC, ConfigResource.Type.BROKER

# Topic configs Kafka 3.9 defines that brokerd does not apply, with a value Kafka accepts.
NOT_APPLIED_TOPIC_VALUES = {
    "message.format.version": "2.8",
    "compression.gzip.level": "5",
    "compression.lz4.level": "12",
    "compression.zstd.level": "-7",
    "message.timestamp.before.max.ms": "3600000",
    "message.timestamp.after.max.ms": "60000",
    "local.retention.ms": "-2",
    "local.retention.bytes": "-2",
    "leader.replication.throttled.replicas": "0:1,1:1",
    "follower.replication.throttled.replicas": "*",
    "remote.storage.enable": "false",
    "remote.log.copy.disable": "false",
    "remote.log.delete.on.disable": "false",
}
KAFKA_TOPIC_CONFIG_NAMES = {
    *NOT_APPLIED_TOPIC_VALUES,
    "cleanup.policy",
    "compression.type",
    "delete.retention.ms",
    "file.delete.delay.ms",
    "flush.messages",
    "flush.ms",
    "index.interval.bytes",
    "max.compaction.lag.ms",
    "max.message.bytes",
    "message.downconversion.enable",
    "message.timestamp.difference.max.ms",
    "message.timestamp.type",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "min.insync.replicas",
    "preallocate",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.index.bytes",
    "segment.jitter.ms",
    "segment.ms",
    "unclean.leader.election.enable",
}


def _admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def _describe(admin: AdminClient, kind, name: str) -> dict:
    resource = ConfigResource(kind, name)
    return admin.describe_configs([resource])[resource].result(15)


def _incremental(admin: AdminClient, kind, name: str, *ops, validate_only=False) -> None:
    entries = [ConfigEntry(key, value, incremental_operation=op) for key, op, value in ops]
    resource = ConfigResource(kind, name, incremental_configs=entries)
    admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(15)


def _error_of(call) -> tuple[int, str]:
    with pytest.raises(KafkaException) as caught:
        call()
    error = caught.value.args[0]
    return error.code(), error.str()


def _wire_describe(broker, resource_type: int, name: str, keys=None) -> dict:
    """DescribeConfigs v4 with synonyms and documentation, over the wire (the clients drop
    the documentation, and confluent-kafka cannot name the cluster-wide default entity)."""
    with WireClient(broker.bootstrap) as client:
        response = client.call(
            request(
                32,
                4,
                resources=(
                    nested(
                        32,
                        4,
                        "DescribeConfigsResource",
                        resource_type=resource_type,
                        resource_name=name,
                        configuration_keys=tuple(keys) if keys else None,
                    ),
                ),
                include_synonyms=True,
                include_documentation=True,
            )
        )
    (result,) = response.results
    assert result.error_code == 0, result.error_message
    return {c.name: c for c in result.configs}


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _wire_alter(broker, resource_type: int, name: str, *ops, incremental=True) -> tuple:
    """(error code, message) of IncrementalAlterConfigs v1 (ops: name, op, value) or of the
    legacy AlterConfigs v1 (ops: name, value)."""
    key = 44 if incremental else 33
    configs = tuple(
        nested(key, 1, "AlterableConfig", name=op[0], config_operation=op[1], value=op[2])
        if incremental
        else nested(key, 1, "AlterableConfig", name=op[0], value=op[1])
        for op in ops
    )
    resource = nested(
        key,
        1,
        "AlterConfigsResource",
        resource_type=resource_type,
        resource_name=name,
        configs=configs,
    )
    with WireClient(broker.bootstrap) as client:
        response = client.call(request(key, 1, resources=(resource,), validate_only=False))
    (result,) = response.responses
    return result.error_code, result.error_message


# Topics --------------------------------------------------------------------------------------


def test_create_topics_takes_every_kafka_topic_config_and_describes_it_back(broker, topic_name):
    admin = _admin(broker)
    created = admin.create_topics([NewTopic(topic_name, 1, 1, config=NOT_APPLIED_TOPIC_VALUES)])
    created[topic_name].result(15)
    configs = _describe(admin, TOPIC, topic_name)
    assert KAFKA_TOPIC_CONFIG_NAMES <= set(configs)
    for name, value in NOT_APPLIED_TOPIC_VALUES.items():
        assert configs[name].value == value, name
        assert configs[name].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value, name
        assert not configs[name].is_read_only and not configs[name].is_sensitive
    # Kafka's defaults where nothing is set.
    assert configs["compression.type"].value == "producer"
    docs = _wire_describe(broker, 2, topic_name, ["message.format.version", "retention.ms"])
    assert "does not apply it" in docs["message.format.version"].documentation
    assert "does not apply it" not in docs["retention.ms"].documentation
    assert docs["message.format.version"].config_type == 2  # STRING


def test_alter_configs_and_incremental_take_kafka_topic_configs(broker, topic_name):
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(15)
    _incremental(
        admin,
        TOPIC,
        topic_name,
        ("message.format.version", AlterConfigOpType.SET, "3.0-IV1"),
        ("compression.zstd.level", AlterConfigOpType.SET, "19"),
    )
    configs = _describe(admin, TOPIC, topic_name)
    assert configs["message.format.version"].value == "3.0-IV1"
    assert configs["compression.zstd.level"].value == "19"
    # Legacy AlterConfigs replaces the topic's whole set.
    resource = ConfigResource(TOPIC, topic_name, set_config={"message.format.version": "0.10.2"})
    admin.alter_configs([resource])[resource].result(15)
    configs = _describe(admin, TOPIC, topic_name)
    assert configs["message.format.version"].value == "0.10.2"
    assert configs["compression.zstd.level"].value == "3"
    assert configs["compression.zstd.level"].source == ConfigSource.DEFAULT_CONFIG.value


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("message.format.version", "2.8.1", "banana"),
        ("compression.gzip.level", "-1", "0"),
        ("compression.zstd.level", "22", "23"),
        ("compression.lz4.level", "17", "18"),
        ("leader.replication.throttled.replicas", "*", "0-1"),
        ("local.retention.ms", "-2", "-3"),
        ("message.timestamp.before.max.ms", "0", "-1"),
        ("remote.log.copy.disable", "false", "true"),  # ZooKeeper mode refuses true
        ("remote.storage.enable", "false", "true"),  # tiered storage is off on the broker
    ],
)
def test_kafka_topic_configs_are_validated_as_kafka_does(broker, topic_name, name, good, bad):
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(15)
    _incremental(admin, TOPIC, topic_name, (name, AlterConfigOpType.SET, good))
    assert _describe(admin, TOPIC, topic_name)[name].value == good
    code, _ = _error_of(
        lambda: _incremental(admin, TOPIC, topic_name, (name, AlterConfigOpType.SET, bad))
    )
    assert code == ErrorCode.invalid_config
    assert _describe(admin, TOPIC, topic_name)[name].value == good
    refused = admin.create_topics([NewTopic(topic_name + "-bad", 1, 1, config={name: bad})])
    with pytest.raises(KafkaException) as caught:
        refused[topic_name + "-bad"].result(15)
    assert caught.value.args[0].code() == ErrorCode.invalid_config


def test_conflicting_compaction_lags_and_unknown_names_are_refused(broker, topic_name):
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(15)
    code, message = _error_of(
        lambda: _incremental(
            admin,
            TOPIC,
            topic_name,
            ("min.compaction.lag.ms", AlterConfigOpType.SET, "10000"),
            ("max.compaction.lag.ms", AlterConfigOpType.SET, "5000"),
        )
    )
    assert code == ErrorCode.invalid_config and "conflict" in message
    code, message = _error_of(
        lambda: _incremental(
            admin, TOPIC, topic_name, ("retention.hours", AlterConfigOpType.SET, "1")
        )
    )
    assert code == ErrorCode.invalid_config
    assert "Unknown topic config name: retention.hours" in message


# IncrementalAlterConfigs' list operations (issue 18) -------------------------------------------


def test_append_and_subtract_start_from_the_default(broker, topic_name):
    admin = _admin(broker)
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(15)
    _incremental(admin, TOPIC, topic_name, ("cleanup.policy", AlterConfigOpType.APPEND, "compact"))
    assert _describe(admin, TOPIC, topic_name)["cleanup.policy"].value == "delete,compact"
    _incremental(admin, TOPIC, topic_name, ("cleanup.policy", AlterConfigOpType.SUBTRACT, "delete"))
    policy = _describe(admin, TOPIC, topic_name)["cleanup.policy"]
    assert (policy.value, policy.source) == ("compact", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    _incremental(
        admin,
        TOPIC,
        topic_name,
        ("leader.replication.throttled.replicas", AlterConfigOpType.APPEND, "0:1,0:2"),
    )
    throttled = _describe(admin, TOPIC, topic_name)["leader.replication.throttled.replicas"]
    assert throttled.value == "0:1,0:2"
    code, message = _error_of(
        lambda: _incremental(
            admin, TOPIC, topic_name, ("retention.ms", AlterConfigOpType.APPEND, "1")
        )
    )
    assert code == ErrorCode.invalid_config
    assert "append is not allowed for config key: retention.ms" in message


# Brokers ------------------------------------------------------------------------------------


def _synonyms(entry) -> list[tuple[str, str | None, int]]:
    """A wire DescribeConfigs entry's synonyms (confluent-kafka keeps one per name)."""
    return [(s.name, s.value, s.source) for s in entry.synonyms]


def test_dynamic_broker_configs_as_kafka_takes_them(make_broker):
    broker = make_broker().start()
    admin = _admin(broker)
    _incremental(
        admin,
        BROKER,
        "1",
        ("sasl.kerberos.min.time.before.relogin", AlterConfigOpType.SET, "120000"),
        ("listener.name.plaintext.ssl.keystore.type", AlterConfigOpType.SET, "PKCS12"),
        ("my.plugin.setting", AlterConfigOpType.SET, "anything"),  # custom: Kafka allows it
    )
    assert _wire_alter(
        broker,
        4,
        "",
        ("log.cleaner.threads", SET, "2"),
        ("leader.replication.throttled.rate", SET, "1048576"),
        ("log.cleanup.policy", APPEND, "compact"),
    ) == (0, None)
    configs = _describe(admin, BROKER, "1")
    relogin = configs["sasl.kerberos.min.time.before.relogin"]
    assert (relogin.value, relogin.source) == ("120000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    assert not relogin.is_read_only
    wire = _wire_describe(broker, 4, "1", ["sasl.kerberos.min.time.before.relogin"])
    assert _synonyms(wire["sasl.kerberos.min.time.before.relogin"]) == [
        (
            "sasl.kerberos.min.time.before.relogin",
            "120000",
            ConfigSource.DYNAMIC_BROKER_CONFIG.value,
        ),
        ("sasl.kerberos.min.time.before.relogin", "60000", ConfigSource.DEFAULT_CONFIG.value),
    ]
    threads = configs["log.cleaner.threads"]
    assert (threads.value, threads.source) == (
        "2",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
    )
    assert configs["log.cleanup.policy"].value == "delete,compact"
    custom = configs["my.plugin.setting"]
    assert custom.is_sensitive and custom.value is None  # its type is unknown
    assert configs["listener.name.plaintext.ssl.keystore.type"].value == "PKCS12"
    # The cluster-wide default entity lists only what is set there.
    defaults = _wire_describe(broker, 4, "")
    assert set(defaults) == {
        "log.cleaner.threads",
        "leader.replication.throttled.rate",
        "log.cleanup.policy",
    }
    assert {e.config_source for e in defaults.values()} == {
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    }

    broker.terminate()
    broker.start()
    configs = _describe(_admin(broker), BROKER, "1")
    assert configs["sasl.kerberos.min.time.before.relogin"].value == "120000"
    assert configs["log.cleaner.threads"].value == "2"
    assert configs["leader.replication.throttled.rate"].value == "1048576"


@pytest.mark.parametrize(
    ("entity", "name", "value", "message"),
    [
        ("1", "broker.id", "7", "Cannot update these configs dynamically: Set(broker.id)"),
        ("1", "num.partitions", "4", "Cannot update these configs dynamically"),
        ("1", "ssl.keystore.location", "/k", "only per-listener using the listener prefix"),
        ("", "sasl.kerberos.service.name", "kafka", "broker id must be specified"),
        ("1", "num.io.threads", "100", "not be greater than double the current value 8"),
        ("1", "num.io.threads", "many", "num.io.threads"),
        ("2", "log.cleaner.threads", "2", "Unexpected broker id, expected 1, but received 2"),
    ],
)
def test_broker_config_changes_kafka_refuses(make_broker, entity, name, value, message):
    broker = make_broker().start()
    code, text = _wire_alter(broker, 4, entity, (name, SET, value))
    assert code == ErrorCode.invalid_request
    assert message in text
    # Kafka answers the same to the legacy AlterConfigs.
    code, text = _wire_alter(broker, 4, entity, (name, value), incremental=False)
    assert code == ErrorCode.invalid_request and message in text


def test_dynamic_passwords_need_kafkas_password_encoder(make_broker):
    broker = make_broker().start()
    admin = _admin(broker)
    jaas = ("listener.name.plaintext.plain.sasl.jaas.config", AlterConfigOpType.SET, "x")
    _incremental(admin, BROKER, "1", jaas, validate_only=True)
    code, text = _error_of(lambda: _incremental(admin, BROKER, "1", jaas))
    assert code == ErrorCode.invalid_config
    assert "Password encoder secret not configured" in text


def test_server_properties_take_every_kafka_broker_config(make_broker):
    broker = make_broker(log_retention_hours="2")
    broker.props.update(
        {
            "sasl.kerberos.min.time.before.relogin": "90000",
            "num.io.threads": "16",
            "log.message.format.version": "2.8",
            "listener.name.plaintext.ssl.keystore.password": "secret",
            "ssl.key.password": "also-secret",
        }
    )
    broker.start()
    configs = _describe(_admin(broker), BROKER, "1")
    for name, value in [
        ("sasl.kerberos.min.time.before.relogin", "90000"),
        ("num.io.threads", "16"),
        ("log.message.format.version", "2.8"),
    ]:
        assert configs[name].value == value, name
        assert configs[name].source == ConfigSource.STATIC_BROKER_CONFIG.value, name
    for name in ("listener.name.plaintext.ssl.keystore.password", "ssl.key.password"):
        assert configs[name].is_sensitive and configs[name].value is None, name
    # Read-only as Kafka reports it: advertised.listeners is updatable per broker.
    assert not configs["advertised.listeners"].is_read_only
    assert not configs["log.retention.ms"].is_read_only
    assert configs["log.retention.hours"].is_read_only
    assert configs["broker.id"].is_read_only
    assert configs["log.retention.ms"].value is None
    wire = _wire_describe(broker, 4, "1", ["log.retention.hours"])
    assert _synonyms(wire["log.retention.hours"]) == [
        ("log.retention.hours", "2", ConfigSource.STATIC_BROKER_CONFIG.value),
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG.value),
    ]
    applied_security = ["ssl.client.auth", "sasl.enabled.mechanisms", "connections.max.reauth.ms"]
    names = ["num.io.threads", "listeners", "num.partitions", *applied_security]
    docs = _wire_describe(broker, 4, "1", names)
    assert "does not apply it" in docs["num.io.threads"].documentation
    for name in applied_security:  # TLS and SASL listeners use them
        assert "does not apply it" not in docs[name].documentation, name
    assert "next starts" in docs["listeners"].documentation
    assert "brokerd" not in docs["num.partitions"].documentation


def test_server_properties_values_are_checked_as_kafka_does(make_broker):
    for name, bad in [("num.io.threads", "0"), ("log.message.format.version", "banana")]:
        broker = make_broker()
        broker.props[name] = bad
        with pytest.raises(RuntimeError, match=name.replace(".", r"\.")):
            broker.start()


def test_a_cluster_wide_default_reaches_every_broker(zookeeper, tmp_path_factory):
    """Set through one broker, the <default> entity is applied and described by the others
    (each watches it in ZooKeeper, as Kafka's brokers follow config-change notifications)."""
    chroot = f"{zookeeper.connect}/configs-{tmp_path_factory.mktemp('c').name}"
    brokers = [
        BrokerProcess(tmp_path_factory.mktemp(f"b{i}"), chroot, broker_id=i, num_partitions="1")
        for i in (1, 2)
    ]
    try:
        for broker in brokers:
            broker.start()
        first, second = brokers
        assert _wire_alter(first, 4, "", ("log.retention.ms", SET, "3600000")) == (0, None)
        assert _wire_alter(first, 4, "1", ("log.segment.bytes", SET, "1048576")) == (0, None)
        deadline = time.monotonic() + 30
        while True:
            retention = _wire_describe(second, 4, "2", ["log.retention.ms"])["log.retention.ms"]
            if retention.value == "3600000" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert retention.value == "3600000"
        assert retention.config_source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
        # Topics on the other broker take it as their retention.ms default.
        admin = _admin(second)
        topic = "cluster-default-" + tmp_path_factory.mktemp("t").name
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
        topic_retention = _wire_describe(second, 2, topic, ["retention.ms"])["retention.ms"]
        assert topic_retention.value == "3600000"
        assert topic_retention.config_source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
        # Broker 1's own config stays its own.
        segment = _wire_describe(second, 4, "2", ["log.segment.bytes"])["log.segment.bytes"]
        assert segment.config_source == ConfigSource.DEFAULT_CONFIG.value
    finally:
        for broker in brokers:
            broker.kill()


@pytest.mark.parametrize("version", [1, 2, 3, 4])  # what ApiVersions advertises
def test_every_describe_configs_version_lists_kafkas_names(broker, topic_name, version):
    admin = _admin(broker)
    config = {"message.format.version": "2.8"}
    admin.create_topics([NewTopic(topic_name, 1, 1, config=config)])[topic_name].result(15)
    resource = nested(
        32,
        version,
        "DescribeConfigsResource",
        resource_type=2,
        resource_name=topic_name,
        configuration_keys=None,
    )
    with WireClient(broker.bootstrap) as client:
        response = client.call(request(32, version, resources=(resource,), include_synonyms=True))
    (result,) = response.results
    assert result.error_code == 0
    configs = {c.name: c for c in result.configs}
    assert KAFKA_TOPIC_CONFIG_NAMES <= set(configs)
    assert configs["message.format.version"].value == "2.8"
    assert configs["message.format.version"].config_source == 1  # DYNAMIC_TOPIC_CONFIG
    assert configs["compression.zstd.level"].config_source == 5  # DEFAULT_CONFIG
