"""What a coordinator kept in an internal topic uses of its peers, as structural types.

The group coordinator (`__consumer_offsets`) and the transaction coordinator
(`__transaction_state`) both write their state to partitions this broker leads, wait for the
ISR, read the partition back on loading and create the topic on first use. The replica
manager, the metadata cache and topic creation live in layers neither may import
(replication is their peer, the server is above them); these Protocols name the few members
they touch, so the composition root hands them the real objects and a test small ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol


class ProducerEntry(Protocol):
    @property
    def producer_epoch(self) -> int: ...

    @property
    def last_seq(self) -> int: ...


class ProducerStates(Protocol):
    def last_entry(self, producer_id: int) -> ProducerEntry | None: ...


class PartitionLog(Protocol):
    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def producer_state(self) -> ProducerStates: ...

    def read_batches(self, start_offset: int = 0, max_offset: int | None = None) -> Iterable: ...


class LedPartition(Protocol):
    @property
    def log(self) -> PartitionLog: ...

    @property
    def leader_epoch(self) -> int: ...


class AppendResult(Protocol):
    @property
    def last_offset(self) -> int: ...


class CoordinatorReplicas(Protocol):
    """The replica manager's leader-side operations on the coordinator's partitions."""

    @property
    def leaders(self) -> Mapping[tuple[str, int], LedPartition]: ...

    def leader(self, topic: str, partition: int) -> LedPartition:
        """The led partition, or raises the KafkaError a client would get."""
        ...

    # The partition is one `leader` returned (Any: the concrete type is replication's).
    def append(self, partition: Any, records: bytes, acks: int) -> AppendResult: ...

    async def wait_for_replication(
        self, partition: Any, required_offset: int, timeout: float
    ) -> int: ...


class TopicView(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def topic_id(self) -> str: ...  # Kafka's base64 form

    @property
    def partition_count(self) -> int: ...


class PartitionLeader(Protocol):
    @property
    def leader(self) -> int: ...


class CoordinatorMetadata(Protocol):
    """The metadata cache's view of topics, partition leaders and live brokers."""

    @property
    def brokers(self) -> Mapping[int, Any]: ...

    # Moves on whenever a topic appears, goes or may have changed its partition count.
    @property
    def topics_version(self) -> int: ...

    def topic(self, name: str) -> TopicView | None: ...

    def topic_by_id(self, topic_id: str) -> TopicView | None: ...

    def partition_state(self, topic: str, partition: int) -> PartitionLeader | None: ...


class CreateTopic(Protocol):
    """Creates a topic as CreateTopics does; the created topic's metadata comes last."""

    async def __call__(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str | None] | None = None,
    ) -> tuple[Any, Any, TopicView | None]: ...
