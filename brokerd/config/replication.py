"""Replication and leadership configs (Kafka's ReplicationConfigs)."""

from __future__ import annotations

from dataclasses import dataclass

from brokerd.config.definitions import ConfigDef, by_name

DEFINITIONS = by_name(
    [
        ConfigDef(
            "inter.broker.listener.name",
            "string",
            None,
            "listener between brokers (default: the one named by security.inter.broker.protocol)",
            read_only=True,
        ),
        ConfigDef(
            "security.inter.broker.protocol",
            "string",
            "PLAINTEXT",
            "security protocol between brokers; only one of it and inter.broker.listener.name",
            choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
            read_only=True,
        ),
        ConfigDef(
            "default.replication.factor",
            "int",
            1,
            "replication factor of auto-created topics",
            at_least=1,
        ),
        ConfigDef(
            "replica.lag.time.max.ms",
            "long",
            30000,
            "a follower that has not caught up for this long leaves the ISR",
            at_least=1,
        ),
        ConfigDef("replica.fetch.wait.max.ms", "int", 500, "follower fetch long-poll", at_least=0),
        ConfigDef(
            "replica.high.watermark.checkpoint.interval.ms",
            "long",
            5000,
            "how often the high watermarks are written to each log dir's "
            "replication-offset-checkpoint",
            read_only=True,
        ),
        ConfigDef("replica.fetch.min.bytes", "int", 1, "follower fetch min bytes", at_least=1),
        ConfigDef(
            "replica.fetch.max.bytes",
            "int",
            1048576,
            "follower fetch bytes per partition",
            at_least=0,
        ),
        ConfigDef(
            "replica.fetch.response.max.bytes",
            "int",
            10485760,
            "follower fetch bytes per response",
            at_least=0,
        ),
        ConfigDef(
            "replica.fetch.backoff.ms", "int", 1000, "follower back-off after an error", at_least=0
        ),
        ConfigDef(
            "replica.socket.timeout.ms", "int", 30000, "follower request timeout", at_least=1
        ),
        ConfigDef(
            "controller.socket.timeout.ms", "int", 30000, "controller request timeout", at_least=1
        ),
        ConfigDef(
            "auto.leader.rebalance.enable",
            "boolean",
            True,
            "the controller moves leadership back to preferred replicas",
            read_only=True,
        ),
        ConfigDef(
            "leader.imbalance.check.interval.seconds",
            "long",
            300,
            "how often the controller checks for leader imbalance",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "leader.imbalance.per.broker.percentage",
            "int",
            10,
            "share of a broker's partitions led elsewhere that triggers a rebalance",
            at_least=0,
            read_only=True,
        ),
    ]
)


@dataclass(frozen=True)
class ReplicationConfig:
    """The inter-broker listener is resolved with the listeners (BrokerConfig)."""

    default_replication_factor: int
    replica_lag_time_max_ms: int
    replica_fetch_wait_max_ms: int
    replica_high_watermark_checkpoint_interval_ms: int
    replica_fetch_min_bytes: int
    replica_fetch_max_bytes: int
    replica_fetch_response_max_bytes: int
    replica_fetch_backoff_ms: int
    replica_socket_timeout_ms: int
    controller_socket_timeout_ms: int
    auto_leader_rebalance_enable: bool
    leader_imbalance_check_interval_seconds: int
    leader_imbalance_per_broker_percentage: int
