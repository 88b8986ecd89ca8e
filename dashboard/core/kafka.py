"""What the platform asks of a cluster, over brokerd.client (the Kafka protocol).

`KafkaOps` wraps one connected `brokerd.client` Cluster and uses the client's admin,
consumer and producer classes; every method is async. Request handlers and Celery tasks call
`with_cluster`, which runs the operation on the process's one shared `SyncClient` for that
cluster (connections and metadata reused across requests and threads); the live collector
runs its own client on daphne's event loop.
"""

from __future__ import annotations

import atexit
import dataclasses
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from django.conf import settings

from brokerd.client.admin import AdminClient
from brokerd.client.cluster import Cluster as KafkaCluster
from brokerd.client.consumer import PartitionData
from brokerd.client.errors import ErrorCode, KafkaResponseError
from brokerd.client.metadata import ClusterMetadata
from brokerd.client.producer import Producer
from brokerd.client.results import AdminError, ConfigResource, NewTopic
from brokerd.client.sync import SyncClient

from .models import Cluster
from .record_scan import ScanConsumer

T = TypeVar("T")

LATEST, EARLIEST = -1, -2
CLIENT_ID = "brokerd-dashboard"


class KafkaOps:
    def __init__(self, client: KafkaCluster):
        self.client = client
        self.admin = AdminClient(client)

    async def refresh(self, topics: list[str] | None = None) -> ClusterMetadata:
        """Fresh metadata, as a copy: the client's own is shared with other requests and
        changes under a caller that iterates it in another thread."""
        metadata = await self.client.refresh_metadata(topics)
        return dataclasses.replace(
            metadata, brokers=dict(metadata.brokers), topics=dict(metadata.topics)
        )

    # Topics ----------------------------------------------------------------------------
    async def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        configs: dict[str, str] | None = None,
        validate_only: bool = False,
    ) -> None:
        topic = NewTopic(name, partitions, replication_factor, dict(configs or {}))
        await self.admin.create_topics([topic], validate_only=validate_only)

    async def delete_topic(self, name: str) -> None:
        await self.admin.delete_topics([name])

    async def create_partitions(self, name: str, total: int) -> None:
        """Grow the topic to `total` partitions (CreatePartitions; Kafka never shrinks)."""
        await self.admin.create_partitions({name: total})

    # Configs ---------------------------------------------------------------------------
    async def describe_topic_configs(
        self, name: str, documentation: bool = False
    ) -> list[dict[str, Any]]:
        """Every config of the topic with its source and synonyms (and, when asked, Kafka's
        documentation line: DescribeConfigs include_documentation)."""
        resource = ConfigResource.topic(name)
        described = await self.admin.describe_configs(
            [resource], include_synonyms=True, include_documentation=documentation
        )
        entries = described[resource]
        return [
            {
                "name": c.name,
                "value": None if c.is_sensitive else c.value,
                "is_read_only": c.read_only,
                "is_sensitive": c.is_sensitive,
                "is_default": c.is_default,
                "source": c.source.name,
                "synonyms": [
                    {"name": s.name, "value": s.value, "source": s.source.name} for s in c.synonyms
                ],
                **({"documentation": c.documentation or ""} if documentation else {}),
            }
            for c in entries.values()
        ]

    async def describe_broker_configs(self, broker_id: int) -> list[dict[str, Any]]:
        """Every config of one broker (static and dynamic) with its source, synonyms and
        Kafka's documentation line; sensitive values are never returned."""
        resource = ConfigResource.broker(broker_id)
        described = await self.admin.describe_configs(
            [resource], include_synonyms=True, include_documentation=True
        )
        return [
            {
                "name": c.name,
                "value": None if c.is_sensitive else c.value,
                "is_read_only": c.read_only,
                "is_sensitive": c.is_sensitive,
                "source": c.source.name,
                "synonyms": [
                    {"name": s.name, "value": s.value, "source": s.source.name} for s in c.synonyms
                ],
                "documentation": c.documentation or "",
            }
            for c in described[resource].values()
        ]

    async def alter_broker_configs(
        self, broker_id: int, changes: list[tuple[str, str, str | None]]
    ) -> None:
        """Dynamic per-broker changes: (config name, SET|DELETE, value)."""
        await self.admin.incremental_alter_configs({ConfigResource.broker(broker_id): changes})

    async def alter_topic_configs(
        self, name: str, changes: list[tuple[str, str, str | None]], validate_only: bool = False
    ) -> None:
        """`changes` are (config name, SET|DELETE|APPEND|SUBTRACT, value)."""
        await self.admin.incremental_alter_configs(
            {ConfigResource.topic(name): changes}, validate_only=validate_only
        )

    # Offsets ---------------------------------------------------------------------------
    async def list_offsets(
        self, topic: str, partitions: list[int], timestamp: int, *, isolation_level: int = 0
    ) -> dict[int, int | KafkaResponseError]:
        """Per partition: the offset for `timestamp` (LATEST is the high watermark, or the
        last stable offset with isolation_level 1, read_committed)."""
        try:
            results = await self.admin.list_offsets(
                dict.fromkeys(((topic, p) for p in partitions), timestamp),
                isolation_level=isolation_level,
            )
        except AdminError as exc:  # some partitions failed: keep theirs as errors
            results = {**exc.results, **exc.errors}
        return {p: r if isinstance(r, Exception) else r.offset for (_t, p), r in results.items()}

    # Records ---------------------------------------------------------------------------
    async def fetch(
        self,
        topic: str,
        positions: dict[int, int],
        partition_max_bytes: int = 1 << 20,
        max_bytes: int = 16 << 20,
        needles: tuple[bytes, ...] = (),
        ends: dict[int, int] | None = None,
    ) -> dict[int, PartitionData]:
        """One Fetch per leader from these offsets (partition -> offset), without waiting.
        Per partition: the offset to fetch next (past control batches and compaction gaps)
        and, as a lazy iterator (record_scan.iter_items), the records at or after its offset
        and below its end (`ends`, else the high watermark); with `needles`, the records
        that cannot match come as record_scan.SkippedBatch items."""
        consumer = ScanConsumer(
            self.client,
            needles,
            {(topic, p): end for p, end in (ends or {}).items()},
            max_wait=0,
            min_bytes=0,
            max_bytes=max_bytes,
            max_partition_bytes=partition_max_bytes,
        )
        answers = await consumer.fetch({(topic, p): offset for p, offset in positions.items()})
        results = {}
        for (_topic, partition), data in answers.items():
            if isinstance(data, Exception):
                raise data
            results[partition] = data
        return results

    async def produce(
        self,
        topic: str,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]] | None = None,
    ) -> int:
        """Append one record with acks=all; its offset."""
        producer = Producer(self.client, acks=-1, linger=0)
        sent = await producer.send_and_wait(
            topic, value, key, headers=headers or (), partition=partition
        )
        return sent.offset


