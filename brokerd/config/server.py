"""Broker-wide server configs (Kafka's ServerConfigs), and KIP-578's partition limits."""

from __future__ import annotations

from dataclasses import dataclass

from brokerd.config.definitions import LONG_MAX, ConfigDef, by_name

DEFINITIONS = by_name(
    [
        ConfigDef("broker.id", "int", -1, "this broker's id in the cluster", read_only=True),
        ConfigDef("broker.rack", "string", None, "rack of this broker", read_only=True),
        ConfigDef("delete.topic.enable", "boolean", True, "allow topic deletion", read_only=True),
        ConfigDef(
            "controlled.shutdown.enable",
            "boolean",
            True,
            "on SIGTERM, ask the controller to move leadership away first",
            read_only=True,
        ),
        ConfigDef(
            "controlled.shutdown.max.retries",
            "int",
            3,
            "ControlledShutdown attempts before stopping anyway",
            at_least=0,
            read_only=True,
        ),
        ConfigDef(
            "controlled.shutdown.retry.backoff.ms",
            "long",
            5000,
            "pause between ControlledShutdown attempts",
            at_least=0,
            read_only=True,
        ),
        ConfigDef(
            "fetch.max.bytes",
            "int",
            57671680,
            "largest Fetch response the broker builds",
            at_least=1024,
        ),
        ConfigDef(
            "max.incremental.fetch.session.cache.slots",
            "int",
            1000,
            "fetch sessions (KIP-227) kept",
            at_least=0,
            read_only=True,
        ),
        ConfigDef(
            "max.request.partition.size.limit",
            "int",
            2000,
            "partitions one DescribeTopicPartitions response holds at most (KIP-966)",
            at_least=1,
            read_only=True,
        ),
        # KIP-578's names (proposed, not in Kafka): unlimited by default, as Kafka is.
        ConfigDef(
            "max.partitions",
            "long",
            LONG_MAX,
            "partitions the cluster may hold; CreateTopics, CreatePartitions and "
            "auto-creation past it fail with POLICY_VIOLATION (KIP-578)",
            at_least=0,
            read_only=True,
        ),
        ConfigDef(
            "max.broker.partitions",
            "long",
            LONG_MAX,
            "partition replicas one broker may hold; a creation that would put more on any "
            "broker fails with POLICY_VIOLATION (KIP-578)",
            at_least=0,
            read_only=True,
        ),
    ]
)


@dataclass(frozen=True)
class ServerConfig:
    broker_id: int
    broker_rack: str | None
    delete_topic_enable: bool
    controlled_shutdown_enable: bool
    controlled_shutdown_max_retries: int
    controlled_shutdown_retry_backoff_ms: int
    fetch_max_bytes: int
    max_incremental_fetch_session_cache_slots: int
    max_request_partition_size_limit: int
    max_partitions: int
    max_broker_partitions: int
