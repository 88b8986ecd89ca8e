"""A single-broker stand-in for what the group metadata manager uses of its peers.

`__consumer_offsets` partitions are real logs on disk (appends, reads and reloads go
through brokerd.log); what the stand-in replaces is replication (one replica: the ISR has a
record once it is appended, unless a test says otherwise) and ZooKeeper-backed metadata.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from brokerd.config import BrokerConfig, GroupCoordinatorConfig, LogConfig
from brokerd.groups import offsets_topic
from brokerd.groups.metadata_manager import GroupMetadataManager
from brokerd.log.recovery import load_log
from brokerd.protocol.errors import ErrorCode, KafkaError

BROKER_ID = 1


@dataclass
class LedPartition:
    log: object


class LocalReplicas:
    """Leads the `__consumer_offsets` partitions opened with `lead`."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.leaders: dict[tuple[str, int], LedPartition] = {}
        self.replication_error = ErrorCode.none  # what acks=all waits end with
        self.appends = 0

    def lead(self, partition: int) -> LedPartition:
        path = self.directory / f"{offsets_topic.TOPIC}-{partition}"
        path.mkdir(parents=True, exist_ok=True)
        led = LedPartition(load_log(path, LogConfig(), had_clean_shutdown=True))
        self.leaders[(offsets_topic.TOPIC, partition)] = led
        return led

    def resign(self, partition: int) -> None:
        led = self.leaders.pop((offsets_topic.TOPIC, partition))
        led.log.close()

    def close(self) -> None:
        for partition in [p for _, p in self.leaders]:
            self.resign(partition)

    def leader(self, topic: str, partition: int) -> LedPartition:
        found = self.leaders.get((topic, partition))
        if found is None:
            raise KafkaError(ErrorCode.not_leader_or_follower)
        return found

    def append(self, partition: LedPartition, records: bytes, acks: int):
        assert acks == -1  # group writes must wait for the ISR
        self.appends += 1
        return partition.log.append_as_leader(records, leader_epoch=0)

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
    brokers: dict[int, object] = field(default_factory=lambda: {BROKER_ID: object()})
    topics: dict[str, Topic] = field(default_factory=dict)
    created: list[tuple] = field(default_factory=list)

    def topic(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def partition_state(self, topic: str, partition: int) -> Leader | None:
        if topic not in self.topics:
            return None
        return Leader(BROKER_ID)

    async def create_topic(self, name, num_partitions, replication_factor, configs=None):
        self.created.append((name, num_partitions, replication_factor, dict(configs or {})))
        if name in self.topics:
            raise KafkaError(ErrorCode.topic_already_exists)
        self.topics[name] = Topic(num_partitions)
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
