"""Broker and topic configs with Kafka's names, types, defaults and validation.

A topic config resolves as Kafka does: the topic's own override, else the broker's
`log.*` synonym (for retention, `log.retention.ms` over `.minutes` over `.hours`), else the
default. `LogConfig` is the resolved, typed view the log reads.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from brokerd import config_catalog

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647


class ConfigError(ValueError):
    """An invalid config value; the message names the key."""


# Config sources as DescribeConfigs reports them.
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_DYNAMIC_BROKER = 2
SOURCE_DYNAMIC_DEFAULT_BROKER = 3
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(f"expected true or false, got {text!r}")


def _parse_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _parse_double(text: str) -> float:
    if "_" in text:  # Python reads 1_0 as 10, Java's parseDouble refuses it
        raise ValueError(f"Not a number of type DOUBLE: {text!r}")
    return float(text.strip())


PARSERS: dict[str, Callable[[str], Any]] = {
    "int": lambda s: config_catalog.parse_integer(s, "int"),
    "long": lambda s: config_catalog.parse_integer(s, "long"),
    "short": lambda s: config_catalog.parse_integer(s, "short"),
    "double": _parse_double,
    "boolean": _parse_bool,
    "string": lambda s: s.strip(),
    "list": _parse_list,
    "class": config_catalog.parse_class_name,
    "password": lambda s: s,
}

# Kafka's DescribeConfigs config types (KIP-569).
TYPE_IDS = {
    "boolean": 1,
    "string": 2,
    "int": 3,
    "short": 4,
    "long": 5,
    "double": 6,
    "list": 7,
    "class": 8,
    "password": 9,
}


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: str
    default: Any
    doc: str = ""
    at_least: float | None = None
    at_most: float | None = None
    choices: tuple[str, ...] | None = None
    broker_synonyms: tuple[str, ...] = ()  # highest precedence first
    read_only: bool = False
    sensitive: bool = False
    validator: Callable[[str, Any], None] | None = None  # Kafka's checks beyond a range

    def parse(self, raw: Any) -> Any:
        if raw is None:
            return None
        if isinstance(raw, str):
            try:
                value = PARSERS[self.type](raw)
            except ValueError as exc:
                raise ConfigError(f"{self.name}: invalid {self.type} value {raw!r}") from exc
        else:
            value = raw
        self.check(value)
        return value

    def check(self, value: Any) -> None:
        if value is None:
            return
        if self.type in ("int", "long", "short", "double"):
            if self.type != "double" and isinstance(value, float):
                raise ConfigError(f"{self.name}: expected an integer, got {value!r}")
            if self.at_least is not None and value < self.at_least:
                raise ConfigError(f"{self.name}: {value} is below the minimum {self.at_least:g}")
            if self.at_most is not None and value > self.at_most:
                raise ConfigError(f"{self.name}: {value} is above the maximum {self.at_most:g}")
        if self.choices is not None:
            items = value if isinstance(value, list) else [value]
            for item in items:
                if item not in self.choices:
                    raise ConfigError(
                        f"{self.name}: {item!r} is not one of {', '.join(self.choices)}"
                    )
        if self.validator is not None:
            try:
                self.validator(self.name, value)
            except config_catalog.InvalidValue as exc:  # its message names the config
                raise ConfigError(str(exc)) from exc

    def render(self, value: Any) -> str | None:
        """A value as Kafka prints it in DescribeConfigs."""
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return ",".join(value)
        if isinstance(value, float):
            return config_catalog.java_double(value)
        return str(value)


def _topic(name, type_, default, broker, doc, **kw) -> ConfigDef:
    synonyms = broker if isinstance(broker, tuple) else (broker,)
    return ConfigDef(name, type_, default, doc, broker_synonyms=synonyms, **kw)


TOPIC_CONFIGS: dict[str, ConfigDef] = {
    c.name: c
    for c in [
        _topic(
            "cleanup.policy",
            "list",
            ["delete"],
            "log.cleanup.policy",
            "delete, compact, or both",
            choices=("delete", "compact"),
        ),
        _topic(
            "compression.type",
            "string",
            "producer",
            "compression.type",
            "codec of stored batches; producer keeps the producer's",
            choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        ),
        _topic(
            "delete.retention.ms",
            "long",
            86400000,
            "log.cleaner.delete.retention.ms",
            "how long tombstones are kept after cleaning",
            at_least=0,
        ),
        _topic(
            "file.delete.delay.ms",
            "long",
            60000,
            "log.segment.delete.delay.ms",
            "delay before .deleted files are removed",
            at_least=0,
        ),
        _topic(
            "flush.messages",
            "long",
            LONG_MAX,
            "log.flush.interval.messages",
            "fsync after this many messages",
            at_least=1,
        ),
        _topic(
            "flush.ms",
            "long",
            LONG_MAX,
            ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
            "fsync after this many ms",
            at_least=0,
        ),
        _topic(
            "index.interval.bytes",
            "int",
            4096,
            "log.index.interval.bytes",
            "bytes between offset index entries",
            at_least=0,
        ),
        _topic(
            "max.compaction.lag.ms",
            "long",
            LONG_MAX,
            "log.cleaner.max.compaction.lag.ms",
            "longest a record stays uncompacted",
            at_least=1,
        ),
        _topic(
            "max.message.bytes",
            "int",
            1048588,
            "message.max.bytes",
            "largest batch accepted",
            at_least=0,
        ),
        _topic(
            "message.timestamp.type",
            "string",
            "CreateTime",
            "log.message.timestamp.type",
            "CreateTime or LogAppendTime",
            choices=("CreateTime", "LogAppendTime"),
        ),
        _topic(
            "message.timestamp.difference.max.ms",
            "long",
            LONG_MAX,
            "log.message.timestamp.difference.max.ms",
            "largest allowed gap between a record's and the broker's time",
            at_least=0,
        ),
        _topic(
            "min.cleanable.dirty.ratio",
            "double",
            0.5,
            "log.cleaner.min.cleanable.ratio",
            "dirty share that makes a log cleanable",
            at_least=0,
            at_most=1,
        ),
        _topic(
            "min.compaction.lag.ms",
            "long",
            0,
            "log.cleaner.min.compaction.lag.ms",
            "shortest a record stays uncompacted",
            at_least=0,
        ),
        _topic(
            "min.insync.replicas",
            "int",
            1,
            "min.insync.replicas",
            "replicas that must have an acks=all write",
            at_least=1,
        ),
        _topic("preallocate", "boolean", False, "log.preallocate", "preallocate segment files"),
        _topic(
            "retention.bytes",
            "long",
            -1,
            "log.retention.bytes",
            "largest a partition grows before old segments go; -1 unlimited",
        ),
        _topic(
            "retention.ms",
            "long",
            604800000,
            ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
            "age after which segments go; -1 unlimited",
            at_least=-1,
        ),
        _topic(
            "segment.bytes",
            "int",
            1073741824,
            "log.segment.bytes",
            "segment size at which the log rolls",
            at_least=14,
        ),
        _topic(
            "segment.index.bytes",
            "int",
            10485760,
            "log.index.size.max.bytes",
            "preallocated size of each index",
            at_least=8,
        ),
        _topic(
            "segment.jitter.ms",
            "long",
            0,
            ("log.roll.jitter.ms", "log.roll.jitter.hours"),
            "random jitter subtracted from segment.ms",
            at_least=0,
        ),
        _topic(
            "segment.ms",
            "long",
            604800000,
            ("log.roll.ms", "log.roll.hours"),
            "age at which the active segment rolls",
            at_least=1,
        ),
        _topic(
            "unclean.leader.election.enable",
            "boolean",
            False,
            "unclean.leader.election.enable",
            "allow out-of-sync leaders",
        ),
        _topic(
            "message.downconversion.enable",
            "boolean",
            True,
            "log.message.downconversion.enable",
            "down-convert for old fetchers",
        ),
    ]
}

# Broker synonyms that are not in the same unit as the topic config.
_SYNONYM_SCALE = {
    "log.retention.minutes": 60_000,
    "log.retention.hours": 3_600_000,
    "log.roll.hours": 3_600_000,
    "log.roll.jitter.hours": 3_600_000,
}


def _kafka_defined(spec: config_catalog.KafkaConfigSpec) -> ConfigDef:
    """A ConfigDef from Kafka's own definition (brokerd.config_catalog)."""
    limits = config_catalog.constraints_of(spec.valid)
    return ConfigDef(
        spec.name,
        spec.type,
        None if spec.default is None else PARSERS[spec.type](spec.default),
        spec.doc,
        at_least=limits.at_least,
        at_most=limits.at_most,
        choices=limits.choices,
        broker_synonyms=(spec.server_default,) if spec.server_default else (),
        read_only=spec.update_mode == config_catalog.READ_ONLY,
        sensitive=spec.type == "password",
        validator=limits.validator,
    )


