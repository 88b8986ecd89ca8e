"""Kafka's config catalog (brokerd.config.catalog) and how brokerd.config builds on it."""

import pytest

from brokerd.config import (
    ALL_TOPIC_CONFIGS,
    APPLIED_BROKER_CONFIGS,
    BROKER_CONFIGS,
    PARSERS,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    SOURCE_STATIC_BROKER,
    TOPIC_CONFIGS,
    UNAPPLIED_TOPIC_CONFIGS,
    BrokerConfig,
    ConfigError,
    catalog,
    validate_topic_overrides,
)

BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:2181/kafka", "log.dirs": "/tmp/x"}

# brokerd parses these into lists (listener endpoints, directories); Kafka keeps the
# comma-separated string, and DescribeConfigs reports Kafka's type.
TYPED_DIFFERENTLY = {
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "log.dirs",
}
# brokerd's own definitions stricter than Kafka's: values Kafka accepts and reads as "none"
# or "unlimited", or sizes and times that must be positive for brokerd to work (an index
# needs room for one 8-byte entry).
STRICTER_THAN_KAFKA = {
    "controlled.shutdown.max.retries",
    "controlled.shutdown.retry.backoff.ms",
    "controller.socket.timeout.ms",
    "default.replication.factor",
    "leader.imbalance.per.broker.percentage",
    "log.cleaner.dedupe.buffer.size",
    "log.flush.interval.ms",
    "log.flush.scheduler.interval.ms",
    "log.index.size.max.bytes",
    "log.retention.hours",
    "log.retention.minutes",
    "log.retention.ms",
    "log.roll.jitter.ms",
    "log.roll.ms",
    "replica.fetch.min.bytes",
    "replica.fetch.wait.max.ms",
    "replica.lag.time.max.ms",
    "replica.socket.timeout.ms",
    "zookeeper.connection.timeout.ms",
    "zookeeper.session.timeout.ms",
}


def test_the_catalog_holds_every_kafka_3_9_config():
    assert len(catalog.BROKER_SPECS) == 314
    assert len(catalog.TOPIC_SPECS) == 36
    for name in (
        "sasl.kerberos.min.time.before.relogin",
        "num.io.threads",
        "ssl.keystore.password",
        "log.message.format.version",
        "inter.broker.protocol.version",
        "password.encoder.secret",
        "remote.log.storage.system.enable",
    ):
        assert name in catalog.BROKER_SPECS and name in BROKER_CONFIGS
    assert set(catalog.TOPIC_SPECS) == set(ALL_TOPIC_CONFIGS)
    assert set(catalog.BROKER_SPECS) <= set(BROKER_CONFIGS)
    assert "message.format.version" in UNAPPLIED_TOPIC_CONFIGS
    assert "retention.ms" in TOPIC_CONFIGS and "retention.ms" not in UNAPPLIED_TOPIC_CONFIGS


def test_update_modes_are_kafkas():
    specs = catalog.BROKER_SPECS
    assert specs["sasl.kerberos.min.time.before.relogin"].update_mode == catalog.PER_BROKER
    assert specs["advertised.listeners"].update_mode == catalog.PER_BROKER
    assert specs["log.cleaner.threads"].update_mode == catalog.CLUSTER_WIDE
    assert specs["log.retention.ms"].update_mode == catalog.CLUSTER_WIDE
    assert specs["log.retention.hours"].update_mode == catalog.READ_ONLY
    assert specs["num.partitions"].update_mode == catalog.READ_ONLY
    assert specs["log.message.format.version"].update_mode == catalog.READ_ONLY
    assert "max.connections" not in catalog.PER_BROKER_CONFIGS
    assert len(catalog.ALL_DYNAMIC_CONFIGS) == 89


@pytest.mark.parametrize(
    "spec", [*catalog.BROKER_SPECS.values(), *catalog.TOPIC_SPECS.values()], ids=lambda s: s.name
)
def test_every_default_parses_and_passes_its_own_check(spec):
    definition = BROKER_CONFIGS.get(spec.name) or ALL_TOPIC_CONFIGS[spec.name]
    if spec.default is None:
        return
    value = PARSERS[spec.type](spec.default)
    catalog_definition = (
        BROKER_CONFIGS[spec.name]
        if spec.name not in APPLIED_BROKER_CONFIGS and spec.update_mode != catalog.TOPIC_LEVEL
        else definition
    )
    catalog_definition.check(value)


