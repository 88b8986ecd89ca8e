"""What the group metadata manager uses from its peers, as structural types.

The replica manager, the metadata cache, topic creation and the failure probes live in
layers the groups package must not import (replication and coordination are its peers, the
server is above it); these Protocols name the few members it touches, so the composition
root can hand it the real objects and a test can hand it small ones.
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
    def producer_state(self) -> ProducerStates: ...

    @property
    def log_end_offset(self) -> int: ...

    def read_batches(self, start_offset: int = 0, max_offset: int | None = None) -> Iterable: ...


class LedPartition(Protocol):
    @property
    def log(self) -> PartitionLog: ...


class AppendResult(Protocol):
    @property
    def last_offset(self) -> int: ...


class OffsetsReplicas(Protocol):
    """The replica manager's leader-side operations on `__consumer_offsets`."""

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
    def partition_count(self) -> int: ...


class PartitionLeader(Protocol):
    @property
    def leader(self) -> int: ...


class OffsetsMetadata(Protocol):
    """The metadata cache's view of topics, partition leaders and live brokers."""

    @property
    def brokers(self) -> Mapping[int, Any]: ...

    def topic(self, name: str) -> TopicView | None: ...

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


class FailurePoint(Protocol):
    async def reached(self, module: str, point: str) -> None: ...
