"""Consumer group coordinator and offsets topic configs (Kafka's GroupCoordinatorConfig)."""

from __future__ import annotations

from dataclasses import dataclass

from brokerd.config.definitions import ConfigDef, ConfigError, by_name

MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


def _migration_policy(name: str, value) -> None:
    """Kafka's ConfigDef.CaseInsensitiveValidString over ConsumerGroupMigrationPolicy."""
    if str(value).lower() not in MIGRATION_POLICIES:
        raise ConfigError(f"{name}: {value!r} is not one of {', '.join(MIGRATION_POLICIES)}")


DEFINITIONS = by_name(
    [
        ConfigDef(
            "group.min.session.timeout.ms",
            "int",
            6000,
            "the smallest session timeout a group member may ask for",
            read_only=True,
        ),
        ConfigDef(
            "group.max.session.timeout.ms",
            "int",
            1800000,
            "the largest session timeout a group member may ask for",
            read_only=True,
        ),
        ConfigDef(
            "group.initial.rebalance.delay.ms",
            "int",
            3000,
            "delay of a new group's first rebalance",
            read_only=True,
        ),
        ConfigDef(
            "group.max.size",
            "int",
            2147483647,
            "the most members a consumer group may have",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "offset.metadata.max.bytes",
            "int",
            4096,
            "the longest metadata string an offset commit may carry",
            read_only=True,
        ),
        ConfigDef(
            "offsets.retention.minutes",
            "int",
            10080,
            "how long committed offsets of an empty group are kept",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "offsets.retention.check.interval.ms",
            "long",
            600000,
            "how often expired committed offsets are looked for",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "offsets.topic.num.partitions",
            "int",
            50,
            "partitions of __consumer_offsets",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "offsets.topic.segment.bytes",
            "int",
            104857600,
            "segment.bytes of __consumer_offsets",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "offsets.topic.replication.factor",
            "short",
            3,
            "replication factor of __consumer_offsets",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "offsets.commit.timeout.ms",
            "int",
            5000,
            "how long an offset commit or group write waits for the offsets topic's replicas",
            at_least=1,
            read_only=True,
        ),
        # The consumer group protocol (KIP-848): Kafka's GroupCoordinatorConfig names.
        ConfigDef(
            "group.consumer.session.timeout.ms",
            "int",
            45000,
            "the timeout to detect failed members of a consumer group (KIP-848)",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "group.consumer.min.session.timeout.ms",
            "int",
            45000,
            "the smallest consumer.session.timeout.ms a group may be given",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "group.consumer.max.session.timeout.ms",
            "int",
            60000,
            "the largest consumer.session.timeout.ms a group may be given",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "group.consumer.heartbeat.interval.ms",
            "int",
            5000,
            "the heartbeat interval given to the members of a consumer group",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "group.consumer.min.heartbeat.interval.ms",
            "int",
            5000,
            "the smallest consumer.heartbeat.interval.ms a group may be given",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "group.consumer.max.heartbeat.interval.ms",
            "int",
            15000,
            "the largest consumer.heartbeat.interval.ms a group may be given",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "group.consumer.max.size",
            "int",
            2147483647,
            "the most members a consumer group (KIP-848) may have",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "group.consumer.assignors",
            "list",
            [
                "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
                "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
            ],
            "the server-side assignors (class names or uniform, range); the first is the default",
            read_only=True,
        ),
        ConfigDef(
            "group.consumer.migration.policy",
            "string",
            "bidirectional",
            "converting a non-empty classic group to a consumer group when a member of the "
            "consumer protocol joins it (upgrade), and back when its last such member leaves "
            "(downgrade): bidirectional, upgrade, downgrade or disabled (case-insensitive)",
            read_only=True,
            validator=_migration_policy,
        ),
    ]
)


@dataclass(frozen=True)
class GroupCoordinatorConfig:
    group_min_session_timeout_ms: int
    group_max_session_timeout_ms: int
    group_initial_rebalance_delay_ms: int
    group_max_size: int
    offset_metadata_max_bytes: int
    offsets_retention_minutes: int
    offsets_retention_check_interval_ms: int
    offsets_topic_num_partitions: int
    offsets_topic_segment_bytes: int
    offsets_topic_replication_factor: int
    offsets_commit_timeout_ms: int
    group_consumer_session_timeout_ms: int
    group_consumer_min_session_timeout_ms: int
    group_consumer_max_session_timeout_ms: int
    group_consumer_heartbeat_interval_ms: int
    group_consumer_min_heartbeat_interval_ms: int
    group_consumer_max_heartbeat_interval_ms: int
    group_consumer_max_size: int
    group_consumer_assignors: tuple[str, ...]
    group_consumer_migration_policy: str

    @property
    def consumer_group_upgrade_enabled(self) -> bool:
        return self.group_consumer_migration_policy.lower() in ("upgrade", "bidirectional")

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
