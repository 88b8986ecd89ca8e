"""Sending transaction markers to partition leaders (Kafka's TransactionMarkerChannelManager).

Once PrepareCommit or PrepareAbort is in `__transaction_state`, every partition of the
transaction must get a COMMIT or ABORT control batch from its leader: a WriteTxnMarkers
request per leader, over the inter-broker listener, retried (leaders move, brokers restart)
until each partition answered NONE, the partition's topic is gone, or this broker stopped
being the transaction's coordinator. Then the coordinator writes CompleteCommit or
CompleteAbort.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.write_txn_markers.v1 import request as v1
from kio.schema.write_txn_markers.v2 import request as v2

from brokerd.client.connection import BrokerConnection, ClientSecurity
from brokerd.config import Endpoint
from brokerd.coordinator_partitions import CoordinatorMetadata
from brokerd.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

E = ErrorCode
WRITE_TXN_MARKERS = 27
RETRY_BACKOFF_SECONDS = 0.1
TopicPartition = tuple[str, int]

# Errors after which the partition is retried (TransactionMarkerRequestCompletionHandler).
RETRIABLE = frozenset(
    {
        E.unknown_topic_or_partition,
        E.not_leader_or_follower,
        E.not_enough_replicas,
        E.not_enough_replicas_after_append,
        E.request_timed_out,
        E.kafka_storage_error,
        E.coordinator_load_in_progress,
        E.coordinator_not_available,
        E.not_coordinator,
        E.network_exception,
        E.unknown_server_error,
    }
)
# This coordinator is stale: a newer one (or a newer producer epoch) wrote there already.
FENCED = frozenset({E.invalid_producer_epoch, E.transaction_coordinator_fenced})

EndpointOf = Callable[[Any], Endpoint | None]  # a BrokerInfo -> its inter-broker endpoint
SecurityFor = Callable[[Endpoint], ClientSecurity]
# Writes markers on partitions led by this broker, as its WriteTxnMarkers handler would:
# (producer id, epoch, commit, coordinator epoch, partitions) -> the error per partition.
LocalMarkers = Callable[
    [int, int, bool, int, list[TopicPartition]], Awaitable[dict[TopicPartition, int]]
]


class MarkerSender:
    """One connection per destination broker, shared by every transaction's markers."""

    def __init__(
        self,
        broker_id: int,
        metadata: CoordinatorMetadata,
        endpoint_of: EndpointOf,
        security_for: SecurityFor,
        request_timeout_ms: int = 30000,
        local: LocalMarkers | None = None,
    ):
        self.broker_id = broker_id
        self.local = local
        self.metadata = metadata
        self.endpoint_of = endpoint_of
        self.security_for = security_for
        self.request_timeout_ms = request_timeout_ms
        self._connections: dict[int, BrokerConnection] = {}

    async def close(self) -> None:
        connections, self._connections = self._connections, {}
        for connection in connections.values():
            await connection.close()

    def _connection(self, broker_id: int) -> BrokerConnection | None:
        info = self.metadata.brokers.get(broker_id)
        endpoint = self.endpoint_of(info) if info is not None else None
        if endpoint is None:
            return None
        current = self._connections.get(broker_id)
        if current is not None and (current.host, current.port) == (endpoint.host, endpoint.port):
            return current
        connection = self._connections[broker_id] = BrokerConnection(
            endpoint.host,
            endpoint.port,
            node_id=broker_id,
            client_id=f"broker-{self.broker_id}-txn-marker-sender",
            request_timeout=self.request_timeout_ms / 1000,
            security=self.security_for(endpoint),
        )
        if current is not None:
            asyncio.get_running_loop().create_task(current.close())
        return connection

    def leader_of(self, topic: str, partition: int) -> int | None:
        state = self.metadata.partition_state(topic, partition)
        if state is None or state.leader < 0 or state.leader not in self.metadata.brokers:
            return None
        return state.leader

    async def send(
        self,
        destination: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: list[TopicPartition],
    ) -> dict[TopicPartition, int]:
        """One WriteTxnMarkers to `destination`: the error per partition (a failed request
        answers NETWORK_EXCEPTION for all). Partitions led here are written in place, without
        a request to ourselves over the loopback (Kafka sends one; the result is the same)."""
        if destination == self.broker_id and self.local is not None:
            try:
                return await self.local(
                    producer_id, producer_epoch, commit, coordinator_epoch, partitions
                )
            except Exception:  # noqa: BLE001 - retried by the caller
                log.exception("writing markers of producer %d here failed", producer_id)
                return {tp: E.unknown_server_error for tp in partitions}
        connection = self._connection(destination)
        if connection is None:
            return {tp: E.not_leader_or_follower for tp in partitions}
        try:
            await connection.connect()
            supported = connection.api_versions.get(WRITE_TXN_MARKERS)
            if supported is None:
                return {tp: E.unsupported_version for tp in partitions}
            module = v2 if 2 in supported else v1
            by_topic: dict[str, list[int]] = {}
            for topic, partition in partitions:
                by_topic.setdefault(topic, []).append(partition)
            body = module.WriteTxnMarkersRequest(
                markers=(
                    module.WritableTxnMarker(
                        producer_id=producer_id,
                        producer_epoch=producer_epoch,
                        transaction_result=commit,
                        topics=tuple(
                            module.WritableTxnMarkerTopic(name=topic, partition_indexes=tuple(ps))
                            for topic, ps in by_topic.items()
                        ),
                        coordinator_epoch=coordinator_epoch,
                    ),
                )
            )
            response = await connection.send(body)
        except Exception as exc:  # noqa: BLE001 - retried by the caller
            log.debug("WriteTxnMarkers to broker %d failed: %s", destination, exc)
            await connection.close()
            self._connections.pop(destination, None)
            return {tp: E.network_exception for tp in partitions}
        out: dict[TopicPartition, int] = {tp: E.unknown_server_error for tp in partitions}
        for marker in response.markers:
            if marker.producer_id != producer_id:
                continue
            for topic in marker.topics:
                for result in topic.partitions:
                    key = (str(topic.name), int(result.partition_index))
                    if key in out:
                        out[key] = int(result.error_code)
        return out

    async def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: set[TopicPartition],
        still_coordinator: Callable[[], bool],
        topic_exists: Callable[[str], bool],
    ) -> bool:
        """Markers on every partition, retried until written; False if given up because
        this broker is no longer the coordinator (or a newer one fenced it)."""
        pending = set(partitions)
        while pending:
            if not still_coordinator():
                return False
            for tp in [tp for tp in pending if not topic_exists(tp[0])]:
                log.info("skipping the marker of producer %d for deleted %s", producer_id, tp)
                pending.discard(tp)
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in sorted(pending):
                leader = self.leader_of(*tp)
                if leader is not None:
                    by_leader.setdefault(leader, []).append(tp)
            results = await asyncio.gather(
                *(
                    self.send(leader, producer_id, producer_epoch, commit, coordinator_epoch, tps)
                    for leader, tps in by_leader.items()
                )
            )
            for errors in results:
                for tp, code in errors.items():
                    if code == E.none:
                        pending.discard(tp)
                    elif code in FENCED:
                        log.info(
                            "marker of producer %d on %s fenced (%s): giving up",
                            producer_id,
                            tp,
                            ErrorCode(code).name,
                        )
                        return False
                    elif code not in RETRIABLE:
                        log.warning(
                            "marker of producer %d on %s answered %s: skipping the partition",
                            producer_id,
                            tp,
                            ErrorCode(code).name,
                        )
                        pending.discard(tp)
            if pending:
                await asyncio.sleep(RETRY_BACKOFF_SECONDS)
        return True
