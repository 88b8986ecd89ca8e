"""What the platform asks of a cluster, over brokerd.client (the Kafka protocol).

`KafkaOps` wraps one connected `brokerd.client` Cluster; every method is async so the live
collector reuses one long-lived client, while request handlers call `with_cluster`, which
opens a client for the duration of one request (no event-loop state shared across threads).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
from django.conf import settings

from brokerd.client.admin import AdminClient
from brokerd.client.cluster import Cluster as KafkaCluster
from brokerd.client.errors import KafkaResponseError, check
from brokerd.client.metadata import ClusterMetadata
from brokerd.client.requests import Nested
from brokerd.records.batch import SimpleRecord, build_batch, iter_batches

from .models import Cluster

T = TypeVar("T")

PRODUCE, FETCH, LIST_OFFSETS = 0, 1, 2
CREATE_TOPICS, DELETE_TOPICS = 19, 20
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 44
TOPIC_RESOURCE = 2
LATEST, EARLIEST = -1, -2
CONFIG_SOURCES = {
    -1: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "CLIENT_METRICS_CONFIG",
    8: "GROUP_CONFIG",
}
ALTER_OPERATIONS = {"SET": 0, "DELETE": 1, "APPEND": 2, "SUBTRACT": 3}


def _ms(value: float) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


@dataclass(frozen=True, slots=True)
class BrowsedRecord:
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


class KafkaOps:
    def __init__(self, client: KafkaCluster):
        self.client = client

    @property
    def admin(self) -> AdminClient:
        """brokerd.client's admin calls (consumer groups, offsets) on the same connections."""
        return AdminClient(self.client)

    @property
    def metadata(self) -> ClusterMetadata:
        return self.client.metadata

    async def refresh(self, topics: list[str] | None = None) -> ClusterMetadata:
        return await self.client.refresh_metadata(topics)

    # Topics ----------------------------------------------------------------------------
    async def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        configs: dict[str, str] | None = None,
        validate_only: bool = False,
    ) -> None:
        topic = Nested(
            "CreatableTopic",
            name=name,
            num_partitions=partitions,
            replication_factor=replication_factor,
            assignments=[],
            configs=[
                Nested("CreatableTopicConfig", name=k, value=v) for k, v in (configs or {}).items()
            ],
        )
        response = await self.client.call_controller(
            CREATE_TOPICS,
            {"topics": [topic], "timeout": _ms(30_000), "validate_only": validate_only},
        )
        (result,) = response.topics
        check(result.error_code, getattr(result, "error_message", None), f"topic {name}")
        await self.refresh([name])

    async def delete_topic(self, name: str) -> None:
        response = await self.client.call_controller(
            DELETE_TOPICS,
            {
                "topics": [Nested("DeleteTopicState", name=name, topic_id=None)],
                "topic_names": [name],
                "timeout": _ms(30_000),
            },
        )
        (result,) = response.responses
        check(result.error_code, getattr(result, "error_message", None), f"topic {name}")
        self.client.metadata.topics.pop(name, None)

    # Configs ---------------------------------------------------------------------------
    async def describe_topic_configs(self, name: str) -> list[dict[str, Any]]:
        response = await self.client.call_any(
            DESCRIBE_CONFIGS,
            {
                "resources": [
                    Nested(
                        "DescribeConfigsResource",
                        resource_type=TOPIC_RESOURCE,
                        resource_name=name,
                        configuration_keys=None,
                    )
                ],
                "include_synonyms": True,
                "include_documentation": False,
            },
        )
        (result,) = response.results
        check(result.error_code, result.error_message, f"topic {name}")
        return [
            {
                "name": c.name,
                "value": None if c.is_sensitive else c.value,
                "is_read_only": bool(c.read_only),
                "is_sensitive": bool(c.is_sensitive),
                "is_default": int(getattr(c, "config_source", 5)) == 5,
                "source": CONFIG_SOURCES.get(int(getattr(c, "config_source", -1)), "UNKNOWN"),
                "synonyms": [
                    {
                        "name": s.name,
                        "value": s.value,
                        "source": CONFIG_SOURCES.get(int(s.source), "UNKNOWN"),
                    }
                    for s in getattr(c, "synonyms", ())
                ],
            }
            for c in result.configs
        ]

    async def alter_topic_configs(
        self, name: str, changes: list[tuple[str, str, str | None]], validate_only: bool = False
    ) -> None:
        """`changes` are (config name, SET|DELETE|APPEND|SUBTRACT, value)."""
        resource = Nested(
            "AlterConfigsResource",
            resource_type=TOPIC_RESOURCE,
            resource_name=name,
            configs=[
                Nested(
                    "AlterableConfig",
                    name=config,
                    config_operation=ALTER_OPERATIONS[operation],
                    value=value,
                )
                for config, operation, value in changes
            ],
        )
        response = await self.client.call_any(
            INCREMENTAL_ALTER_CONFIGS, {"resources": [resource], "validate_only": validate_only}
        )
        (result,) = response.responses
        check(result.error_code, result.error_message, f"topic {name}")

    # Offsets ---------------------------------------------------------------------------
    async def list_offsets(
        self, topic: str, partitions: list[int], timestamp: int
    ) -> dict[int, int | KafkaResponseError]:
        """Per partition: the offset for `timestamp` (LATEST is the high watermark)."""

        async def send(node_id: int, items: dict) -> dict:
            response = await self.client.call(
                node_id,
                LIST_OFFSETS,
                {
                    "replica_id": -1,
                    "isolation_level": 0,
                    "topics": [
                        Nested(
                            "ListOffsetsTopic",
                            name=topic,
                            partitions=[
                                Nested(
                                    "ListOffsetsPartition",
                                    partition_index=p,
                                    current_leader_epoch=-1,
                                    timestamp=timestamp,
                                )
                                for (_t, p) in items
                            ],
                        )
                    ],
                },
            )
            answers: dict = {}
            for t in response.topics:
                for p in t.partitions:
                    code = int(p.error_code)
                    answers[(t.name, int(p.partition_index))] = (
                        KafkaResponseError(code, None, f"{t.name}-{p.partition_index}")
                        if code
                        else int(p.offset)
                    )
            return answers

        results = await self.client.for_partitions({(topic, p): None for p in partitions}, send)
        return {p: results[(topic, p)] for p in partitions}

    # Records ---------------------------------------------------------------------------
    async def fetch(
        self, topic: str, partition: int, offset: int, max_bytes: int = 1 << 20
    ) -> tuple[list[BrowsedRecord], int, int]:
        """One fetch from `offset`: (records, high watermark, next offset to fetch)."""
        leader = await self.client.leader_for(topic, partition)
        response = await self.client.call(
            leader,
            FETCH,
            {
                "replica_id": -1,
                "max_wait": _ms(0),
                "min_bytes": 0,
                "max_bytes": max_bytes,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    Nested(
                        "FetchTopic",
                        topic=topic,
                        partitions=[
                            Nested(
                                "FetchPartition",
                                partition=partition,
                                current_leader_epoch=-1,
                                fetch_offset=offset,
                                last_fetched_epoch=-1,
                                log_start_offset=-1,
                                partition_max_bytes=max_bytes,
                            )
                        ],
                    )
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )
        check(getattr(response, "error_code", 0), None, f"fetch {topic}-{partition}")
        data = response.responses[0].partitions[0]
        check(data.error_code, None, f"{topic}-{partition}")
        records: list[BrowsedRecord] = []
        next_offset = offset
        for batch in iter_batches(data.records or b""):
            next_offset = max(next_offset, batch.next_offset)
            if batch.is_control:
                continue
            for record in batch:
                if record.offset < offset:
                    continue
                records.append(
                    BrowsedRecord(
                        partition,
                        record.offset,
                        record.timestamp,
                        record.key,
                        record.value,
                        [(h.key, h.value) for h in record.headers],
                    )
                )
        return records, int(data.high_watermark), next_offset

    async def produce(
        self,
        topic: str,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]] | None = None,
    ) -> int:
        """Append one record with acks=all; its offset."""
        leader = await self.client.leader_for(topic, partition)
        batch = build_batch(
            [SimpleRecord(value=value, key=key, headers=headers or (), timestamp=None)],
            now_ms=int(time.time() * 1000),
        )
        response = await self.client.call(
            leader,
            PRODUCE,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": _ms(30_000),
                "topic_data": [
                    Nested(
                        "TopicProduceData",
                        name=topic,
                        partition_data=[
                            Nested("PartitionProduceData", index=partition, records=bytes(batch))
                        ],
                    )
                ],
            },
        )
        answer = response.responses[0].partition_responses[0]
        check(answer.error_code, getattr(answer, "error_message", None), f"{topic}-{partition}")
        return int(answer.base_offset)


def kafka_client(cluster: Cluster) -> KafkaCluster:
    timeout = settings.KAFKA_REQUEST_TIMEOUT_S
    return KafkaCluster(
        cluster.bootstrap_servers,
        client_id="brokerd-dashboard",
        request_timeout=timeout,
        connect_timeout=min(timeout, 5.0),
        retries=3,
    )


def with_cluster(cluster: Cluster, operation: Callable[[KafkaOps], Awaitable[T]]) -> T:
    """Run `operation` against `cluster` from synchronous code (a request handler)."""

    async def run() -> T:
        async with kafka_client(cluster) as client:
            return await operation(KafkaOps(client))

    return async_to_sync(run)()
