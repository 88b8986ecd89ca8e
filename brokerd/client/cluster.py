"""Connections to the brokers of one cluster, metadata, and routing to leaders and coordinators.

`Cluster` bootstraps from any of a list of host:port, keeps a metadata snapshot, opens one
`BrokerConnection` per broker on demand, and retries partition-routed work after a metadata
refresh when a broker answers NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
LEADER_NOT_AVAILABLE (or the connection to the leader fails).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

from .connection import PLAINTEXT, BrokerConnection, ClientSecurity
from .errors import (
    COORDINATOR_ERRORS,
    ErrorCode,
    KafkaClientError,
    KafkaConnectionError,
    KafkaResponseError,
    check,
)
from .metadata import ClusterMetadata
from .requests import Nested

METADATA = 3
FIND_COORDINATOR = 10
GROUP_KEY_TYPE = 0

TopicPartition = tuple[str, int]
T = TypeVar("T")


def parse_bootstrap(servers: str | Sequence[str]) -> list[tuple[str, int]]:
    if isinstance(servers, str):
        servers = [s for s in servers.split(",") if s.strip()]
    addresses = []
    for server in servers:
        host, _, port = server.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"bootstrap server {server!r} is not host:port")
        addresses.append((host.strip("[]"), int(port)))
    if not addresses:
        raise ValueError("no bootstrap servers")
    return addresses


class Cluster:
    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        client_id: str = "brokerd-client",
        request_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        retries: int = 5,
        retry_backoff: float = 0.1,
        metadata_max_age: float = 300.0,
        security: ClientSecurity = PLAINTEXT,
    ):
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.security = security
        self.client_id = client_id
        self.request_timeout = request_timeout
        self.connect_timeout = connect_timeout
        self.retries = retries
        self.retry_backoff = retry_backoff
        self.metadata_max_age = metadata_max_age
        self.metadata = ClusterMetadata()
        self._connections: dict[int, BrokerConnection] = {}
        self._bootstrap_connection: BrokerConnection | None = None
        self._coordinators: dict[str, int] = {}
        self._refresh_lock = asyncio.Lock()

    async def __aenter__(self) -> Cluster:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        await self.refresh_metadata()

    async def close(self) -> None:
        connections = list(self._connections.values())
        if self._bootstrap_connection is not None:
            connections.append(self._bootstrap_connection)
        self._connections.clear()
        self._bootstrap_connection = None
        for connection in connections:
            await connection.close()

    # Connections -----------------------------------------------------------------------
    def _new_connection(self, host: str, port: int, node_id: int | None) -> BrokerConnection:
        return BrokerConnection(
            host,
            port,
            node_id=node_id,
            client_id=self.client_id,
            request_timeout=self.request_timeout,
            connect_timeout=self.connect_timeout,
            security=self.security,
        )

    async def connection(self, node_id: int) -> BrokerConnection:
        """The connection to broker `node_id` (connected, versions negotiated)."""
        connection = self._connections.get(node_id)
        broker = self.metadata.brokers.get(node_id)
        if broker is None:
            await self.refresh_metadata()
            broker = self.metadata.brokers.get(node_id)
            if broker is None:
                raise KafkaConnectionError(f"broker {node_id} is not in the cluster metadata")
        if connection is not None and (connection.host, connection.port) != (
            broker.host,
            broker.port,
        ):
            await connection.close()  # the broker moved
            connection = None
        if connection is None:
            connection = self._new_connection(broker.host, broker.port, node_id)
            self._connections[node_id] = connection
        await connection.connect()
        return connection

    async def any_connection(self) -> BrokerConnection:
        """A connection to some broker: a known one first, else a bootstrap address."""
        errors = []
        for node_id in list(self.metadata.brokers):
            try:
                return await self.connection(node_id)
            except KafkaConnectionError as exc:
                errors.append(str(exc))
        return await self._bootstrap(errors)

    async def _bootstrap(self, errors: list[str] | None = None) -> BrokerConnection:
        errors = errors or []
        if self._bootstrap_connection is not None and self._bootstrap_connection.connected:
            return self._bootstrap_connection
        for host, port in self.bootstrap:
            connection = self._new_connection(host, port, None)
            try:
                await connection.connect()
            except KafkaClientError as exc:
                errors.append(str(exc))
                await connection.close()
                continue
            if self._bootstrap_connection is not None:
                await self._bootstrap_connection.close()
            self._bootstrap_connection = connection
            return connection
        raise KafkaConnectionError("no broker reachable: " + "; ".join(errors))

    # Metadata --------------------------------------------------------------------------
    async def refresh_metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Fetch metadata for `topics` (None: every topic) and merge it into the snapshot."""
        wanted = None if topics is None else sorted(set(topics))
        async with self._refresh_lock:
            connection = await self.any_connection() if self.metadata.brokers else None
            if connection is None:
                connection = await self._bootstrap()
            values = {
                "topics": None
                if wanted is None
                else [Nested("MetadataRequestTopic", name=t, topic_id=None) for t in wanted],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            }
            try:
                response = await connection.call(METADATA, values)
            except KafkaConnectionError:
                connection = await self._bootstrap()
                response = await connection.call(METADATA, values)
            self.metadata.merge(response, all_topics=wanted is None)
        return self.metadata

    async def maybe_refresh(self) -> None:
        if time.monotonic() - self.metadata.updated_at > self.metadata_max_age:
            await self.refresh_metadata()

    async def partitions_for(self, topic: str, *, refresh: bool = False) -> list[int]:
        """The partition ids of `topic`; UNKNOWN_TOPIC_OR_PARTITION if it does not exist."""
        if refresh or topic not in self.metadata.topics:
            await self.refresh_metadata([topic])
        info = self.metadata.topics.get(topic)
        if info is None:
            raise KafkaResponseError(ErrorCode.unknown_topic_or_partition, None, topic)
        return sorted(info.partitions)

    async def leader_for(self, topic: str, partition: int) -> int:
        leader = self.metadata.leader_of(topic, partition)
        if leader is None:
            await self.refresh_metadata([topic])
            leader = self.metadata.leader_of(topic, partition)
        if leader is None:
            code = (
                ErrorCode.leader_not_available
                if self.metadata.partition(topic, partition) is not None
                else ErrorCode.unknown_topic_or_partition
            )
            raise KafkaResponseError(code, None, f"{topic}-{partition}")
        return leader

    # Sending ---------------------------------------------------------------------------
    async def call(self, node_id: int, api_key: int, values: dict[str, Any], **kw: Any) -> Any:
        connection = await self.connection(node_id)
        return await connection.call(api_key, values, **kw)

    async def call_any(self, api_key: int, values: dict[str, Any], **kw: Any) -> Any:
        connection = await self.any_connection()
        return await connection.call(api_key, values, **kw)

    async def call_controller(self, api_key: int, values: dict[str, Any], **kw: Any) -> Any:
        """To the controller (admin requests Kafka routes there), else to any broker."""
        if self.metadata.controller_id < 0:
            await self.refresh_metadata()
        if self.metadata.controller_id in self.metadata.brokers:
            try:
                return await self.call(self.metadata.controller_id, api_key, values, **kw)
            except KafkaConnectionError:
                await self.refresh_metadata()
        return await self.call_any(api_key, values, **kw)

    async def supports(self, api_key: int) -> bool:
        """Whether the brokers advertise a version of `api_key` this client implements."""
        return (await self.any_connection()).supports(api_key)

    async def for_partitions(
        self,
        items: dict[TopicPartition, T],
        send: Callable[[int, dict[TopicPartition, T]], Awaitable[dict[TopicPartition, Any]]],
    ) -> dict[TopicPartition, Any]:
        """Route per-partition work to leaders, one request per leader, in parallel.

        `send(node_id, items)` returns a result or a KafkaClientError per partition. Partitions
        that failed with a routing error or a lost connection are retried after a metadata
        refresh, up to `retries` times; other errors are returned as they are.
        """
        results: dict[TopicPartition, Any] = {}
        pending = dict(items)
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(self.retry_backoff * attempt)
                await self.refresh_metadata({topic for topic, _ in pending})
            by_leader: dict[int, dict[TopicPartition, T]] = defaultdict(dict)
            unroutable: dict[TopicPartition, Any] = {}
            for tp, item in pending.items():
                try:
                    by_leader[await self.leader_for(*tp)][tp] = item
                except KafkaResponseError as exc:
                    unroutable[tp] = exc
            answers = await asyncio.gather(
                *(self._send_to_leader(n, group, send) for n, group in by_leader.items())
            )
            pending = {}
            for answer in (unroutable, *answers):
                for tp, result in answer.items():
                    results[tp] = result
                    if _needs_routing_retry(result):
                        pending[tp] = items[tp]
            if not pending:
                break
        return results

    async def _send_to_leader(self, node_id, group, send) -> dict[TopicPartition, Any]:
        try:
            return await send(node_id, group)
        except KafkaConnectionError as exc:
            return dict.fromkeys(group, exc)

    # Group coordinators ----------------------------------------------------------------
    async def coordinator_for(self, group_id: str, *, refresh: bool = False) -> int:
        if not refresh and group_id in self._coordinators:
            return self._coordinators[group_id]
        for attempt in range(self.retries + 1):
            response = await self.call_any(
                FIND_COORDINATOR,
                {"key": group_id, "key_type": GROUP_KEY_TYPE, "coordinator_keys": [group_id]},
            )
            code, message, node_id = coordinator_answer(response, group_id)
            if code in COORDINATOR_ERRORS and attempt < self.retries:
                await asyncio.sleep(self.retry_backoff * (attempt + 1))
                continue
            check(code, message, f"group {group_id}")
            if node_id not in self.metadata.brokers:
                await self.refresh_metadata()
            self._coordinators[group_id] = node_id
            return node_id
        raise AssertionError("unreachable")

    async def coordinators_for(self, group_ids: Iterable[str]) -> dict[str, int | Exception]:
        """Each group's coordinator (or the error finding it): the unknown ones in one
        FindCoordinator request (v4+ batches keys, as Kafka's admin client sends them), else,
        from an older broker, one request per group in parallel."""
        ids = sorted(set(group_ids))
        wanted = [g for g in ids if g not in self._coordinators]
        if wanted and (await self.any_connection()).version_for(FIND_COORDINATOR) >= 4:
            for attempt in range(self.retries + 1):
                response = await self.call_any(
                    FIND_COORDINATOR, {"key_type": GROUP_KEY_TYPE, "coordinator_keys": wanted}
                )
                retry = []
                for found in response.coordinators:
                    code = int(found.error_code)
                    if not code and found.key in wanted:
                        self._coordinators[found.key] = int(found.node_id)
                    elif code in COORDINATOR_ERRORS:
                        retry.append(found.key)
                if not retry or attempt == self.retries:
                    break
                wanted = retry
                await asyncio.sleep(self.retry_backoff * (attempt + 1))
            if any(self._coordinators.get(g, -1) not in self.metadata.brokers for g in ids):
                await self.refresh_metadata()
        # Left (an older broker, an error): one by one, each error as that group's result.
        left = [g for g in ids if g not in self._coordinators]
        found_each = await asyncio.gather(
            *(self.coordinator_for(g) for g in left), return_exceptions=True
        )
        results: dict[str, int | Exception] = {
            g: self._coordinators[g] for g in ids if g not in left
        }
        for group_id, answer in zip(left, found_each, strict=True):
            if isinstance(answer, BaseException) and not isinstance(answer, KafkaClientError):
                raise answer
            results[group_id] = answer
        return results

    def forget_coordinator(self, group_id: str) -> None:
        """Look the group's coordinator up again next time (it answered NOT_COORDINATOR)."""
        self._coordinators.pop(group_id, None)

    async def call_coordinator(
        self,
        group_id: str,
        api_key: int,
        values: dict[str, Any],
        error_of: Callable[[Any], int],
    ) -> Any:
        """Send to the group's coordinator; look it up again on NOT_COORDINATOR and friends."""
        response = None
        for attempt in range(self.retries + 1):
            node_id = await self.coordinator_for(group_id, refresh=attempt > 0)
            with contextlib.suppress(KafkaConnectionError):
                response = await self.call(node_id, api_key, values)
                if error_of(response) not in COORDINATOR_ERRORS:
                    return response
            await asyncio.sleep(self.retry_backoff * (attempt + 1))
        if response is None:
            raise KafkaConnectionError(f"coordinator of group {group_id} unreachable")
        return response


def coordinator_answer(response: Any, key: str) -> tuple[int, str | None, int]:
    """(error code, message, node id) of a FindCoordinator response for `key`: v4+ answers
    per key in `coordinators`, older versions at the top level."""
    coordinators = getattr(response, "coordinators", None)
    if coordinators is None:
        return (
            int(response.error_code),
            getattr(response, "error_message", None),
            int(response.node_id),
        )
    for found in coordinators:
        if found.key == key:
            return int(found.error_code), found.error_message, int(found.node_id)
    return int(ErrorCode.coordinator_not_available), f"no answer for {key}", -1


def _needs_routing_retry(result: Any) -> bool:
    if isinstance(result, KafkaConnectionError):
        return True
    return isinstance(result, KafkaResponseError) and result.needs_metadata_refresh
