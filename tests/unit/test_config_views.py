"""The typed, frozen views of BrokerConfig: every config brokerd applies resolves to one typed
field of one view, with Kafka's defaults, the operator's values and dynamic updates."""

import dataclasses
import subprocess
import sys
import types
import typing

import pytest

from brokerd.config import (
    APPLIED_BROKER_CONFIGS,
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigError,
    LogConfig,
    resolve_topic_config,
)
from brokerd.config.definitions import config_name

BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181/kafka", "log.dirs": "/tmp/x"}

VIEWS = (
    "server",
    "socket",
    "replication",
    "zookeeper",
    "server_log",
    "cleaner",
    "groups",
    "transactions",
    "admin",
    "security",
)

# Applied configs read through something other than a flat view field: the listener configs
# are resolved together into endpoints (BrokerConfig.listeners and friends), and the `log.*`
# synonyms of topic configs into the topic defaults (BrokerConfig.log, a LogConfig).
LISTENER_CONFIGS = {
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "control.plane.listener.name",
    "inter.broker.listener.name",
    "security.inter.broker.protocol",
}
TOPIC_SYNONYMS = {s for d in TOPIC_CONFIGS.values() for s in d.broker_synonyms}
# Configs brokerd acts on with Kafka's own definition (the catalog's): security, and the
# delay before a failed authentication is answered.
FROM_KAFKAS_CATALOG = {
    "connection.failed.authentication.delay.ms",
    "sasl.mechanism.inter.broker.protocol",
    "sasl.server.max.receive.size",
    "ssl.principal.mapping.rules",
    "password.encoder.secret",
}

# A value other than the default for each config a view holds, as written in a properties
# file, and the typed value the view must hold for it.
NON_DEFAULTS = {
    "broker.id": ("7", 7),
    "broker.rack": ("rack-a", "rack-a"),
    "delete.topic.enable": ("false", False),
    "controlled.shutdown.enable": ("false", False),
    "controlled.shutdown.max.retries": ("5", 5),
    "controlled.shutdown.retry.backoff.ms": ("250", 250),
    "fetch.max.bytes": ("2048", 2048),
    "max.incremental.fetch.session.cache.slots": ("12", 12),
    "max.request.partition.size.limit": ("50", 50),
    "max.partitions": ("100", 100),
    "max.broker.partitions": ("50", 50),
    "socket.request.max.bytes": ("20000000", 20000000),
    "queued.max.requests": ("17", 17),
    "queued.max.request.bytes": ("30000000", 30000000),
    "connections.max.idle.ms": ("1234", 1234),
    "max.connections": ("99", 99),
    "max.connections.per.ip": ("9", 9),
    "max.connections.per.ip.overrides": ("10.0.0.1:3", "10.0.0.1:3"),
    "default.replication.factor": ("3", 3),
    "replica.lag.time.max.ms": ("4321", 4321),
    "replica.fetch.wait.max.ms": ("77", 77),
    "replica.fetch.min.bytes": ("2", 2),
    "replica.fetch.max.bytes": ("4096", 4096),
    "replica.fetch.response.max.bytes": ("8192", 8192),
    "replica.fetch.backoff.ms": ("33", 33),
    "replica.socket.timeout.ms": ("4444", 4444),
    "controller.socket.timeout.ms": ("5555", 5555),
    "auto.leader.rebalance.enable": ("false", False),
    "leader.imbalance.check.interval.seconds": ("60", 60),
    "leader.imbalance.per.broker.percentage": ("25", 25),
    "zookeeper.connect": ("zk1:2181,zk2:2181/chroot/", "zk1:2181,zk2:2181/chroot/"),
    "zookeeper.session.timeout.ms": ("9000", 9000),
    "zookeeper.connection.timeout.ms": ("3000", 3000),
    "log.dir": ("/var/kafka", "/var/kafka"),
    "log.dirs": ("/a, /b", ("/a", "/b")),
    "num.partitions": ("6", 6),
    "auto.create.topics.enable": ("false", False),
    "log.retention.check.interval.ms": ("1000", 1000),
    "log.flush.offset.checkpoint.interval.ms": ("2000", 2000),
    "num.recovery.threads.per.data.dir": ("3", 3),
    "num.replica.alter.log.dirs.threads": ("2", 2),
    "replica.high.watermark.checkpoint.interval.ms": ("700", 700),
    "log.cleaner.enable": ("false", False),
    "log.cleaner.dedupe.buffer.size": ("2048", 2048),
    "log.cleaner.backoff.ms": ("100", 100),
    "group.min.session.timeout.ms": ("100", 100),
    "group.max.session.timeout.ms": ("200000", 200000),
    "group.initial.rebalance.delay.ms": ("0", 0),
    "group.max.size": ("10", 10),
    "offset.metadata.max.bytes": ("64", 64),
    "offsets.retention.minutes": ("3", 3),
    "offsets.retention.check.interval.ms": ("500", 500),
    "offsets.topic.num.partitions": ("4", 4),
    "offsets.topic.segment.bytes": ("1048576", 1048576),
    "offsets.topic.replication.factor": ("1", 1),
    "offsets.commit.timeout.ms": ("700", 700),
    "group.consumer.session.timeout.ms": ("6000", 6000),
    "group.consumer.min.session.timeout.ms": ("5000", 5000),
    "group.consumer.max.session.timeout.ms": ("90000", 90000),
    "group.consumer.heartbeat.interval.ms": ("500", 500),
    "group.consumer.min.heartbeat.interval.ms": ("100", 100),
    "group.consumer.max.heartbeat.interval.ms": ("20000", 20000),
    "group.consumer.max.size": ("50", 50),
    "group.consumer.assignors": ("range,uniform", ("range", "uniform")),
    "group.consumer.migration.policy": ("DISABLED", "DISABLED"),
    "transactional.id.expiration.ms": ("60000", 60000),
    "transaction.max.timeout.ms": ("120000", 120000),
    "transaction.state.log.num.partitions": ("7", 7),
    "transaction.state.log.replication.factor": ("2", 2),
    "transaction.state.log.segment.bytes": ("2097152", 2097152),
    "transaction.state.log.min.isr": ("1", 1),
    "transaction.state.log.load.buffer.size": ("65536", 65536),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": ("500", 500),
    "transaction.remove.expired.transaction.cleanup.interval.ms": ("1000", 1000),
    "admin.listener": ("127.0.0.1:8080", "127.0.0.1:8080"),
    "admin.token": ("s3cret-token", "s3cret-token"),
    "failure.probes": ("controller.failover=suspend", ("controller.failover=suspend",)),
    "connection.failed.authentication.delay.ms": ("250", 250),
    "sasl.mechanism.inter.broker.protocol": ("SCRAM-SHA-256", "SCRAM-SHA-256"),
    "sasl.server.max.receive.size": ("4096", 4096),
    "ssl.principal.mapping.rules": (
        "RULE:^CN=(.*?),.*$/$1/,DEFAULT",
        "RULE:^CN=(.*?),.*$/$1/,DEFAULT",
    ),
    "password.encoder.secret": ("encoder-secret", "encoder-secret"),
}


