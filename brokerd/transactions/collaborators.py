"""What the transaction coordinator uses from its peers, as structural types.

The replica manager, the metadata cache, topic creation and the producer-id blocks live in
layers (or beside this package) that it reaches only through these Protocols, so the
composition root hands it the real objects and a test small ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol


class PartitionLog(Protocol):
    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    def read_batches(self, start_offset: int = 0, max_offset: int | None = None) -> Iterable: ...


class LedPartition(Protocol):
    @property
    def log(self) -> PartitionLog: ...

    @property
    def leader_epoch(self) -> int: ...


class AppendResult(Protocol):
    @property
    def last_offset(self) -> int: ...


class StateReplicas(Protocol):
    """The replica manager's leader-side operations on `__transaction_state`."""

    @property
    def leaders(self) -> Mapping[tuple[str, int], LedPartition]: ...

    def leader(self, topic: str, partition: int) -> LedPartition: ...

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


class StateMetadata(Protocol):
    """The metadata cache's view of topics, partition leaders and live brokers."""

    @property
    def brokers(self) -> Mapping[int, Any]: ...

    def topic(self, name: str) -> TopicView | None: ...

    def partition_state(self, topic: str, partition: int) -> PartitionLeader | None: ...


class CreateTopic(Protocol):
    async def __call__(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str | None] | None = None,
    ) -> tuple[Any, Any, TopicView | None]: ...


class ProducerIds(Protocol):
    async def next_id(self) -> int: ...
