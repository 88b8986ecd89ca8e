"""Transaction coordinator and transaction state topic configs (Kafka's TransactionLogConfig
and TransactionStateManagerConfig)."""

from __future__ import annotations

from dataclasses import dataclass

from brokerd.config.definitions import ConfigDef, by_name

DEFINITIONS = by_name(
    [
        ConfigDef(
            "transactional.id.expiration.ms",
            "int",
            604800000,
            "how long a transactional id without a transaction status update is kept",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "transaction.max.timeout.ms",
            "int",
            900000,
            "the largest transaction.timeout.ms a producer may ask for",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "transaction.state.log.num.partitions",
            "int",
            50,
            "partitions of __transaction_state",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "transaction.state.log.replication.factor",
            "short",
            3,
            "replication factor of __transaction_state",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "transaction.state.log.segment.bytes",
            "int",
            104857600,
            "segment.bytes of __transaction_state",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "transaction.state.log.min.isr",
            "int",
            2,
            "min.insync.replicas of __transaction_state",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "transaction.state.log.load.buffer.size",
            "int",
            5242880,
            "batch size for reading __transaction_state when loading a partition",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            "int",
            10000,
            "how often transactions past their timeout are looked for and aborted",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            "int",
            3600000,
            "how often transactional ids past transactional.id.expiration.ms are removed",
            at_least=1,
            read_only=True,
        ),
    ]
)


@dataclass(frozen=True)
class TransactionConfig:
    transactional_id_expiration_ms: int
    transaction_max_timeout_ms: int
    transaction_state_log_num_partitions: int
    transaction_state_log_replication_factor: int
    transaction_state_log_segment_bytes: int
    transaction_state_log_min_isr: int
    transaction_state_log_load_buffer_size: int
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int
    transaction_remove_expired_transaction_cleanup_interval_ms: int
