"""Transactional ids in `__transaction_state`: load, store, unload, expire (Kafka's
TransactionStateManager).

A broker holds the transactional ids of the `__transaction_state` partitions it leads. Gaining
a partition loads them from the log (requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS), at
a coordinator epoch that is the partition's leader epoch; losing it drops them. Every
transition is appended to the partition and replicated to its ISR (acks=all) before it is
applied and the client hears success.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from brokerd.config import TransactionConfig
from brokerd.coordinator_partitions import (
    CoordinatorMetadata,
    CoordinatorReplicas,
    CreateTopic,
    PartitionLog,
    TopicView,
)
from brokerd.protocol.errors import ErrorCode, KafkaError, error_code_of
from brokerd.records.batch import SimpleRecord, build_batch
from brokerd.util.background import BackgroundTasks

from . import transaction_log
from .metadata import TransactionMetadata, TxnTransit
from .transaction_log import TOPIC, TxnLogValue, TxnState

log = logging.getLogger(__name__)

E = ErrorCode


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Held:
    """A transactional id held here and the coordinator epoch it was loaded at."""

    coordinator_epoch: int
    metadata: TransactionMetadata


# Called for each transaction loaded in PrepareCommit/PrepareAbort: its markers are owed.
OnLoadedPrepared = Callable[[int, TransactionMetadata], None]


class TransactionStateManager:
    def __init__(
        self,
        replicas: CoordinatorReplicas,
        metadata: CoordinatorMetadata,
        config: TransactionConfig,
        create_topic: CreateTopic,
        request_timeout_ms: int = 30000,
    ):
        self.replicas = replicas
        self.metadata = metadata
        self.config = config
        self.create_topic = create_topic
        self.request_timeout_ms = request_timeout_ms
        self._owned: dict[int, int] = {}  # partition -> coordinator epoch
        self._loading: dict[int, int] = {}
        self._txns: dict[int, dict[str, TransactionMetadata]] = {}
        self._tasks = BackgroundTasks(log, "transaction state task failed")
        self._topic_lock = asyncio.Lock()

    def shutdown(self) -> None:
        self._tasks.cancel_all()
        self._owned.clear()
        self._loading.clear()
        self._txns.clear()

    # The topic ----------------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        info = self.metadata.topic(TOPIC)
        if info is not None and info.partition_count:
            return info.partition_count
        return self.config.transaction_state_log_num_partitions

    def partition_for(self, transactional_id: str) -> int:
        return transaction_log.partition_for(transactional_id, self.num_partitions)

    def led_partitions(self) -> list[tuple[int, int]]:
        """(partition, leader epoch) of the `__transaction_state` partitions led here."""
        return [
            (p, partition.leader_epoch)
            for (topic, p), partition in list(self.replicas.leaders.items())
            if topic == TOPIC
        ]

    async def ensure_topic(self) -> TopicView | None:
        """The topic's metadata, creating it on first use (replication capped at the live
        brokers, as Kafka caps the offsets topic's)."""
        info = self.metadata.topic(TOPIC)
        if info is not None:
            return info
        async with self._topic_lock:
            info = self.metadata.topic(TOPIC)
            if info is not None:
                return info
            config = self.config
            replication = min(
                config.transaction_state_log_replication_factor, max(len(self.metadata.brokers), 1)
            )
            try:
                _, _, info = await self.create_topic(
                    TOPIC,
                    config.transaction_state_log_num_partitions,
                    replication,
                    transaction_log.topic_configs(
                        config.transaction_state_log_segment_bytes,
                        config.transaction_state_log_min_isr,
                    ),
                )
            except KafkaError as exc:
                if exc.error_code != E.topic_already_exists:
                    raise
                info = self.metadata.topic(TOPIC)
            return info

    def coordinator_for(self, transactional_id: str) -> int | None:
        state = self.metadata.partition_state(TOPIC, self.partition_for(transactional_id))
        if state is None or state.leader not in self.metadata.brokers:
            return None
        return state.leader

    # Held transactional ids ---------------------------------------------------------------
    def get(self, transactional_id: str) -> tuple[int, Held | None]:
        """(NONE, the held id or None if unknown here) or (why this broker cannot answer,
        None): NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS."""
        partition = self.partition_for(transactional_id)
        if partition in self._loading:
            return E.coordinator_load_in_progress, None
        epoch = self._owned.get(partition)
        if epoch is None:
            return E.not_coordinator, None
        found = self._txns.get(partition, {}).get(transactional_id)
        return E.none, (Held(epoch, found) if found is not None else None)

    def put_if_absent(self, metadata: TransactionMetadata) -> tuple[int, Held | None]:
        error, held = self.get(metadata.transactional_id)
        if error or held is not None:
            return error, held
        partition = self.partition_for(metadata.transactional_id)
        self._txns.setdefault(partition, {})[metadata.transactional_id] = metadata
        return E.none, Held(self._owned[partition], metadata)

    def is_current(self, transactional_id: str, held: Held) -> bool:
        """The id is still held at the same coordinator epoch, as this very object."""
        partition = self.partition_for(transactional_id)
        return (
            self._owned.get(partition) == held.coordinator_epoch
            and self._txns.get(partition, {}).get(transactional_id) is held.metadata
        )

    def transactions(self) -> Iterator[TransactionMetadata]:
        for partition in list(self._owned):
            yield from list(self._txns.get(partition, {}).values())

    @property
    def is_loading(self) -> bool:
        return bool(self._loading)

    def remove(self, transactional_id: str, held: Held) -> None:
        if self.is_current(transactional_id, held):
            del self._txns[self.partition_for(transactional_id)][transactional_id]

    # Writing -------------------------------------------------------------------------------
    async def append(self, transactional_id: str, held: Held, transit: TxnTransit) -> int:
        """Write the transition, wait for the ISR, then apply it. NONE or the client's error,
        mapped as Kafka's appendTransactionToLog maps them; a failed write drops the pending
        transition."""
        code = await self._write(
            transactional_id,
            transaction_log.value(transit.log_value()) if transit.state != TxnState.DEAD else None,
        )
        metadata = held.metadata
        if not self.is_current(transactional_id, held):
            # Unloaded (and maybe loaded again at a new epoch) while writing.
            return E.not_coordinator
        if code != E.none:
            metadata.abort_transition()
            return code
        if metadata.pending_state != transit.state:
            metadata.abort_transition()
            return E.not_coordinator
        metadata.complete_transition(transit)
        return E.none

    async def _write(self, transactional_id: str, value: bytes | None) -> int:
        partition = self.partition_for(transactional_id)
        replicas = self.replicas
        try:
            leader = replicas.leader(TOPIC, partition)
            batch = build_batch(
                [SimpleRecord(value, transaction_log.key(transactional_id), (), now_ms())]
            )
            info = replicas.append(leader, bytes(batch), acks=-1)
            code = await replicas.wait_for_replication(
                leader, info.last_offset + 1, self.request_timeout_ms / 1000
            )
        except KafkaError as exc:
            code = error_code_of(exc)
        except Exception:  # noqa: BLE001 - the client gets UNKNOWN_SERVER_ERROR
            log.exception("appending to %s-%d failed", TOPIC, partition)
            return E.unknown_server_error
        if code == E.none:
            return E.none
        log.info(
            "write for transactional id %s to %s-%d failed: %s",
            transactional_id,
            TOPIC,
            partition,
            ErrorCode(code).name,
        )
        if code in (
            E.unknown_topic_or_partition,
            E.not_enough_replicas,
            E.not_enough_replicas_after_append,
            E.request_timed_out,
        ):
            return E.coordinator_not_available
        if code in (E.not_leader_or_follower, E.kafka_storage_error):
            return E.not_coordinator
        if code in (E.message_too_large, E.record_list_too_large):
            return E.unknown_server_error
        return code

    # Loading and unloading -----------------------------------------------------------------
    def schedule_load(self, partition: int, epoch: int, on_prepared: OnLoadedPrepared) -> None:
        if self._loading.get(partition) == epoch or self._owned.get(partition) == epoch:
            return
        self.unload(partition)
        self._loading[partition] = epoch
        self._tasks.spawn(self._load(partition, epoch, on_prepared))

    async def _load(self, partition: int, epoch: int, on_prepared: OnLoadedPrepared) -> None:
        leader = self.replicas.leaders.get((TOPIC, partition))
        if leader is None:
            if self._loading.get(partition) == epoch:
                del self._loading[partition]
            return
        started = time.monotonic()
        records = await asyncio.to_thread(read_partition, leader.log)
        if self._loading.get(partition) != epoch:
            return  # lost (or reloaded) meanwhile
        latest: dict[str, TxnLogValue | None] = {}
        for transactional_id, value in records:
            latest[transactional_id] = value
        txns = {
            transactional_id: TransactionMetadata.from_log(transactional_id, value)
            for transactional_id, value in latest.items()
            if value is not None
        }
        self._txns[partition] = txns
        del self._loading[partition]
        self._owned[partition] = epoch
        log.log(
            logging.INFO if txns else logging.DEBUG,
            "loaded %d transactional ids of %s-%d at coordinator epoch %d in %.0f ms",
            len(txns),
            TOPIC,
            partition,
            epoch,
            (time.monotonic() - started) * 1000,
        )
        for metadata in txns.values():
            if metadata.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                on_prepared(epoch, metadata)

    def unload(self, partition: int) -> None:
        self._loading.pop(partition, None)
        self._owned.pop(partition, None)
        self._txns.pop(partition, None)

    # Timeouts and expiry --------------------------------------------------------------------
    def timed_out(self, now: int) -> list[tuple[str, int, int]]:
        """(id, producer id, epoch) of ongoing transactions past their timeout."""
        return [
            (m.transactional_id, m.producer_id, m.producer_epoch)
            for m in self.transactions()
            if m.state == TxnState.ONGOING
            and m.pending_state is None
            and m.start_timestamp_ms + m.timeout_ms < now
        ]

    def expired_ids(self, now: int) -> list[str]:
        """Ids idle past transactional.id.expiration.ms in a state that may expire."""
        limit = self.config.transactional_id_expiration_ms
        return [
            m.transactional_id
            for m in self.transactions()
            if m.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
            and m.pending_state is None
            and m.last_update_timestamp_ms + limit <= now
        ]


def read_partition(partition_log: PartitionLog) -> list[tuple[str, TxnLogValue | None]]:
    """Every decodable record up to the log end, in log order (off the loop)."""
    out = []
    end = partition_log.log_end_offset
    for entry in partition_log.read_batches(partition_log.log_start_offset, end):
        if getattr(entry, "is_control", False):
            continue
        for record in entry:
            if record.offset >= end:
                break
            try:
                out.append(transaction_log.decode_record(record.key, record.value))
            except transaction_log.RecordFormatError as exc:
                log.warning(
                    "skipping unreadable record at offset %d of %s: %s", record.offset, TOPIC, exc
                )
    return out