def conforms(value, hint) -> bool:
    """`value` is of the annotated type (an int is not a bool, nor a bool an int)."""
    origin = typing.get_origin(hint)
    if origin is types.UnionType:
        return any(conforms(value, arm) for arm in typing.get_args(hint))
    if origin is tuple:
        (item, _ellipsis) = typing.get_args(hint)
        return isinstance(value, tuple) and all(conforms(v, item) for v in value)
    if hint is type(None):
        return value is None
    return type(value) is hint


def view_fields(config):
    """(view, field name, value) of every field of every view."""
    for view_name in VIEWS:
        view = getattr(config, view_name)
        for field in dataclasses.fields(view):
            yield view_name, field.name, getattr(view, field.name)


def test_every_applied_config_is_one_typed_field_of_one_view():
    config = BrokerConfig(BASE)
    names = [config_name(field) for _, field, _ in view_fields(config)]
    assert len(names) == len(set(names))
    assert (
        set(names)
        == (APPLIED_BROKER_CONFIGS - LISTENER_CONFIGS - TOPIC_SYNONYMS) | FROM_KAFKAS_CATALOG
    )
    assert set(names) == set(NON_DEFAULTS)


def test_defaults_are_kafkas_and_have_the_declared_types():
    config = BrokerConfig({"broker.id": "1", "zookeeper.connect": "zk:2181"})
    for view_name, field, value in view_fields(config):
        name = config_name(field)
        default = BROKER_CONFIGS[name].default
        if name == "zookeeper.connection.timeout.ms":  # unset: the session timeout
            assert value == 18000
            continue
        expected = {"broker.id": 1, "zookeeper.connect": "zk:2181"}.get(name, default)
        assert value == (tuple(expected) if isinstance(expected, list) else expected), name
        hint = typing.get_type_hints(type(getattr(config, view_name)))[field]
        assert conforms(value, hint), (name, hint, value)


