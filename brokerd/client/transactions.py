"""Transaction admin calls (KIP-664), as Kafka's Admin client makes them.

`list_transactions` asks every broker (each coordinates the ids of its __transaction_state
partitions); `describe_transactions` finds each id's coordinator (FindCoordinator key type 1)
and asks it, one request per coordinator; `describe_producers` asks each partition's leader
for its active producers (an open transaction shows as its first offset); `fence_producer`
is Admin.fenceProducers (KIP-618, what kafka-transactions.sh force-terminate and
Admin.forceTerminateTransaction of KIP-939 call): InitProducerId for the id on its
coordinator, which bumps the epoch, fences the producer and aborts its open transaction.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.serial import entity_reader

from brokerd.protocol import bounds

from . import txn_schema
from .cluster import coordinator_answer
from .errors import (
    ErrorCode,
    KafkaConnectionError,
    KafkaResponseError,
    check,
)
from .requests import Nested

if TYPE_CHECKING:
    from .cluster import Cluster, TopicPartition

FIND_COORDINATOR = 10
INIT_PRODUCER_ID = 22
DESCRIBE_PRODUCERS = 61
DESCRIBE_TRANSACTIONS = 65
LIST_TRANSACTIONS = 66
TRANSACTION_KEY_TYPE = 1
_COORDINATOR_ERRORS = {
    ErrorCode.coordinator_not_available,
    ErrorCode.not_coordinator,
    ErrorCode.coordinator_load_in_progress,
}


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str  # Kafka's names: Empty, Ongoing, PrepareCommit, CompleteAbort, ...
    coordinator_id: int


@dataclass(frozen=True)
class TransactionDescription:
    transactional_id: str
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int | None  # None when no transaction is open (Kafka's -1)
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int | None  # None when no transaction is open


def _read_describe_transactions(version: int, frame: bytes) -> Any:
    """DescribeTransactions' answer read with txn_schema's integer times (kio's own schema
    refuses the -1 start time Kafka sends for an id with no open transaction)."""
    if version != 0:
        raise KafkaConnectionError(f"DescribeTransactions v{version} is not read by this client")
    schema: Any = txn_schema.DescribeTransactionsResponse
    try:
        used = bounds.check(schema.__header_schema__, frame, 0)
        bounds.check(schema, frame, used)  # a broker's bytes are hostile too
        _header, used = entity_reader(schema.__header_schema__)(frame, 0)
        body, _ = entity_reader(schema)(frame, used)
    except Exception as exc:  # kio raises several types for malformed input
        raise KafkaConnectionError(f"malformed DescribeTransactions v0 response: {exc}") from exc
    return body


class TransactionAdmin:
    cluster: Cluster

    async def list_transactions(
        self, *, states: Iterable[str] = (), producer_ids: Iterable[int] = ()
    ) -> list[TransactionListing]:
        """Every coordinator's transactional ids, optionally filtered as Kafka's filters do."""
        brokers = sorted((await self.cluster.refresh_metadata()).brokers)
        values = {"state_filters": list(states), "producer_id_filters": list(producer_ids)}
        responses = await asyncio.gather(
            *(self.cluster.call(b, LIST_TRANSACTIONS, values) for b in brokers)
        )
        listed: list[TransactionListing] = []
        for broker_id, response in zip(brokers, responses, strict=True):
            check(response.error_code, None, f"ListTransactions on broker {broker_id}")
            listed.extend(
                TransactionListing(
                    str(s.transactional_id), int(s.producer_id), str(s.transaction_state), broker_id
                )
                for s in response.transaction_states
            )
        return sorted(listed, key=lambda t: t.transactional_id)

    async def transaction_coordinator(self, transactional_id: str) -> int:
        """The broker coordinating `transactional_id` (FindCoordinator, key type 1)."""
        for attempt in range(self.cluster.retries + 1):
            response = await self.cluster.call_any(
                FIND_COORDINATOR,
                {
                    "key": transactional_id,
                    "key_type": TRANSACTION_KEY_TYPE,
                    "coordinator_keys": [transactional_id],  # v4+
                },
            )
            code, message, node_id = coordinator_answer(response, transactional_id)
            if code in _COORDINATOR_ERRORS and attempt < self.cluster.retries:
                await asyncio.sleep(self.cluster.retry_backoff * (attempt + 1))
                continue
            check(code, message, f"transaction {transactional_id}")
            if node_id not in self.cluster.metadata.brokers:
                await self.cluster.refresh_metadata()
            return node_id
        raise AssertionError("unreachable")

    async def fence_producer(
        self, transactional_id: str, timeout_ms: int = 30_000
    ) -> tuple[int, int]:
        """Fence the current producer of `transactional_id` and abort its open transaction
        (InitProducerId without producer id/epoch, transaction timeout 1 ms as Kafka's
        FenceProducersHandler sends): the new (producer id, epoch). Retried as Kafka's
        handler does: CONCURRENT_TRANSACTIONS (the abort's markers still out) and
        COORDINATOR_LOAD_IN_PROGRESS after a backoff, NOT_COORDINATOR and
        COORDINATOR_NOT_AVAILABLE at a coordinator found again; until `timeout_ms`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        retriable = _COORDINATOR_ERRORS | {ErrorCode.concurrent_transactions}
        while True:
            node_id = await self.transaction_coordinator(transactional_id)
            try:
                response = await self.cluster.call(
                    node_id,
                    INIT_PRODUCER_ID,
                    {
                        "transactional_id": transactional_id,
                        "transaction_timeout": datetime.timedelta(milliseconds=1),
                        "producer_id": -1,
                        "producer_epoch": -1,
                    },
                )
                code = int(response.error_code)
            except KafkaConnectionError:
                code = ErrorCode.coordinator_not_available
            if code == ErrorCode.none:
                return int(response.producer_id), int(response.producer_epoch)
            if code not in retriable or loop.time() >= deadline:
                check(code, None, f"fencing the producer of {transactional_id}")
            await asyncio.sleep(self.cluster.retry_backoff)

    async def describe_transactions(
        self, transactional_ids: Iterable[str]
    ) -> dict[str, TransactionDescription | KafkaResponseError]:
        """Each id's state from its coordinator; an error per id that has none (e.g.
        TRANSACTIONAL_ID_NOT_FOUND)."""
        ids = list(dict.fromkeys(transactional_ids))
        results: dict[str, TransactionDescription | KafkaResponseError] = {}
        pending = ids
        for attempt in range(self.cluster.retries + 1):
            if attempt:
                await asyncio.sleep(self.cluster.retry_backoff * attempt)
            by_coordinator: dict[int, list[str]] = {}
            for tid in pending:
                try:
                    by_coordinator.setdefault(await self.transaction_coordinator(tid), []).append(
                        tid
                    )
                except KafkaResponseError as exc:
                    results[tid] = exc
            answers = await asyncio.gather(
                *(self._describe_on(node, group) for node, group in by_coordinator.items())
            )
            pending = []
            for answer in answers:
                for tid, result in answer.items():
                    results[tid] = result
                    if (
                        isinstance(result, KafkaResponseError)
                        and result.error_code in _COORDINATOR_ERRORS
                    ):
                        pending.append(tid)
            if not pending:
                break
        return {tid: results[tid] for tid in ids}

    async def _describe_on(
        self, node_id: int, ids: list[str]
    ) -> dict[str, TransactionDescription | KafkaResponseError]:
        try:
            connection = await self.cluster.connection(node_id)
            version, frame = await connection.call_raw(
                DESCRIBE_TRANSACTIONS, {"transactional_ids": ids}
            )
            response = _read_describe_transactions(version, frame)
        except KafkaConnectionError:
            return {
                tid: KafkaResponseError(ErrorCode.coordinator_not_available, None, tid)
                for tid in ids
            }
        answered: dict[str, TransactionDescription | KafkaResponseError] = {}
        for s in response.transaction_states:
            tid = str(s.transactional_id)
            if s.error_code:
                answered[tid] = KafkaResponseError(int(s.error_code), None, f"transaction {tid}")
                continue
            start = int(s.transaction_start_time_ms)
            answered[tid] = TransactionDescription(
                transactional_id=tid,
                coordinator_id=node_id,
                state=str(s.transaction_state),
                producer_id=int(s.producer_id),
                producer_epoch=int(s.producer_epoch),
                timeout_ms=int(s.transaction_timeout_ms),
                start_time_ms=start if start >= 0 else None,
                partitions=tuple(
                    sorted((str(t.topic), int(p)) for t in s.topics for p in t.partitions)
                ),
            )
        return answered

    async def describe_producers(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, list[ProducerState] | KafkaResponseError]:
        """Each partition's active producers, from its leader (DescribeProducers)."""

        async def send(node_id: int, group: dict[TopicPartition, None]):
            by_topic: dict[str, list[int]] = {}
            for topic, p in group:
                by_topic.setdefault(topic, []).append(p)
            response = await self.cluster.call(
                node_id,
                DESCRIBE_PRODUCERS,
                {
                    "topics": [
                        Nested("TopicRequest", name=t, partition_indexes=ps)
                        for t, ps in by_topic.items()
                    ]
                },
            )
            answered: dict[TopicPartition, Any] = {}
            for topic in response.topics:
                for p in topic.partitions:
                    tp = (str(topic.name), int(p.partition_index))
                    if p.error_code:
                        answered[tp] = KafkaResponseError(
                            int(p.error_code), p.error_message, f"{tp[0]}-{tp[1]}"
                        )
                        continue
                    answered[tp] = [
                        ProducerState(
                            producer_id=int(s.producer_id),
                            producer_epoch=int(s.producer_epoch),
                            last_sequence=int(s.last_sequence),
                            last_timestamp=int(s.last_timestamp),
                            coordinator_epoch=int(s.coordinator_epoch),
                            current_txn_start_offset=(
                                int(s.current_txn_start_offset)
                                if s.current_txn_start_offset >= 0
                                else None
                            ),
                        )
                        for s in p.active_producers
                    ]
            return answered

        return await self.cluster.for_partitions(dict.fromkeys(partitions), send)
