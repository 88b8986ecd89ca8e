"""The single-broker stand-in (tests/unit/coordinator_stand_ins.py) for the group metadata
manager: `__consumer_offsets` partitions, and metadata that creates the topic on first use."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from brokerd.config import BrokerConfig, GroupCoordinatorConfig
from brokerd.groups import offsets_topic
from brokerd.groups.metadata_manager import GroupMetadataManager
from brokerd.protocol.errors import ErrorCode, KafkaError
from tests.unit import coordinator_stand_ins as stand_ins
from tests.unit.coordinator_stand_ins import BROKER_ID, Leader, Topic


class LocalReplicas(stand_ins.LocalReplicas):
    """Leads the `__consumer_offsets` partitions opened with `lead`."""

    def __init__(self, directory: Path):
        super().__init__(directory, offsets_topic.TOPIC)


@dataclass
class LocalMetadata:
    partitions: int = 1
    brokers: dict[int, object] = field(default_factory=lambda: {BROKER_ID: object()})
    topics: dict[str, Topic] = field(default_factory=dict)
    created: list[tuple] = field(default_factory=list)
    topics_version: int = 0  # a test that changes `topics` moves it on

    def topic(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def topic_by_id(self, topic_id: str) -> Topic | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def partition_state(self, topic: str, partition: int) -> Leader | None:
        if topic not in self.topics:
            return None
        return Leader(BROKER_ID)

    async def create_topic(self, name, num_partitions, replication_factor, configs=None):
        self.created.append((name, num_partitions, replication_factor, dict(configs or {})))
        if name in self.topics:
            raise KafkaError(ErrorCode.topic_already_exists)
        self.topics[name] = Topic(num_partitions)
        self.topics_version += 1
        return {}, {}, self.topics[name]


class Probes:
    """The `group_coordinator.load` point, held until `release`."""

    def __init__(self, hold: bool = False):
        self.released = asyncio.Event()
        if not hold:
            self.released.set()

    async def reached(self, module: str, point: str) -> None:
        assert (module, point) == ("group_coordinator", "load")
        await self.released.wait()

    def release(self) -> None:
        self.released.set()


def group_config(**overrides) -> GroupCoordinatorConfig:
    """The broker's defaults for the group configs, with `overrides` by field name."""
    defaults = BrokerConfig({"broker.id": str(BROKER_ID), "zookeeper.connect": "localhost:2181"})
    return dataclasses.replace(defaults.groups, **overrides)


def manager(
    replicas: LocalReplicas,
    metadata: LocalMetadata | None = None,
    probes: Probes | None = None,
    **config,
) -> GroupMetadataManager:
    metadata = metadata or LocalMetadata(topics={offsets_topic.TOPIC: Topic(1)})
    return GroupMetadataManager(
        replicas,
        metadata,
        group_config(**config),
        create_topic=metadata.create_topic,
        probes=probes or Probes(),
    )


async def loaded(manager: GroupMetadataManager, partition: int = 0, on_loaded=None) -> None:
    """Schedule the partition's load and wait until it is done."""
    manager.schedule_load(partition, on_loaded or (lambda group: None))
    while manager.is_loading:
        await asyncio.sleep(0.001)