# Kafka's descriptions (Errors.java) of the errors brokers often answer without a message.
KAFKA_DESCRIPTIONS = {
    ErrorCode.unknown_topic_or_partition: "This server does not host this topic-partition.",
    ErrorCode.topic_already_exists: "Topic with this name already exists.",
    ErrorCode.invalid_topic_exception: "The request attempted to perform an operation on an "
    "invalid topic.",
    ErrorCode.invalid_partitions: "Number of partitions is below 1.",
    ErrorCode.invalid_replication_factor: "Replication factor is below 1 or larger than the "
    "number of available brokers.",
    ErrorCode.invalid_config: "Configuration is invalid.",
    ErrorCode.policy_violation: "Request parameters do not satisfy the configured policy.",
    ErrorCode.topic_deletion_disabled: "Topic deletion is disabled.",
    ErrorCode.group_id_not_found: "The group id does not exist.",
    ErrorCode.non_empty_group: "The group is not empty.",
    ErrorCode.group_subscribed_to_topic: "The consumer group is actively subscribed to the topic.",
    ErrorCode.topic_authorization_failed: "Topic authorization failed.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
}


def error_text(exc: BaseException, subject: bool = False) -> str:
    """A client error in Kafka's words: the broker's message (or Kafka's description of the
    error) and Kafka's error name, e.g. "retention.ms: invalid long value 'x'
    (INVALID_CONFIG)", never the client's repr of the resource it was about. A batched admin
    call's error (AdminError) says its first failed item's; `subject` names that item (the
    topic, the partition) first."""
    item = None
    if isinstance(exc, AdminError) and exc.errors:
        item, exc = next(iter(exc.errors.items()))
    if not isinstance(exc, KafkaResponseError):
        return str(exc)
    message = exc.message or KAFKA_DESCRIPTIONS.get(exc.error_code)
    text = f"{message} ({exc.name})" if message else exc.name
    if subject:
        named = _item_name(item) if item is not None else exc.context
        if named:
            text = f"{named}: {text}"
    return text


