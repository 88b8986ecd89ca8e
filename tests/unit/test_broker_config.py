import pytest

from brokerd.config import (
    SOURCE_DEFAULT,
    SOURCE_STATIC_BROKER,
    BrokerConfig,
    ConfigError,
    parse_connection_overrides,
    parse_properties,
    resolve_topic_config,
)

BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181/kafka", "log.dirs": "/tmp/x"}


def test_properties_file_syntax():
    text = "# comment\n! also\na=1\nb : two\nc three\nd=x\\\n   y\nempty=\n"
    assert parse_properties(text) == {"a": "1", "b": "two", "c": "three", "d": "xy", "empty": ""}


def test_defaults_and_zookeeper_chroot():
    config = BrokerConfig(BASE)
    assert config.broker_id == 1
    assert config.zookeeper.hosts == "127.0.0.1:2181"
    assert config.zookeeper.chroot == "/kafka"
    assert config.get("num.partitions") == 1
    assert config.get("socket.request.max.bytes") == 104857600
    assert config.get("auto.create.topics.enable") is True
    assert config.listeners[0].port == 9092
    assert config.advertised_listeners == config.listeners


def test_log_synonyms_feed_topic_defaults_with_their_source():
    config = BrokerConfig({**BASE, "log.retention.hours": "2", "log.segment.bytes": "1024"})
    log_config = config.log_config()
    assert log_config.retention_ms == 2 * 3_600_000
    assert log_config.segment_bytes == 1024
    assert resolve_topic_config("segment.bytes", {}, config.explicit)[1] == SOURCE_STATIC_BROKER
    assert resolve_topic_config("flush.ms", {}, config.explicit)[1] == SOURCE_DEFAULT


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"num.partitions": "0"}, "num.partitions"),
        ({"broker.id": "one"}, "broker.id"),
        ({"zookeeper.connect": ""}, "zookeeper.connect"),
        ({"listeners": "PLAINTEXT://host"}, "listeners"),
        ({"log.cleanup.policy": "archive"}, "log.cleanup.policy"),
        ({"auto.create.topics.enable": "yes"}, "auto.create.topics.enable"),
        ({"message.max.bytes": "200", "socket.request.max.bytes": "100"}, "message.max.bytes"),
        ({"failure.probes": "group_coordinator.load"}, "failure.probes"),
        ({"failure.probes": "group_coordinator.load=crash"}, "failure.probes"),
        ({"failure.probes": "log.append=suspend"}, "failure.probes"),
    ],
)
def test_invalid_config_is_refused_naming_the_key(props, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        BrokerConfig({**BASE, **props})


def test_dynamic_updates_only_for_dynamic_keys():
    config = BrokerConfig(BASE)
    assert config.validate_dynamic({"log.retention.ms": "1000"}) == {"log.retention.ms": 1000}
    with pytest.raises(ConfigError, match="broker.id"):
        config.validate_dynamic({"broker.id": "2"})


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"queued.max.request.bytes": "1000"}, "queued.max.request.bytes"),
        ({"max.connections.per.ip": "0"}, "max.connections.per.ip"),
        ({"max.connections.per.ip.overrides": "no-count"}, "max.connections.per.ip.overrides"),
        ({"max.connections.per.ip.overrides": "bad host:3"}, "max.connections.per.ip.overrides"),
        ({"max.connections.per.ip.overrides": "h:x"}, "max.connections.per.ip.overrides"),
        ({"max.connections": "-1"}, "max.connections"),
    ],
)
def test_connection_limits_are_validated_as_kafka_does(props, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        BrokerConfig({**BASE, **props})


def test_connection_limit_defaults_and_overrides():
    config = BrokerConfig(BASE)
    assert config.get("queued.max.request.bytes") == -1
    assert config.get("connections.max.idle.ms") == 600000
    assert config.get("max.connections") == config.get("max.connections.per.ip") == 2147483647
    config = BrokerConfig(
        {
            **BASE,
            "queued.max.request.bytes": "104857600",
            "max.connections.per.ip": "0",
            "max.connections.per.ip.overrides": "hostName:100, 127.0.0.1:200,::1:5",
        }
    )
    assert parse_connection_overrides(config.get("max.connections.per.ip.overrides")) == {
        "hostName": 100,
        "127.0.0.1": 200,
        "::1": 5,
    }
    # Dynamic (cluster-wide in Kafka), and checked the same way.
    assert config.validate_dynamic({"max.connections": "10"}) == {"max.connections": 10}
    with pytest.raises(ConfigError, match="max.connections.per.ip.overrides"):
        config.validate_dynamic({"max.connections.per.ip.overrides": "nope"})
