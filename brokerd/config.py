"""Broker and topic configs with Kafka's names, types, defaults and validation.

A topic config resolves as Kafka does: the topic's own override, else the broker's
`log.*` synonym (for retention, `log.retention.ms` over `.minutes` over `.hours`), else the
default. `LogConfig` is the resolved, typed view the log reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

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


PARSERS: dict[str, Callable[[str], Any]] = {
    "int": lambda s: int(s.strip()),
    "long": lambda s: int(s.strip()),
    "short": lambda s: int(s.strip()),
    "double": lambda s: float(s.strip()),
    "boolean": _parse_bool,
    "string": lambda s: s.strip(),
    "list": _parse_list,
    "password": lambda s: s,
}

# Kafka's DescribeConfigs config types (KIP-569).
TYPE_IDS = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7}


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

    def render(self, value: Any) -> str | None:
        """A value as Kafka prints it in DescribeConfigs."""
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return ",".join(value)
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
            "log.flush.interval.ms",
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
            "log.roll.jitter.ms",
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
}


def validate_topic_overrides(overrides: Mapping[str, str]) -> dict[str, Any]:
    """Parse topic-level overrides; unknown names and bad values raise ConfigError."""
    parsed = {}
    for name, raw in overrides.items():
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise ConfigError(f"{name}: unknown topic config")
        parsed[name] = definition.parse(raw)
    return parsed


def resolve_topic_config(
    name: str, overrides: Mapping[str, Any], broker: Mapping[str, Any] | None = None
) -> tuple[Any, int]:
    """(value, source) of one topic config: override, broker synonym, or default."""
    definition = TOPIC_CONFIGS[name]
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