def _item_name(item: object) -> str:
    if isinstance(item, ConfigResource):
        return f"{item.type.name.lower()} {item.name}"
    if isinstance(item, tuple) and len(item) == 2:
        return f"{item[0]}-{item[1]}"
    return str(item)


async def latest_offsets(admin: AdminClient, partitions) -> dict[tuple[str, int], int]:
    """The high watermark of each (topic, partition) that answered ListOffsets. Those that
    failed (no leader, a deleted topic) are left out: the caller shows what is known."""
    if not partitions:
        return {}
    try:
        listed = await admin.list_offsets(dict.fromkeys(partitions, "latest"))
    except AdminError as exc:
        listed = exc.results
    return {tp: found.offset for tp, found in listed.items()}


def _client_options() -> dict[str, Any]:
    timeout = settings.KAFKA_REQUEST_TIMEOUT_S
    return {
        "client_id": CLIENT_ID,
        "request_timeout": timeout,
        "connect_timeout": min(timeout, 5.0),
        "retries": 3,
    }


def kafka_client(cluster: Cluster) -> KafkaCluster:
    """A new asyncio client of `cluster`, for code with its own event loop (the collector)."""
    return KafkaCluster(
        cluster.bootstrap_servers, security=cluster.client_security(), **_client_options()
    )


# One SyncClient per cluster per process, keyed by name and rebuilt when the cluster's
# bootstrap servers or security settings change; created on first use, closed at exit.
_shared: dict[str, tuple[tuple, SyncClient]] = {}
_shared_lock = threading.Lock()


def shared_client(cluster: Cluster) -> SyncClient:
    with _shared_lock:
        entry = _shared.get(cluster.name)
        if entry is not None and entry[0] == cluster.security_fingerprint:
            return entry[1]
        # Connecting under the lock: a burst of first requests makes one client, not many.
        client = SyncClient(
            cluster.bootstrap_servers, security=cluster.client_security(), **_client_options()
        )
        _shared[cluster.name] = (cluster.security_fingerprint, client)
    if entry is not None:
        entry[1].close()  # its bootstrap servers or security settings changed
    return client


def close_shared_clients() -> None:
    with _shared_lock:
        clients = [client for _, client in _shared.values()]
        _shared.clear()
    for client in clients:
        client.close()


atexit.register(close_shared_clients)


def with_cluster(cluster: Cluster, operation: Callable[[KafkaOps], Awaitable[T]]) -> T:
    """Run `operation` against `cluster` from synchronous code (a request handler, a task)
    on the process's shared client of that cluster."""
    client = shared_client(cluster)

    async def run() -> T:
        return await operation(KafkaOps(client.cluster))

    return client.run(run())
