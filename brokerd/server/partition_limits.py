"""How many partitions one creation may add: checked before any assignment is made.

A CreateTopics or CreatePartitions request names its partition count in 4 bytes; the
assignment, the znodes and the logs it asks for are made only once the count passes:
- at most MAX_PARTITIONS_PER_REQUEST new partitions in one topic's creation or growth, as
  Kafka's controller refuses an "excessively large batch operation" (POLICY_VIOLATION);
- the cluster's partitions within `max.partitions`, each broker's replicas within
  `max.broker.partitions` (KIP-578's names; unlimited by default, as in Kafka);
- every partition directory name (`<topic>-<partition>`) within the file system's 255 bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from brokerd.config import BrokerConfig
from brokerd.coordination.metadata import MetadataCache
from brokerd.log.log import dir_name
from brokerd.log.manager import MAX_DIR_NAME_BYTES
from brokerd.protocol.errors import ErrorCode, KafkaError

# Kafka's QuorumController.MAX_RECORDS_PER_USER_OP: one record per new partition.
MAX_PARTITIONS_PER_REQUEST = 10_000


def check_new_partitions(
    config: BrokerConfig,
    metadata: MetadataCache,
    local_id: int,
    topic: str | None,
    count: int,
    replication_factor: int,
    first_partition: int,
) -> None:
    """Refuse `count` new partitions of `replication_factor` replicas before they are laid
    out (`local_id` counts as the one live broker when none is registered yet)."""
    if count > MAX_PARTITIONS_PER_REQUEST:
        raise KafkaError(
            ErrorCode.policy_violation, "Unable to perform excessively large batch operation."
        )
    if topic is not None:
        longest = dir_name(topic, first_partition + count - 1)
        if len(longest.encode()) > MAX_DIR_NAME_BYTES:
            raise KafkaError(
                ErrorCode.invalid_partitions,
                f"Partition directory {longest!r} would be longer than the file system's "
                f"{MAX_DIR_NAME_BYTES} bytes.",
            )
    held = _partition_count(metadata.topics.values())
    limit = config.server.max_partitions
    if held + count > limit:
        raise KafkaError(
            ErrorCode.policy_violation,
            f"Adding {count} partitions would exceed max.partitions={limit}: the cluster "
            f"has {held}.",
        )
    per_broker = config.server.max_broker_partitions
    live = list(metadata.brokers) or [local_id]
    held_by = _replica_counts(metadata)
    room = sum(max(per_broker - held_by[b], 0) for b in live)
    if count * replication_factor > room:
        raise KafkaError(
            ErrorCode.policy_violation,
            f"Adding {count} partitions with replication factor {replication_factor} would "
            f"exceed max.broker.partitions={per_broker} on {len(live)} broker(s).",
        )


def check_broker_limit(
    config: BrokerConfig, metadata: MetadataCache, assignment: Mapping[int, Sequence[int]]
) -> None:
    """Refuse an assignment that puts more than max.broker.partitions on any broker."""
    limit = config.server.max_broker_partitions
    held = _replica_counts(metadata)
    added = Counter(r for replicas in assignment.values() for r in replicas)
    for broker_id, count in sorted(added.items()):
        if held[broker_id] + count > limit:
            raise KafkaError(
                ErrorCode.policy_violation,
                f"Placing {count} more partition replicas on broker {broker_id} would exceed "
                f"max.broker.partitions={limit}: it holds {held[broker_id]}.",
            )


def _partition_count(topics) -> int:
    return sum(len(info.assignment) for info in topics)


def _replica_counts(metadata: MetadataCache) -> Counter:
    return Counter(
        r
        for info in list(metadata.topics.values())
        for replicas in info.assignment.values()
        for r in replicas
    )
