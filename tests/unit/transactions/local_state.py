"""The single-broker stand-in (tests/unit/coordinator_stand_ins.py) for the transaction
coordinator: `__transaction_state` partitions, producer-id blocks, and the markers' wire
replaced: markers are recorded, and answered as a test says."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from brokerd.config import BrokerConfig
from brokerd.transactions.coordinator import TransactionCoordinator
from brokerd.transactions.state_manager import TransactionStateManager
from brokerd.transactions.transaction_log import TOPIC
from tests.unit import coordinator_stand_ins as stand_ins
from tests.unit.coordinator_stand_ins import BROKER_ID, Leader, Topic


class LocalReplicas(stand_ins.LocalReplicas):
    """Leads the `__transaction_state` partitions opened with `lead`."""

    def __init__(self, directory: Path):
        super().__init__(directory, TOPIC)


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
