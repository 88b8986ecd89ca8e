"""A single-broker stand-in for what a coordinator kept in an internal topic uses of its peers
(brokerd/coordinator_partitions.py).

The topic's partitions are real logs on disk (appends, reads and reloads go through
brokerd.log); what the stand-in replaces is replication (one replica: the ISR has a record
once it is appended, unless a test says otherwise) and ZooKeeper-backed metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from brokerd.config import LogConfig
from brokerd.log.recovery import load_log
from brokerd.protocol.errors import ErrorCode, KafkaError

BROKER_ID = 1


@dataclass
class LedPartition:
    log: object
    leader_epoch: int = 0


class LocalReplicas:
    """Leads the partitions of `topic` opened with `lead`."""

    def __init__(self, directory: Path, topic: str):
        self.directory = directory
        self.topic = topic
        self.leaders: dict[tuple[str, int], LedPartition] = {}
        self.replication_error = ErrorCode.none  # what acks=all waits end with
        self.append_error = ErrorCode.none  # appends refused with it (nothing written)
        self.appends = 0

    def lead(self, partition: int, epoch: int = 0) -> LedPartition:
        path = self.directory / f"{self.topic}-{partition}"
        path.mkdir(parents=True, exist_ok=True)
        led = LedPartition(load_log(path, LogConfig(), had_clean_shutdown=True), epoch)
        self.leaders[(self.topic, partition)] = led
        return led

    def resign(self, partition: int) -> None:
        self.leaders.pop((self.topic, partition)).log.close()

    def close(self) -> None:
        for partition in [p for _, p in self.leaders]:
            self.resign(partition)

    def leader(self, topic: str, partition: int) -> LedPartition:
        found = self.leaders.get((topic, partition))
        if found is None:
            raise KafkaError(ErrorCode.not_leader_or_follower)
        return found

    def append(self, partition: LedPartition, records: bytes, acks: int):
        assert acks == -1  # coordinator writes wait for the ISR
        self.appends += 1
        if self.append_error:
            raise KafkaError(self.append_error)
        return partition.log.append_as_leader(records, leader_epoch=partition.leader_epoch)

    async def wait_for_replication(self, partition, required_offset: int, timeout: float) -> int:
        return self.replication_error


@dataclass
class Topic:
    partition_count: int
    name: str = ""
    topic_id: str = ""  # Kafka's base64 form; "" for none


@dataclass
class Leader:
    leader: int
