"""A single-broker stand-in for what the transaction coordinator uses of its peers.

`__transaction_state` partitions are real logs on disk (appends, reads and reloads go
through brokerd.log); replication (one replica), ZooKeeper metadata, producer-id blocks and
the markers' wire are replaced: markers are recorded, and answered as a test says.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from brokerd.config import BrokerConfig, LogConfig
from brokerd.log.recovery import load_log
from brokerd.protocol.errors import ErrorCode, KafkaError
from brokerd.transactions.coordinator import TransactionCoordinator
from brokerd.transactions.state_manager import TransactionStateManager
from brokerd.transactions.transaction_log import TOPIC

BROKER_ID = 1


@dataclass
class LedPartition:
    log: object
    leader_epoch: int = 0


class LocalReplicas:
    def __init__(self, directory: Path):
        self.directory = directory
        self.leaders: dict[tuple[str, int], LedPartition] = {}
        self.replication_error = ErrorCode.none

    def lead(self, partition: int, epoch: int = 0) -> LedPartition:
        path = self.directory / f"{TOPIC}-{partition}"
        path.mkdir(parents=True, exist_ok=True)
        led = LedPartition(load_log(path, LogConfig(), had_clean_shutdown=True), epoch)
        self.leaders[(TOPIC, partition)] = led
        return led

    def resign(self, partition: int) -> None:
        self.leaders.pop((TOPIC, partition)).log.close()

    def close(self) -> None:
        for partition in [p for _, p in self.leaders]:
            self.resign(partition)

    def leader(self, topic: str, partition: int) -> LedPartition:
        found = self.leaders.get((topic, partition))
        if found is None:
            raise KafkaError(ErrorCode.not_leader_or_follower)
        return found

    def append(self, partition: LedPartition, records: bytes, acks: int):
        assert acks == -1
        return partition.log.append_as_leader(records, leader_epoch=partition.leader_epoch)

    async def wait_for_replication(self, partition, required_offset: int, timeout: float) -> int:
        return self.replication_error


@dataclass
class Topic:
    partition_count: int


@dataclass
class Leader:
    leader: int


@dataclass
class LocalMetadata:
    partitions: int = 1
    brokers: dict = field(default_factory=lambda: {BROKER_ID: object()})

    def topic(self, name: str):
        return Topic(self.partitions)

    def partition_state(self, topic: str, partition: int):
        return Leader(BROKER_ID)


class ProducerIds:
    def __init__(self, start: int = 1000):
        self._ids = itertools.count(start)

    async def next_id(self) -> int:
        return next(self._ids)


class RecordedMarkers:
    """Records each transaction's markers; `hold` keeps them unwritten until released."""

    def __init__(self):
        self.sent: list[tuple[int, int, bool, int, frozenset]] = []
        self.hold = False
        self.released = asyncio.Event()

    async def write_markers(
        self, producer_id, producer_epoch, commit, coordinator_epoch, partitions, **checks
    ) -> bool:
        self.sent.append(
            (producer_id, producer_epoch, commit, coordinator_epoch, frozenset(partitions))
        )
        if self.hold:
            await self.released.wait()
        return checks["still_coordinator"]()

    async def close(self) -> None:
        pass


def transaction_config(**overrides):
    props = {"broker.id": "1", "zookeeper.connect": "localhost:2181"}
    props.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
    return BrokerConfig(props).transactions


def coordinator(replicas, markers=None, partitions: int = 1, **config) -> TransactionCoordinator:
    metadata = LocalMetadata(partitions)
    txn_config = transaction_config(**config)

    async def create_topic(*args, **kwargs):
        raise AssertionError("the topic exists")

    manager = TransactionStateManager(replicas, metadata, txn_config, create_topic)
    return TransactionCoordinator(
        manager,
        markers or RecordedMarkers(),  # type: ignore[arg-type]
        ProducerIds(),
        txn_config,
        offsets_partition_for=lambda group: 7,
        topic_exists=lambda topic: True,
    )


async def started(coordinator: TransactionCoordinator) -> TransactionCoordinator:
    coordinator.start()
    for _ in range(200):
        if not coordinator.manager.is_loading:
            break
        await asyncio.sleep(0.01)
    return coordinator


async def settle() -> None:
    """Let marker tasks and their Complete writes run."""
    for _ in range(20):
        await asyncio.sleep(0)
