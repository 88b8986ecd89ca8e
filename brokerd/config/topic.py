"""Topic configs (Kafka's TopicConfig and LogConfig): definitions, validation, resolution.

A topic config resolves as Kafka does: the topic's own override, else the broker's `log.*`
synonym (for retention, `log.retention.ms` over `.minutes` over `.hours`), else the default.
`LogConfig` is the resolved, typed view the log reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from brokerd.config import catalog
from brokerd.config.definitions import (
    LONG_MAX,
    PARSERS,
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_TOPIC,
    SOURCE_STATIC_BROKER,
    ConfigDef,
    ConfigError,
    kafka_defined,
)


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
SYNONYM_SCALE = {
    "log.retention.minutes": 60_000,
    "log.retention.hours": 3_600_000,
    "log.roll.hours": 3_600_000,
    "log.roll.jitter.hours": 3_600_000,
}


# Topic configs Kafka defines that brokerd accepts, validates, stores and describes but does
# not apply (DescribeConfigs' documentation and docs/configs.md say so).
UNAPPLIED_TOPIC_CONFIGS: dict[str, ConfigDef] = {
    name: kafka_defined(spec)
    for name, spec in catalog.TOPIC_SPECS.items()
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
            if synonym in SYNONYM_SCALE:  # hours or minutes; a boolean stays a boolean
                value = value * SYNONYM_SCALE[synonym]
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
        values: dict[str, Any] = {}
        for name in TOPIC_CONFIGS:
            value, _ = resolve_topic_config(name, overrides, broker)
            field = name.replace(".", "_")
            values[field] = tuple(value) if isinstance(value, list) else value
        return cls(**values)

    def with_overrides(self, **changes: Any) -> LogConfig:
        return dataclasses.replace(self, **changes)
