"""Log cleaner configs (Kafka's CleanerConfig)."""

from __future__ import annotations

from dataclasses import dataclass

from brokerd.config.definitions import ConfigDef, by_name

DEFINITIONS = by_name(
    [
        ConfigDef("log.cleaner.enable", "boolean", True, "run the log cleaner", read_only=True),
        ConfigDef(
            "log.cleaner.dedupe.buffer.size",
            "long",
            134217728,
            "memory for the cleaner's key-to-offset map",
            at_least=1024,
            read_only=True,
        ),
        ConfigDef(
            "log.cleaner.backoff.ms",
            "long",
            15000,
            "how long the cleaner sleeps when no log needs cleaning",
            at_least=0,
            read_only=True,
        ),
    ]
)


@dataclass(frozen=True)
class CleanerConfig:
    log_cleaner_enable: bool
    log_cleaner_dedupe_buffer_size: int
    log_cleaner_backoff_ms: int
