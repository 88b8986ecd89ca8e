"""Broker-level log configs (Kafka's ServerLogConfigs): log directories, topic creation
defaults, the log manager's schedules, and the `log.*` synonyms that supply topic defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from brokerd.config import catalog
from brokerd.config.definitions import LONG_MAX, ConfigDef, by_name
from brokerd.config.topic import SYNONYM_SCALE, TOPIC_CONFIGS

DEFINITIONS = by_name(
    [
        ConfigDef("log.dir", "string", "/tmp/kafka-logs", "log directory", read_only=True),
        ConfigDef("log.dirs", "list", None, "log directories (default: log.dir)", read_only=True),
        ConfigDef("num.partitions", "int", 1, "partitions of auto-created topics", at_least=1),
        ConfigDef(
            "auto.create.topics.enable",
            "boolean",
            True,
            "create unknown topics on Metadata requests",
            read_only=True,
        ),
        ConfigDef(
            "log.retention.check.interval.ms",
            "long",
            300000,
            "how often retention runs",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "log.flush.offset.checkpoint.interval.ms",
            "int",
            60000,
            "how often recovery points are checkpointed",
            at_least=0,
            read_only=True,
        ),
        ConfigDef(
            "num.recovery.threads.per.data.dir",
            "int",
            1,
            "threads per log dir loading (and recovering) the logs at start-up and closing "
            "them at shutdown; a dynamic change applies at the next start-up or shutdown",
            at_least=1,
        ),
        ConfigDef(
            "num.replica.alter.log.dirs.threads",
            "int",
            None,
            "threads copying replicas moved between log dirs (AlterReplicaLogDirs); "
            "unset: one per log dir",
            read_only=True,
        ),
    ]
)

_BROKER_UNIT_DEFAULTS: dict[str, Any] = {
    # Kafka's broker defaults for synonyms in other units than the topic config.
    "log.retention.hours": 168,
    "log.roll.hours": 168,
    "log.roll.jitter.hours": 0,
    "log.flush.scheduler.interval.ms": LONG_MAX,
}


def _scaled_minimum(synonym: str) -> int:
    """The least value of an hours or minutes synonym: Kafka's, else -1 (unlimited)."""
    spec = catalog.BROKER_SPECS.get(synonym)
    minimum = catalog.constraints_of(spec.valid).at_least if spec else None
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
            scaled = synonym in SYNONYM_SCALE
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


# Read through BrokerConfig.log (LogConfig), resolved with the topic configs they supply.
TOPIC_SYNONYM_DEFINITIONS = by_name(_topic_synonym_defs())


@dataclass(frozen=True)
class ServerLogConfig:
    log_dir: str
    log_dirs: tuple[str, ...] | None
    num_partitions: int
    auto_create_topics_enable: bool
    log_retention_check_interval_ms: int
    log_flush_offset_checkpoint_interval_ms: int
    num_recovery_threads_per_data_dir: int
    num_replica_alter_log_dirs_threads: int | None

    @property
    def dirs(self) -> list[str]:
        """log.dirs, else log.dir."""
        return list(self.log_dirs or [self.log_dir])