def test_brokerds_own_definitions_agree_with_kafka():
    """Same type, default and valid values, or stricter for a reason listed above."""
    stricter = set()
    for name in sorted(APPLIED_BROKER_CONFIGS & set(catalog.BROKER_SPECS)):
        spec, ours = catalog.BROKER_SPECS[name], BROKER_CONFIGS[name]
        if name in TYPED_DIFFERENTLY:
            continue
        assert ours.type == spec.type, name
        kafka_default = None if spec.default is None else PARSERS[spec.type](spec.default)
        assert ours.default == kafka_default, name
        limits = catalog.constraints_of(spec.valid)
        assert set(ours.choices or ()) == set(limits.choices or ()), name
        if (ours.at_least, ours.at_most) != (limits.at_least, limits.at_most):
            stricter.add(name)
            if limits.at_least is not None:
                assert ours.at_least is not None and ours.at_least >= limits.at_least, name
            if limits.at_most is not None:
                assert ours.at_most is not None and ours.at_most <= limits.at_most, name
    assert stricter == STRICTER_THAN_KAFKA


def test_brokerds_topic_definitions_agree_with_kafka():
    """Same type, default, valid values and first broker synonym; segment.index.bytes is
    stricter (an index needs room for one 8-byte entry)."""
    for name, ours in TOPIC_CONFIGS.items():
        spec = catalog.TOPIC_SPECS[name]
        limits = catalog.constraints_of(spec.valid)
        assert ours.type == spec.type, name
        assert ours.default == PARSERS[spec.type](spec.default), name
        assert set(ours.choices or ()) == set(limits.choices or ()), name
        assert ours.broker_synonyms[0] == spec.server_default, name
        if name == "segment.index.bytes":
            assert (ours.at_least, limits.at_least) == (8, 4)
        else:
            assert (ours.at_least, ours.at_most) == (limits.at_least, limits.at_most), name


@pytest.mark.parametrize(
    ("valid", "good", "bad"),
    [
        ("[1,...]", [1, 10**9], [0, -1]),
        ("[0,...,1]", [0.0, 0.5, 1.0], [-0.1, 1.5]),
        ("[1,...,9] or -1", [-1, 1, 9], [0, 10, -2]),
        ("[-131072,...,22]", [-131072, 22], [23, -131073]),
        ("[compact, delete]", [["compact"], ["delete", "compact"], []], [["archive"]]),
        ("metadata version", ["2.8", "2.8-IV1", "0.10.2.1", "3.9", "4.0-IV1"], ["4.0", "x"]),
        ("throttled replicas", [["*"], ["0:1", "1:2"], []], [["0-1"], ["*", "0:1"]]),
        ("non-empty string", ["x", None], [""]),
    ],
)
def test_valid_values_notations(valid, good, bad):
    limits = catalog.constraints_of(valid)

    def passes(value) -> bool:
        if limits.validator is not None:
            try:
                limits.validator("c", value)
            except catalog.InvalidValue:
                return False
        if limits.at_least is not None and value < limits.at_least:
            return False
        if limits.at_most is not None and value > limits.at_most:
            return False
        items = value if isinstance(value, list) else [value]
        return limits.choices is None or all(item in limits.choices for item in items)

    assert all(passes(v) for v in good)
    assert not any(passes(v) for v in bad)


def test_numbers_parse_as_java_parses_them():
    assert PARSERS["int"](" 42 ") == 42
    assert PARSERS["long"]("9223372036854775807") == 2**63 - 1
    for type_, text in [("int", "2147483648"), ("short", "40000"), ("int", "1_000"), ("long", "")]:
        with pytest.raises(ValueError):
            PARSERS[type_](text)
    with pytest.raises(ValueError):
        PARSERS["double"]("1_0")
    assert [catalog.java_double(v) for v in (0.5, 1e7, 1.7976931348623157e308, 1e-4)] == [
        "0.5",
        "1.0E7",
        "1.7976931348623157E308",
        "1.0E-4",
    ]


def test_list_operations_start_from_the_default():
    apply = catalog.apply_list_operation
    assert apply("APPEND", None, "delete", "compact") == "delete,compact"
    assert apply("APPEND", "compact", "delete", "compact,delete") == "compact,delete"
    assert apply("APPEND", "", "delete", "compact") == "compact"  # an empty value is kept
    assert apply("SUBTRACT", None, "delete", "delete") == ""
    assert apply("SUBTRACT", "delete,compact", "delete", "delete") == "compact"
    assert apply("APPEND", None, None, "0:1") == "0:1"


def test_broker_synonyms_and_types():
    assert catalog.broker_synonyms("log.retention.hours") == [
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    ]
    assert catalog.broker_synonyms("listener.name.ext.plain.sasl.jaas.config") == [
        "listener.name.ext.plain.sasl.jaas.config",
        "sasl.jaas.config",
    ]
    assert catalog.broker_type("listener.name.ext.ssl.keystore.location") == "string"
    assert catalog.broker_sensitive("listener.name.ext.ssl.key.password")
    assert catalog.broker_sensitive("some.plugin.config")  # unknown type: hidden, as Kafka
    assert not catalog.broker_sensitive("num.io.threads")
    assert catalog.is_password_config("listener.name.ext.plain.sasl.jaas.config")


# brokerd.config on top of the catalog ----------------------------------------------------------