# Topic configs Kafka defines that brokerd accepts, validates, stores and describes but does
# not apply (DescribeConfigs' documentation and docs/configs.md say so).
UNAPPLIED_TOPIC_CONFIGS: dict[str, ConfigDef] = {
    name: _kafka_defined(spec)
    for name, spec in config_catalog.TOPIC_SPECS.items()
    if name not in TOPIC_CONFIGS
}
ALL_TOPIC_CONFIGS: dict[str, ConfigDef] = dict(
    sorted({**TOPIC_CONFIGS, **UNAPPLIED_TOPIC_CONFIGS}.items())
)


def validate_topic_overrides(
    overrides: Mapping[str, str], broker: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Parse topic-level overrides as Kafka's LogConfig.validate does: unknown names, bad
    values and conflicting settings raise ConfigError. `broker` is the broker's explicit
    configs, which supply what the overrides leave out."""
    parsed = {}
    for name, raw in overrides.items():
        definition = ALL_TOPIC_CONFIGS.get(name)
        if definition is None:
            raise ConfigError(f"Unknown topic config name: {name}")
        parsed[name] = definition.parse(raw)
    _check_topic_combination(parsed, broker or {})
    return parsed


def _check_topic_combination(parsed: Mapping[str, Any], broker: Mapping[str, Any]) -> None:
    """LogConfig.validateValues and the ZooKeeper-mode tiered-storage rules."""

    def value(name: str) -> Any:
        return parsed[name] if name in parsed else resolve_topic_config(name, {}, broker)[0]

    min_lag, max_lag = value("min.compaction.lag.ms"), value("max.compaction.lag.ms")
    if min_lag > max_lag:
        raise ConfigError(
            f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > "
            f"max.compaction.lag.ms ({max_lag})"
        )
    if value("remote.log.delete.on.disable") or value("remote.log.copy.disable"):
        raise ConfigError(
            "It is invalid to set `remote.log.delete.on.disable` or `remote.log.copy.disable` "
            "under Zookeeper's mode."
        )
    if not value("remote.storage.enable"):
        return
    system = broker.get("remote.log.storage.system.enable")
    if not (PARSERS["boolean"](system) if isinstance(system, str) else system):
        raise ConfigError(
            "Tiered Storage functionality is disabled in the broker. Topic cannot be "
            "configured with remote log storage."
        )
    if "compact" in value("cleanup.policy"):
        raise ConfigError("Remote log storage is unsupported for the compacted topics")
    for local, total in (
        ("local.retention.bytes", "retention.bytes"),
        ("local.retention.ms", "retention.ms"),
    ):
        local_value, total_value = value(local), value(total)
        if total_value > -1 and local_value != -2:
            if local_value == -1:
                raise ConfigError(
                    f"{local}: Value must not be -1 as {total} value is set as {total_value}."
                )
            if local_value > total_value:
                raise ConfigError(
                    f"{local}: Value must not be more than {total} property value: {total_value}"
                )


def resolve_topic_config(
    name: str, overrides: Mapping[str, Any], broker: Mapping[str, Any] | None = None
) -> tuple[Any, int]:
    """(value, source) of one topic config: override, broker synonym, or default."""
    definition = ALL_TOPIC_CONFIGS[name]
    if name in overrides and overrides[name] is not None:
        return definition.parse(overrides[name]), SOURCE_DYNAMIC_TOPIC
    for synonym in definition.broker_synonyms:
        if broker and broker.get(synonym) is not None:
            value = broker[synonym]
            if isinstance(value, str):
                value = PARSERS[definition.type](value)
            value = value * _SYNONYM_SCALE.get(synonym, 1)
            return value, SOURCE_STATIC_BROKER
    return definition.default, SOURCE_DEFAULT


@dataclass(frozen=True)
class LogConfig:
    """The resolved topic configs the log reads, with Kafka's defaults."""

    cleanup_policy: tuple[str, ...] = ("delete",)
    compression_type: str = "producer"
    delete_retention_ms: int = 86400000
    file_delete_delay_ms: int = 60000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    index_interval_bytes: int = 4096
    max_compaction_lag_ms: int = LONG_MAX
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    message_timestamp_difference_max_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    min_insync_replicas: int = 1
    preallocate: bool = False
    retention_bytes: int = -1
    retention_ms: int = 604800000
    segment_bytes: int = 1073741824
    segment_index_bytes: int = 10485760
    segment_jitter_ms: int = 0
    segment_ms: int = 604800000
    unclean_leader_election_enable: bool = False
    message_downconversion_enable: bool = True

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @classmethod
    def resolve(
        cls, overrides: Mapping[str, Any] | None = None, broker: Mapping[str, Any] | None = None
    ) -> LogConfig:
        overrides = overrides or {}
        values = {}
        for name in TOPIC_CONFIGS:
            value, _ = resolve_topic_config(name, overrides, broker)
            field = name.replace(".", "_")
            values[field] = tuple(value) if isinstance(value, list) else value
        return cls(**values)

    def with_overrides(self, **changes: Any) -> LogConfig:
        return dataclasses.replace(self, **changes)


# Broker configs ----------------------------------------------------------------------------

_BROKER_UNIT_DEFAULTS: dict[str, Any] = {
    # Kafka's broker defaults for synonyms in other units than the topic config.
    "log.retention.hours": 168,
    "log.roll.hours": 168,
    "log.roll.jitter.hours": 0,
    "log.flush.scheduler.interval.ms": LONG_MAX,
}


_VALID_HOST = re.compile(r"[0-9a-zA-Z\-%._:]*")  # Kafka's Utils.validHostPattern
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def parse_connection_overrides(text: str) -> dict[str, int]:
    """max.connections.per.ip.overrides as Kafka reads it: `host:count` pairs separated by
    commas, split at the last colon (so IPv6 addresses work)."""
    overrides: dict[str, int] = {}
    for entry in re.split(r"\s*,\s*", text.strip()) if text.strip() else ():
        host, colon, count = entry.rpartition(":")
        host, count = host.strip(), count.strip()
        if not colon or not _VALID_HOST.fullmatch(host) or not _JAVA_INT.fullmatch(count):
            raise ConfigError(f"max.connections.per.ip.overrides: invalid entry {entry!r}")
        value = int(count)
        if not -INT_MAX - 1 <= value <= INT_MAX:
            raise ConfigError(f"max.connections.per.ip.overrides: {count} is not an int")
        overrides[host] = value
    return overrides


def _valid_connection_overrides(_name: str, value: str) -> None:
    try:
        parse_connection_overrides(value)
    except ConfigError as exc:
        raise config_catalog.InvalidValue(str(exc)) from exc


def _broker(name, type_, default, doc, **kw) -> ConfigDef:
    return ConfigDef(name, type_, default, doc, **kw)


def _scaled_minimum(synonym: str) -> int:
    """The least value of an hours or minutes synonym: Kafka's, else -1 (unlimited)."""
    spec = config_catalog.BROKER_SPECS.get(synonym)
    minimum = config_catalog.constraints_of(spec.valid).at_least if spec else None
    return -1 if minimum is None else int(minimum)


def _topic_synonym_defs() -> list[ConfigDef]:
    """The broker-level `log.*` (and shared) synonyms of topic configs, with Kafka's defaults.

    With several synonyms (log.retention.ms/.minutes/.hours) only the lowest-precedence one
    has a default; the others are unset, so they win only when an operator sets them.
    """
    out: dict[str, ConfigDef] = {}
    for topic_def in TOPIC_CONFIGS.values():
        synonyms = topic_def.broker_synonyms
        for synonym in synonyms:
            if synonym in out:
                continue
            if len(synonyms) == 1:
                default = topic_def.default
            else:
                default = _BROKER_UNIT_DEFAULTS.get(synonym)
            scaled = synonym in _SYNONYM_SCALE
            out[synonym] = ConfigDef(
                synonym,
                "int" if scaled else topic_def.type,
                default,
                f"broker default of {topic_def.name}: {topic_def.doc}",
                at_least=topic_def.at_least if not scaled else _scaled_minimum(synonym),
                at_most=topic_def.at_most,
                choices=topic_def.choices,
            )
    return list(out.values())


BROKER_CONFIGS: dict[str, ConfigDef] = {
    c.name: c
    for c in [
        _broker("broker.id", "int", -1, "this broker's id in the cluster", read_only=True),
        _broker("broker.rack", "string", None, "rack of this broker", read_only=True),
        _broker(
            "listeners",
            "list",
            ["PLAINTEXT://:9092"],
            "listener URIs the broker binds",
            read_only=True,
        ),
        _broker(
            "advertised.listeners",
            "list",
            None,
            "listener URIs published to clients (default: listeners)",
            read_only=True,
        ),
        _broker(
            "listener.security.protocol.map",
            "list",
            [
                "PLAINTEXT:PLAINTEXT",
                "SSL:SSL",
                "SASL_PLAINTEXT:SASL_PLAINTEXT",
                "SASL_SSL:SASL_SSL",
            ],
            "listener name to security protocol",
            read_only=True,
        ),
        _broker(
            "inter.broker.listener.name",
            "string",
            None,
            "listener between brokers (default: the one named by security.inter.broker.protocol)",
            read_only=True,
        ),
        _broker(
            "security.inter.broker.protocol",
            "string",
            "PLAINTEXT",
            "security protocol between brokers; only one of it and inter.broker.listener.name",
            choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
            read_only=True,
        ),
        _broker(
            "control.plane.listener.name",
            "string",
            None,
            "listener for controller requests (default: the inter-broker listener)",
            read_only=True,
        ),
        _broker("log.dir", "string", "/tmp/kafka-logs", "log directory", read_only=True),
        _broker("log.dirs", "list", None, "log directories (default: log.dir)", read_only=True),
        _broker("zookeeper.connect", "string", None, "host:port[,...][/chroot]", read_only=True),
        _broker(
            "zookeeper.session.timeout.ms",
            "int",
            18000,
            "ZooKeeper session timeout",
            at_least=1,
            read_only=True,
        ),
        _broker(
            "zookeeper.connection.timeout.ms",
            "int",
            None,
            "wait for a ZooKeeper connection (default: session timeout)",
            at_least=1,
            read_only=True,
        ),
        _broker("num.partitions", "int", 1, "partitions of auto-created topics", at_least=1),
        # KIP-578's names (proposed, not in Kafka): unlimited by default, as Kafka is.
        _broker(
            "max.partitions",
            "long",
            LONG_MAX,
            "partitions the cluster may hold; CreateTopics, CreatePartitions and "
            "auto-creation past it fail with POLICY_VIOLATION (KIP-578)",
            at_least=0,
            read_only=True,
        ),
        _broker(
            "max.broker.partitions",
            "long",
            LONG_MAX,
            "partition replicas one broker may hold; a creation that would put more on any "
            "broker fails with POLICY_VIOLATION (KIP-578)",
            at_least=0,
            read_only=True,
        ),
        _broker(
            "default.replication.factor",
            "int",
            1,
            "replication factor of auto-created topics",
            at_least=1,
        ),
        _broker(
            "replica.lag.time.max.ms",
            "long",
            30000,
            "a follower that has not caught up for this long leaves the ISR",
            at_least=1,
        ),
        _broker("replica.fetch.wait.max.ms", "int", 500, "follower fetch long-poll", at_least=0),
        _broker("replica.fetch.min.bytes", "int", 1, "follower fetch min bytes", at_least=1),
        _broker(
            "replica.fetch.max.bytes",
            "int",
            1048576,
            "follower fetch bytes per partition",
            at_least=0,
        ),
        _broker(
            "replica.fetch.response.max.bytes",
            "int",
            10485760,
            "follower fetch bytes per response",
            at_least=0,
        ),
        _broker(
            "replica.fetch.backoff.ms", "int", 1000, "follower back-off after an error", at_least=0
        ),
        _broker("replica.socket.timeout.ms", "int", 30000, "follower request timeout", at_least=1),
        _broker(
            "controller.socket.timeout.ms", "int", 30000, "controller request timeout", at_least=1
        ),
        _broker(
            "controlled.shutdown.enable",
            "boolean",
            True,
            "on SIGTERM, ask the controller to move leadership away first",
            read_only=True,
        ),
        _broker(
            "controlled.shutdown.max.retries",
            "int",
            3,
            "ControlledShutdown attempts before stopping anyway",
            at_least=0,
            read_only=True,
        ),
        _broker(
            "controlled.shutdown.retry.backoff.ms",
            "long",
            5000,
            "pause between ControlledShutdown attempts",
            at_least=0,
            read_only=True,
        ),
        _broker(
            "auto.leader.rebalance.enable",
            "boolean",
            True,
            "the controller moves leadership back to preferred replicas",
            read_only=True,
        ),
        _broker(
            "leader.imbalance.check.interval.seconds",
            "long",
            300,
            "how often the controller checks for leader imbalance",
            at_least=1,
            read_only=True,
        ),
        _broker(
            "leader.imbalance.per.broker.percentage",
            "int",
            10,
            "share of a broker's partitions led elsewhere that triggers a rebalance",
            at_least=0,
            read_only=True,
        ),
        _broker(
            "offsets.commit.timeout.ms",
            "int",
            5000,
            "how long an offset commit or group write waits for the offsets topic's replicas",
            at_least=1,
            read_only=True,
        ),
        _broker(
            "auto.create.topics.enable",
            "boolean",
            True,
            "create unknown topics on Metadata requests",
            read_only=True,
        ),
        _broker("delete.topic.enable", "boolean", True, "allow topic deletion", read_only=True),
        _broker(
            "socket.request.max.bytes",
            "int",
            104857600,
            "largest request frame accepted",
            at_least=1,
            read_only=True,
        ),
        _broker(
            "queued.max.requests",
            "int",
            500,
            "requests read ahead on one connection before reading pauses",
            at_least=1,
            read_only=True,
        ),
        _broker(
            "queued.max.request.bytes",
            "long",
            -1,
            "bytes of requests being read or handled before no more are read (-1: no limit)",
            read_only=True,
        ),
        _broker(
            "connections.max.idle.ms",
            "long",
            600000,
            "close a connection that received nothing and owed nothing this long (-1: never)",
            read_only=True,
        ),
        _broker(
            "max.connections",
            "int",
            INT_MAX,
            "connections open at once, broker-wide; at the limit no more are accepted",
            at_least=0,
        ),
        _broker(
            "max.connections.per.ip",
            "int",
            INT_MAX,
            "connections from one address; one more is closed as soon as it is accepted",
            at_least=0,
        ),
        _broker(
            "max.connections.per.ip.overrides",
            "string",
            "",
            "max.connections.per.ip by host or address, e.g. hostName:100,127.0.0.1:200",
            validator=_valid_connection_overrides,
        ),
        _broker(
            "fetch.max.bytes",
            "int",
            57671680,
            "largest Fetch response the broker builds",
            at_least=1024,
        ),
        _broker(
            "max.incremental.fetch.session.cache.slots",
            "int",
            1000,
            "fetch sessions (KIP-227) kept",
            at_least=0,
            read_only=True,
        ),
        _broker(
            "log.retention.check.interval.ms",
            "long",
            300000,
            "how often retention runs",
            at_least=1,
            read_only=True,
        ),
        _broker(
            "log.flush.scheduler.interval.ms",
            "long",
            LONG_MAX,
            "how often the flusher checks logs",
            read_only=True,
        ),
        _broker(
            "log.flush.offset.checkpoint.interval.ms",
            "int",
            60000,
            "how often recovery points are checkpointed",
            at_least=0,
            read_only=True,
        ),
        _broker("log.cleaner.enable", "boolean", True, "run the log cleaner", read_only=True),
        _broker(
            "log.cleaner.dedupe.buffer.size",
            "long",
            134217728,
            "memory for the cleaner's key-to-offset map",
            at_least=1024,
            read_only=True,
        ),
        _broker(
            "log.cleaner.backoff.ms",
            "long",
            15000,
            "how long the cleaner sleeps when no log needs cleaning",
            at_least=0,
            read_only=True,
        ),
        _broker(
            "offsets.topic.replication.factor",
            "short",
            3,
            "replication factor of __consumer_offsets",
            at_least=1,
            read_only=True,
        ),
        _broker(
            "offsets.topic.num.partitions",
            "int",
            50,
            "partitions of __consumer_offsets",
            at_least=1,
            read_only=True,
        ),
        _broker(
            "group.initial.rebalance.delay.ms",
            "int",
            3000,
            "delay of a new group's first rebalance",
            read_only=True,
        ),
        _broker(
            "group.min.session.timeout.ms",
            "int",
            6000,
            "the smallest session timeout a group member may ask for",
            read_only=True,
        ),
        _broker(
            "group.max.session.timeout.ms",
            "int",
            1800000,
            "the largest session timeout a group member may ask for",
            read_only=True,
        ),
        _broker(
            "group.max.size",
            "int",
            2147483647,
            "the most members a consumer group may have",
            at_least=1,
            read_only=True,
        ),
        _broker(
            "offsets.retention.minutes",
            "int",
            10080,
            "how long committed offsets of an empty group are kept",
            at_least=1,
            read_only=True,
        ),
        _broker(
            "offsets.retention.check.interval.ms",
            "long",
            600000,
            "how often expired committed offsets are looked for",
            at_least=1,
            read_only=True,
        ),
        _broker(
            "offsets.topic.segment.bytes",
            "int",
            104857600,
            "segment.bytes of __consumer_offsets",
            at_least=1,
            read_only=True,
        ),
        _broker(
            "offset.metadata.max.bytes",
            "int",
            4096,
            "the longest metadata string an offset commit may carry",
            read_only=True,
        ),
        _broker(
            "admin.listener",
            "string",
            "127.0.0.1:0",
            "host:port of the HTTP admin API and /metrics (port 0: a free port, published "
            "in the broker registration as admin_endpoint)",
            read_only=True,
        ),
        _broker(
            "admin.token",
            "password",
            None,
            "bearer token of the admin API (default: generated into <log dir>/admin.token)",
            read_only=True,
            sensitive=True,
        ),
        _broker(
            "failure.probes",
            "list",
            [],
            "testing only: points held at start-up until released through the admin API, "
            "module.point=suspend (see brokerd/server/failure_probes.py); empty in production",
            read_only=True,
        ),
        *_topic_synonym_defs(),
    ]
}

# The broker configs brokerd defines and applies; every other config Kafka defines is added
# below from brokerd.config_catalog: accepted, validated, stored and described, not applied.
APPLIED_BROKER_CONFIGS = frozenset(BROKER_CONFIGS)
BROKER_CONFIGS.update(
    (name, _kafka_defined(spec))
    for name, spec in {
        **config_catalog.BROKER_SPECS,
        **config_catalog.DYNAMIC_ONLY_BROKER_SPECS,
    }.items()
    if name not in BROKER_CONFIGS
)


def is_dynamic_broker_config(name: str) -> bool:
    """AlterConfigs may set it: dynamic in Kafka (DynamicBrokerConfig), or a custom config
    (Kafka lets plugins have their own); brokerd's own additions never are."""
    base = config_catalog.listener_base(name)
    if base is not None:
        return True  # listener.name.<l>.<config>: checked by its base config's rules
    spec = config_catalog.BROKER_SPECS.get(name) or config_catalog.DYNAMIC_ONLY_BROKER_SPECS.get(
        name
    )
    if spec is not None:
        return spec.dynamic
    return name not in BROKER_CONFIGS


DYNAMIC_BROKER_CONFIGS = frozenset(
    name for name in BROKER_CONFIGS if is_dynamic_broker_config(name)
)


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties: `key=value`, `key: value` or `key value`; # and ! comments; \\ joins."""
    props: dict[str, str] = {}
    logical = ""
    for raw_line in text.splitlines():
        line = raw_line.strip() if not logical else raw_line.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        key, value = _split_property(logical)
        props[key] = value
        logical = ""
    if logical:
        key, value = _split_property(logical)
        props[key] = value
    return props


def _split_property(line: str) -> tuple[str, str]:
    match = _PROPERTY_SEPARATOR.search(line)
    if match is None:
        return line, ""
    return line[: match.start()], line[match.end() :]


_PROPERTY_SEPARATOR = re.compile(r"\s*[=:]\s*|\s+")


def _static_definition(name: str) -> ConfigDef | None:
    """The definition a server.properties name is checked against: its own, or for
    listener.name.<l>.<config> that of <config>; None for names Kafka does not know."""
    spec = config_catalog.DYNAMIC_ONLY_BROKER_SPECS.get(name)
    if spec is not None:
        return None  # Kafka takes these only dynamically
    definition = BROKER_CONFIGS.get(name)
    if definition is not None:
        return definition
    base = config_catalog.listener_base(name)
    return BROKER_CONFIGS.get(base) if base is not None else None


def _parse_dynamic(name: str, raw: str | None) -> Any:
    """A dynamic value: typed when Kafka validates it (DynamicConfig.Broker: the dynamic
    configs, also under a listener prefix), else kept as given (custom configs)."""
    if raw is None:
        return None
    base = config_catalog.listener_base(name)
    definition = BROKER_CONFIGS.get(base if base is not None else name)
    if definition is None or not is_dynamic_broker_config(definition.name):
        return raw
    value = definition.parse(raw)
    return value if base is None else raw


# Listener security protocols brokerd speaks.
SUPPORTED_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class Endpoint:
    listener_name: str
    security_protocol: str
    host: str
    port: int

    @property
    def uri(self) -> str:
        return f"{self.listener_name}://{self.host}:{self.port}"


def parse_host_port(text: str, key: str) -> tuple[str, int]:
    """`host:port` (IPv6 as `[::1]:port`); an empty host means all interfaces."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise ConfigError(f"{key}: expected host:port, got {text!r}")
    return host.strip("[]"), int(port)


def parse_endpoint(uri: str, protocol_map: Mapping[str, str], key: str) -> Endpoint:
    name, sep, address = uri.partition("://")
    if not sep or not name:
        raise ConfigError(f"{key}: {uri!r} is not of the form NAME://host:port")
    host, colon, port_text = address.rpartition(":")
    if not colon:
        raise ConfigError(f"{key}: {uri!r} has no port")
    host = host.strip("[]")
    try:
        port = int(port_text)
    except ValueError as exc:
        raise ConfigError(f"{key}: {uri!r} has an invalid port") from exc
    if not 0 <= port <= 65535:
        raise ConfigError(f"{key}: port {port} is out of range")
    name = name.upper()
    protocol = protocol_map.get(name)
    if protocol is None:
        raise ConfigError(f"{key}: listener {name} has no listener.security.protocol.map entry")
    if protocol not in SUPPORTED_SECURITY_PROTOCOLS:
        raise ConfigError(f"{key}: security protocol {protocol} is not supported yet")
    return Endpoint(name, protocol, host, port)


class BrokerConfig:
    """A broker's configuration: explicit properties over Kafka's defaults, validated.

    `explicit` holds only what the operator set (static) and what AlterConfigs set
    (dynamic); topic configs resolve against those, so an unset `log.*` reports the
    topic default's source as DEFAULT, exactly as Kafka does.
    """

    def __init__(self, props: Mapping[str, str] | None = None):
        self.raw = dict(props or {})
        self.static: dict[str, Any] = {}
        # Dynamic configs from ZooKeeper: the cluster-wide default entity, then this broker's.
        self.dynamic_default: dict[str, Any] = {}
        self.dynamic_broker: dict[str, Any] = {}
        self.unknown: dict[str, str] = {}
        for name, raw in self.raw.items():
            definition = _static_definition(name)
            if definition is None:
                self.unknown[name] = raw  # Kafka logs "not a known config" and goes on
                continue
            self.static[name] = definition.parse(raw) if definition.name == name else raw
            if definition.name != name:
                definition.parse(raw)  # listener.name.<l>.<config>: checked as <config>
        self._merge()
        self._validate()

    @classmethod
    def from_file(cls, path, overrides: Mapping[str, str] | None = None) -> BrokerConfig:
        with open(path, encoding="utf-8") as handle:
            props = parse_properties(handle.read())
        props.update(overrides or {})
        return cls(props)

    # Values ------------------------------------------------------------------------------
    def _merge(self) -> None:
        """Layer static, dynamic default and dynamic per-broker configs as Kafka does: a
        layer's config also hides its synonyms below it (a dynamic log.retention.hours beats
        a static log.retention.ms)."""
        merged: dict[str, Any] = {}
        sources: dict[str, int] = {}
        for layer, source in (
            (self.static, SOURCE_STATIC_BROKER),
            (self.dynamic_default, SOURCE_DYNAMIC_DEFAULT_BROKER),
            (self.dynamic_broker, SOURCE_DYNAMIC_BROKER),
        ):
            for name, value in layer.items():
                if source != SOURCE_STATIC_BROKER:
                    for synonym in config_catalog.broker_synonyms(name, False):
                        merged.pop(synonym, None)
                        sources.pop(synonym, None)
                merged[name] = value
                sources[name] = source
        self._explicit = merged
        self._sources = sources

    def get(self, name: str) -> Any:
        if name in self._explicit:
            return self._explicit[name]
        return BROKER_CONFIGS[name].default

    def source(self, name: str) -> int:
        return self._sources.get(name, SOURCE_DEFAULT)

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    @property
    def explicit(self) -> dict[str, Any]:
        """Typed values the operator or AlterConfigs set: what LogConfig.resolve reads."""
        return dict(self._explicit)

    @property
    def dynamic(self) -> dict[str, Any]:
        """Both dynamic layers, this broker's over the cluster-wide default."""
        return {**self.dynamic_default, **self.dynamic_broker}

    @property
    def broker_id(self) -> int:
        return self.get("broker.id")

    @property
    def log_dirs(self) -> list[str]:
        return list(self.get("log.dirs") or [self.get("log.dir")])

    @property
    def protocol_map(self) -> dict[str, str]:
        mapping = {}
        for item in self.get("listener.security.protocol.map"):
            name, sep, protocol = item.partition(":")
            if not sep:
                raise ConfigError(f"listener.security.protocol.map: {item!r} is not NAME:PROTOCOL")
            mapping[name.strip().upper()] = protocol.strip().upper()
        return mapping

    @property
    def listeners(self) -> list[Endpoint]:
        return [parse_endpoint(u, self.protocol_map, "listeners") for u in self.get("listeners")]

    @property
    def advertised_listeners(self) -> list[Endpoint]:
        uris = self.get("advertised.listeners")
        if not uris:
            return self.listeners
        return [parse_endpoint(u, self.protocol_map, "advertised.listeners") for u in uris]

    @property
    def inter_broker_listener_name(self) -> str:
        """inter.broker.listener.name, else the listener named after
        security.inter.broker.protocol, as Kafka resolves it."""
        name = self.get("inter.broker.listener.name")
        return (name or self.get("security.inter.broker.protocol")).strip().upper()

    @property
    def control_plane_listener_name(self) -> str | None:
        name = self.get("control.plane.listener.name")
        return name.strip().upper() if name else None

    @property
    def zookeeper_hosts(self) -> str:
        """zookeeper.connect without its chroot."""
        connect = self.get("zookeeper.connect")
        slash = connect.find("/")
        return connect if slash < 0 else connect[:slash]

    @property
    def zookeeper_chroot(self) -> str | None:
        connect = self.get("zookeeper.connect")
        slash = connect.find("/")
        if slash < 0:
            return None
        chroot = connect[slash:].rstrip("/")
        return chroot or None

    @property
    def zookeeper_connection_timeout_ms(self) -> int:
        return self.get("zookeeper.connection.timeout.ms") or self.get(
            "zookeeper.session.timeout.ms"
        )

    def log_config(self, overrides: Mapping[str, Any] | None = None) -> LogConfig:
        return LogConfig.resolve(overrides, self.explicit)

    # Dynamic updates ---------------------------------------------------------------------
    def validate_dynamic(
        self, updates: Mapping[str, str | None], per_broker: bool = True
    ) -> dict[str, Any]:
        """Typed values of a dynamic update of this broker's (or, not `per_broker`, the
        cluster-wide default) configs, as Kafka's DynamicBrokerConfig.validate checks them;
        None deletes. `updates` is the entity's whole new set; refusals raise ConfigError."""
        problem = config_catalog.dynamic_update_errors(
            updates, per_broker, lambda name: not is_dynamic_broker_config(name)
        )
        if problem:
            raise ConfigError(problem)
        parsed = {name: _parse_dynamic(name, raw) for name, raw in updates.items()}
        candidate = self._with_layer({k: v for k, v in parsed.items() if v is not None}, per_broker)
        for name in config_catalog.THREAD_POOL_CONFIGS:
            error = config_catalog.thread_pool_error(name, self.get(name), candidate.get(name))
            if error:
                raise ConfigError(error)
        candidate._validate()  # the whole configuration must still hold together
        return parsed

    def validate_dynamic_lenient(
        self, updates: Mapping[str, str], per_broker: bool = True
    ) -> dict[str, Any]:
        """Dynamic values read back from ZooKeeper: bad ones are skipped, as Kafka skips
        them, so one bad write cannot keep the broker from starting."""
        parsed: dict[str, Any] = {}
        for name, raw in updates.items():
            problem = config_catalog.dynamic_update_errors(
                [name], per_broker, lambda n: not is_dynamic_broker_config(n)
            )
            try:
                if problem:
                    raise ConfigError(problem)
                parsed[name] = _parse_dynamic(name, raw)
            except ConfigError as exc:
                logging.getLogger(__name__).warning("ignoring dynamic broker config: %s", exc)
        return parsed

    def set_dynamic(self, values: Mapping[str, Any]) -> None:
        """Replace this broker's dynamic layer (as read back from ZooKeeper)."""
        self.set_dynamic_layers(self.dynamic_default, values)

    def set_dynamic_layers(self, default: Mapping[str, Any], per_broker: Mapping[str, Any]) -> None:
        """Replace both dynamic layers; a combination that does not hold together is not
        applied (Kafka logs it and keeps the configs it had)."""
        candidate = self._with_layer({k: v for k, v in default.items() if v is not None}, False)
        candidate = candidate._with_layer(
            {k: v for k, v in per_broker.items() if v is not None}, True
        )
        try:
            candidate._validate()
        except ConfigError as exc:
            logging.getLogger(__name__).error("dynamic broker configs not applied: %s", exc)
            return
        self.dynamic_default = candidate.dynamic_default
        self.dynamic_broker = candidate.dynamic_broker
        self._merge()

    def _with_layer(self, values: Mapping[str, Any], per_broker: bool) -> BrokerConfig:
        """A copy with one dynamic layer replaced, for validating before applying."""
        copy = object.__new__(BrokerConfig)
        copy.__dict__.update(self.__dict__)
        if per_broker:
            copy.dynamic_broker = dict(values)
        else:
            copy.dynamic_default = dict(values)
        copy._merge()
        return copy

    # Validation --------------------------------------------------------------------------
    def _validate_inter_broker_listeners(self, advertised: set[str]) -> None:
        """Kafka's rules: one of the two inter-broker keys; both listeners advertised (peers
        find them in the registration) and distinct."""
        if "inter.broker.listener.name" in self.static:
            if "security.inter.broker.protocol" in self.static:
                raise ConfigError(
                    "inter.broker.listener.name: only one of inter.broker.listener.name and "
                    "security.inter.broker.protocol should be set"
                )
        elif self.get("security.inter.broker.protocol") not in SUPPORTED_SECURITY_PROTOCOLS:
            protocol = self.get("security.inter.broker.protocol")
            raise ConfigError(
                f"security.inter.broker.protocol: security protocol {protocol} is not supported yet"
            )
        inter = self.inter_broker_listener_name
        if inter not in advertised:
            raise ConfigError(
                f"inter.broker.listener.name: {inter} must be a listener name defined in "
                f"advertised.listeners (valid: {','.join(sorted(advertised))})"
            )
        control = self.control_plane_listener_name
        if control is not None:
            if control not in advertised:
                raise ConfigError(
                    f"control.plane.listener.name: {control} must be a listener name defined "
                    f"in advertised.listeners (valid: {','.join(sorted(advertised))})"
                )
            if control == inter:
                raise ConfigError(
                    "control.plane.listener.name: must differ from the inter-broker listener "
                    f"name (both are {control})"
                )

    def _validate(self) -> None:
        if self.broker_id < 0:
            raise ConfigError("broker.id: must be set to a non-negative id")
        if not self.get("zookeeper.connect"):
            raise ConfigError("zookeeper.connect: is required")
        if not self.log_dirs:
            raise ConfigError("log.dirs: at least one log directory is required")
        listeners = self.listeners
        if not listeners:
            raise ConfigError("listeners: at least one listener is required")
        names = [endpoint.listener_name for endpoint in listeners]
        if len(set(names)) != len(names):
            raise ConfigError("listeners: each listener name may appear once")
        advertised = {endpoint.listener_name for endpoint in self.advertised_listeners}
        if not advertised <= set(names):
            raise ConfigError("advertised.listeners: names a listener that is not in listeners")
        self._validate_inter_broker_listeners(advertised)
        if self.get("message.max.bytes") > self.get("socket.request.max.bytes"):
            raise ConfigError("message.max.bytes: exceeds socket.request.max.bytes")
        queued_bytes = self.get("queued.max.request.bytes")
        if 0 < queued_bytes < self.get("socket.request.max.bytes"):
            raise ConfigError(
                "queued.max.request.bytes: must be larger or equal to socket.request.max.bytes"
            )
        overrides = parse_connection_overrides(self.get("max.connections.per.ip.overrides"))
        if self.get("max.connections.per.ip") == 0 and not overrides:
            raise ConfigError(
                "max.connections.per.ip: can be set to zero only if "
                "max.connections.per.ip.overrides property is set"
            )
        self.log_config()  # the topic defaults must resolve
        parse_host_port(self.get("admin.listener"), "admin.listener")
        from brokerd.server.failure_probes import parse_probe  # the points live there

        for spec in self.get("failure.probes"):
            parse_probe(spec)