def test_set_values_resolve_to_their_typed_fields():
    config = BrokerConfig({**BASE, **{name: raw for name, (raw, _) in NON_DEFAULTS.items()}})
    for _, field, value in view_fields(config):
        assert value == NON_DEFAULTS[config_name(field)][1], field
    assert config.replication.replica_lag_time_max_ms == 4321
    assert config.groups.offsets_retention_ms == 3 * 60_000
    assert config.server_log.dirs == ["/a", "/b"] == config.log_dirs
    assert config.socket.connection_overrides == {"10.0.0.1": 3}
    assert config.admin.listener_address == ("127.0.0.1", 8080)
    assert config.admin.probes == [("controller", "failover")]
    assert (config.zookeeper.hosts, config.zookeeper.chroot) == ("zk1:2181,zk2:2181", "/chroot")


def test_zookeeper_view():
    config = BrokerConfig(
        {**BASE, "zookeeper.connect": "zk:2181", "zookeeper.session.timeout.ms": "700"}
    )
    assert config.zookeeper.hosts == "zk:2181"
    assert config.zookeeper.chroot is None
    assert config.zookeeper.zookeeper_connection_timeout_ms == 700


def test_log_view_is_the_topic_defaults():
    config = BrokerConfig({**BASE, "log.retention.hours": "2", "log.segment.bytes": "2048"})
    assert isinstance(config.log, LogConfig)
    assert config.log == config.log_config()
    assert (config.log.retention_ms, config.log.segment_bytes) == (2 * 3_600_000, 2048)
    assert config.log.unclean_leader_election_enable is False


def test_a_boolean_topic_default_from_the_broker_stays_a_boolean():
    config = BrokerConfig({**BASE, "log.preallocate": "true"})
    value, _ = resolve_topic_config("preallocate", {}, config.explicit)
    assert value is True and TOPIC_CONFIGS["preallocate"].render(value) == "true"
    assert config.log.preallocate is True


def test_views_are_frozen_and_a_misspelt_field_fails():
    config = BrokerConfig(BASE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.replication.replica_lag_time_max_ms = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        config.replication.replica_lag_time_max  # type: ignore[attr-defined]  # noqa: B018


def test_secrets_stay_out_of_the_views_repr():
    config = BrokerConfig({**BASE, "admin.token": "s3cret-token", "password.encoder.secret": "pw"})
    assert config.admin.admin_token == "s3cret-token"
    assert "s3cret-token" not in repr(config.admin)
    assert config.security.password_encoder_secret == "pw"
    assert "pw" not in repr(config.security)


def test_dynamic_updates_rebuild_the_views():
    config = BrokerConfig({**BASE, "log.retention.ms": "1000"})
    before_socket, before_log = config.socket, config.log
    config.set_dynamic_layers(
        {"max.connections": 50},
        config.validate_dynamic(
            {
                "max.connections.per.ip": "4",
                "log.retention.ms": "10800000",
                "unclean.leader.election.enable": "true",
            }
        ),
    )
    assert (config.socket.max_connections, config.socket.max_connections_per_ip) == (50, 4)
    assert config.log.retention_ms == 3 * 3_600_000
    assert config.log.unclean_leader_election_enable is True
    # A view is a snapshot: one taken before the update keeps the values it had.
    assert before_socket.max_connections == 2147483647
    assert before_log.retention_ms == 1000
    config.set_dynamic_layers({}, {})
    assert config.socket.max_connections == 2147483647
    assert config.log.retention_ms == 1000


def test_an_update_that_does_not_hold_together_leaves_the_views():
    config = BrokerConfig(BASE)
    config.set_dynamic_layers({}, {"max.connections.per.ip": 0})  # no overrides: refused
    assert config.socket.max_connections_per_ip == 2147483647


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"replica.lag.time.max.ms": "0"}, "replica.lag.time.max.ms"),
        ({"replica.fetch.min.bytes": "0"}, "replica.fetch.min.bytes"),
        ({"zookeeper.session.timeout.ms": "0"}, "zookeeper.session.timeout.ms"),
        ({"group.max.size": "0"}, "group.max.size"),
        ({"offsets.topic.replication.factor": "40000"}, "offsets.topic.replication.factor"),
        ({"log.cleaner.dedupe.buffer.size": "1023"}, "log.cleaner.dedupe.buffer.size"),
        ({"controlled.shutdown.enable": "maybe"}, "controlled.shutdown.enable"),
        ({"fetch.max.bytes": "1023"}, "fetch.max.bytes"),
        ({"admin.listener": "nowhere"}, "admin.listener"),
        ({"queued.max.requests": "0"}, "queued.max.requests"),
    ],
)
def test_invalid_view_values_are_refused_naming_the_key(props, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        BrokerConfig({**BASE, **props})


def test_config_does_not_import_the_server():
    """The failure probe spec is parsed in brokerd.config, which sits below the server."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, brokerd.config; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "brokerd.config" in loaded
    assert "brokerd.server" not in loaded
