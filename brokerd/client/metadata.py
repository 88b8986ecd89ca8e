"""A snapshot of cluster metadata: brokers, controller, topics, partitions and their leaders."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .errors import error_code


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    error_code: int = 0

    @property
    def error_name(self) -> str:
        return error_code(self.error_code).name.upper()


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: dict[int, PartitionInfo]
    error_code: int = 0

    @property
    def error_name(self) -> str:
        return error_code(self.error_code).name.upper()


@dataclass(slots=True)
class ClusterMetadata:
    cluster_id: str | None = None
    controller_id: int = -1
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    updated_at: float = 0.0  # time.monotonic() of the last refresh

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        info = self.topics.get(topic)
        return None if info is None else info.partitions.get(partition)

    def leader_of(self, topic: str, partition: int) -> int | None:
        info = self.partition(topic, partition)
        if info is None or info.leader < 0 or info.leader not in self.brokers:
            return None
        return info.leader

    def merge(self, response: Any, all_topics: bool) -> None:
        """Take a Metadata response; an all-topics answer replaces the topic list."""
        self.cluster_id = response.cluster_id if hasattr(response, "cluster_id") else None
        self.controller_id = int(getattr(response, "controller_id", -1))
        self.brokers = {
            int(b.node_id): BrokerInfo(int(b.node_id), b.host, int(b.port), b.rack)
            for b in response.brokers
        }
        topics = parse_topics(response)
        if all_topics:
            self.topics = topics
        else:
            self.topics.update(topics)
            for topic in response.topics:
                if error_code(topic.error_code).name == "unknown_topic_or_partition":
                    self.topics.pop(topic.name, None)
        self.updated_at = time.monotonic()


def parse_topics(response: Any) -> dict[str, TopicInfo]:
    topics = {}
    for topic in response.topics:
        if topic.error_code and not topic.partitions:
            continue  # unknown or unavailable: nothing to route to
        partitions = {
            int(p.partition_index): PartitionInfo(
                topic=topic.name,
                partition=int(p.partition_index),
                leader=int(p.leader_id),
                leader_epoch=int(getattr(p, "leader_epoch", -1)),
                replicas=tuple(int(r) for r in p.replica_nodes),
                isr=tuple(int(r) for r in p.isr_nodes),
                offline_replicas=tuple(int(r) for r in getattr(p, "offline_replicas", ())),
                error_code=int(p.error_code),
            )
            for p in topic.partitions
        }
        topic_id = getattr(topic, "topic_id", None)
        if topic_id is not None and topic_id.int == 0:
            topic_id = None
        topics[topic.name] = TopicInfo(
            name=topic.name,
            topic_id=topic_id,
            is_internal=bool(getattr(topic, "is_internal", False)),
            partitions=partitions,
            error_code=int(topic.error_code),
        )
    return topics
