"""What the replication layer reports to the broker's traffic counters (Kafka's
BrokerTopicStats, kept by the admin layer above): every leader append, whatever its origin
(a client's produce, a coordinator's offsets or transaction state, a transaction marker), as
Kafka's ReplicaManager.appendToLocalLog marks BytesInPerSec and MessagesInPerSec for each;
and the bytes a follower appended from its leaders (ReplicationBytesInPerSec)."""

from __future__ import annotations

from typing import Protocol


class ReplicationStats(Protocol):
    def appended(self, topic: str, size: int, records: int) -> None:
        """A leader append of `records` records in `size` bytes of batches to `topic`."""

    def replicated_in(self, size: int) -> None:
        """A follower appended `size` bytes of batches fetched from a leader."""


class NoStats:
    """Counts nothing (tests and tools that build a ReplicaManager alone)."""

    def appended(self, topic: str, size: int, records: int) -> None:
        pass

    def replicated_in(self, size: int) -> None:
        pass