def test_server_properties_accept_and_check_every_kafka_name():
    config = BrokerConfig(
        {
            **BASE,
            "sasl.kerberos.min.time.before.relogin": "90000",
            "num.io.threads": "16",
            "log.message.format.version": "2.8",
            "listener.name.plaintext.ssl.keystore.type": "PKCS12",
            "leader.replication.throttled.rate": "10",  # dynamic only: ignored in a file
            "my.plugin.setting": "x",
        }
    )
    assert config.get("num.io.threads") == 16
    assert config.source("sasl.kerberos.min.time.before.relogin") == SOURCE_STATIC_BROKER
    assert config.static["listener.name.plaintext.ssl.keystore.type"] == "PKCS12"
    assert set(config.unknown) == {"leader.replication.throttled.rate", "my.plugin.setting"}
    for name, bad in [
        ("num.io.threads", "0"),
        ("log.message.format.version", "banana"),
        ("ssl.client.auth", "sometimes"),
        ("listener.name.plaintext.ssl.client.auth", "sometimes"),
    ]:
        with pytest.raises(ConfigError, match=name.rsplit(".", 3)[-1].replace(".", r"\.")):
            BrokerConfig({**BASE, name: bad})


def test_dynamic_updates_follow_dynamic_broker_config():
    config = BrokerConfig(BASE)
    assert config.validate_dynamic({"sasl.kerberos.min.time.before.relogin": "120000"}) == {
        "sasl.kerberos.min.time.before.relogin": 120000
    }
    assert config.validate_dynamic({"log.cleaner.threads": "2"}, per_broker=False)
    assert config.validate_dynamic({"listener.name.plaintext.ssl.keystore.type": "PKCS12"})
    assert config.validate_dynamic({"custom.plugin.config": "x"}) == {"custom.plugin.config": "x"}
    refusals = [
        ({"broker.id": "2"}, True, r"Cannot update these configs dynamically: Set\(broker\.id\)"),
        ({"num.partitions": "2"}, True, "Cannot update these configs dynamically"),
        ({"admin.listener": "127.0.0.1:1"}, True, "Cannot update these configs dynamically"),
        ({"ssl.keystore.location": "/k"}, True, "only per-listener"),
        ({"sasl.kerberos.service.name": "k"}, False, "broker id must be specified"),
        ({"listener.name.plaintext.ssl.keystore.type": "JKS"}, False, "broker id must be"),
        ({"num.io.threads": "17"}, True, "double the current value 8"),
        ({"num.io.threads": "3"}, True, "at least half the current value 8"),
        ({"log.cleaner.threads": "x"}, True, "log.cleaner.threads"),
        ({"advertised.listeners": "OTHER://h:1"}, True, "advertised.listeners"),
    ]
    for updates, per_broker, message in refusals:
        with pytest.raises(ConfigError, match=message):
            config.validate_dynamic(updates, per_broker=per_broker)
    # A listener-prefixed config at cluster level stays cluster-wide.
    assert config.validate_dynamic({"listener.name.plaintext.max.connections": "5"}, False)


def test_dynamic_layers_and_synonyms_take_kafkas_precedence():
    config = BrokerConfig({**BASE, "log.retention.ms": "1000"})
    config.set_dynamic_layers({"log.retention.hours": 2}, {})
    # The cluster-wide default's log.retention.hours hides the static log.retention.ms.
    assert config.log_config().retention_ms == 2 * 3_600_000
    assert config.source("log.retention.hours") == SOURCE_DYNAMIC_DEFAULT_BROKER
    assert config.get("log.retention.ms") is None
    config.set_dynamic_layers({"log.retention.hours": 2}, {"log.retention.ms": 5000})
    assert config.log_config().retention_ms == 5000
    assert config.source("log.retention.ms") == SOURCE_DYNAMIC_BROKER
    # A combination that does not hold together is not applied.
    config.set_dynamic_layers({}, {"advertised.listeners": ["NOPE://h:1"]})
    assert config.get("log.retention.ms") == 5000


def test_topic_overrides_are_checked_as_logconfig_validate_does():
    assert validate_topic_overrides({"message.format.version": "2.8"}) == {
        "message.format.version": "2.8"
    }
    for overrides, message in [
        ({"nope": "1"}, "Unknown topic config name: nope"),
        ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "conflict"),
        ({"remote.log.copy.disable": "true"}, "Zookeeper's mode"),
        ({"remote.storage.enable": "true"}, "Tiered Storage functionality is disabled"),
        ({"compression.gzip.level": "0"}, "compression.gzip.level"),
    ]:
        with pytest.raises(ConfigError, match=message):
            validate_topic_overrides(overrides)
    tiered = {"remote.log.storage.system.enable": True}
    assert validate_topic_overrides({"remote.storage.enable": "true"}, tiered)
    with pytest.raises(ConfigError, match="compacted"):
        validate_topic_overrides(
            {"remote.storage.enable": "true", "cleanup.policy": "compact"}, tiered
        )
