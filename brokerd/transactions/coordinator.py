"""The transaction coordinator: Kafka's TransactionCoordinator (transaction protocol v1).

InitProducerId hands a transactional id its producer id and the next epoch, fencing older
producers (and aborting a transaction they left open first); AddPartitionsToTxn and
AddOffsetsToTxn make a transaction Ongoing over a set of partitions; EndTxn writes
PrepareCommit or PrepareAbort, answers, then has the markers written on every partition's
leader and writes CompleteCommit or CompleteAbort. Transactions past their timeout are
aborted under a bumped epoch; transactional ids idle past transactional.id.expiration.ms
are removed. Everything runs on the event loop: a check and the pending transition it
prepares happen without an await in between, so two requests never race on one id.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from brokerd.config import TransactionConfig
from brokerd.protocol.errors import ErrorCode
from brokerd.util.background import BackgroundTasks

from .collaborators import ProducerIds
from .markers import MarkerSender
from .metadata import TransactionMetadata, TxnTransit, is_epoch_exhausted
from .state_manager import Held, TransactionStateManager, now_ms
from .transaction_log import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TOPIC, TxnState

log = logging.getLogger(__name__)

E = ErrorCode
S = TxnState
TopicPartition = tuple[str, int]
RETRY_BACKOFF_SECONDS = 0.1
# How long a request that meets a transaction still completing (PrepareCommit/PrepareAbort,
# its markers out) is held before it is answered CONCURRENT_TRANSACTIONS. Kafka answers at
# once and its clients retry after 20 ms (librdkafka, the Java client's AddPartitionsToTxn);
# holding the request until the markers are written answers it the moment it can succeed.
COMPLETION_WAIT_SECONDS = 0.5


@dataclass(frozen=True)
class InitResult:
    error: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True)
class TransactionDescription:
    error: int
    transactional_id: str
    state: str = ""
    timeout_ms: int = 0
    start_timestamp_ms: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: tuple[TopicPartition, ...] = ()


class TransactionCoordinator:
    def __init__(
        self,
        manager: TransactionStateManager,
        markers: MarkerSender,
        producer_ids: ProducerIds,
        config: TransactionConfig,
        offsets_partition_for: Callable[[str], int],
        topic_exists: Callable[[str], bool],
        offsets_topic: str = "__consumer_offsets",
    ):
        self.manager = manager
        self.markers = markers
        self.producer_ids = producer_ids
        self.config = config
        self.offsets_partition_for = offsets_partition_for
        self.topic_exists = topic_exists
        self.offsets_topic = offsets_topic
        self.active = False
        self._tasks = BackgroundTasks(log, "transaction coordinator task failed")
        # transactional id -> set once its markers and Complete record are written
        self._completing: dict[str, asyncio.Event] = {}
        self.completion_wait_seconds = COMPLETION_WAIT_SECONDS

    # Lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        self.active = True
        for partition, epoch in self.manager.led_partitions():
            self.manager.schedule_load(partition, epoch, self._on_loaded_prepared)
        self._tasks.spawn(
            self._periodically(
                self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                self.abort_timed_out_transactions,
            )
        )
        self._tasks.spawn(
            self._periodically(
                self.config.transaction_remove_expired_transaction_cleanup_interval_ms,
                self.remove_expired_transactional_ids,
            )
        )

    async def shutdown(self) -> None:
        self.active = False
        self._tasks.cancel_all()
        self.manager.shutdown()
        await self.markers.close()

    async def _periodically(self, interval_ms: int, action: Callable) -> None:
        while True:
            await asyncio.sleep(min(interval_ms, 1 << 31) / 1000)
            try:
                result = action()
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                log.exception("transaction coordinator maintenance failed")

    def on_leadership_change(self, gained: Iterable[tuple[str, int]], lost: Iterable) -> None:
        """Hooked on the replica manager: load gained `__transaction_state` partitions at
        their leader epoch, drop lost ones (their marker tasks stop on their own)."""
        for topic, partition in lost:
            if topic == TOPIC:
                self.manager.unload(partition)
        if not self.active:
            return
        led = dict(self.manager.led_partitions())
        for topic, partition in gained:
            if topic == TOPIC and partition in led:
                self.manager.schedule_load(partition, led[partition], self._on_loaded_prepared)

    # FindCoordinator ---------------------------------------------------------------------------
    async def ensure_topic(self):
        return await self.manager.ensure_topic()

    def coordinator_for(self, transactional_id: str) -> int | None:
        return self.manager.coordinator_for(transactional_id)

    def _check(self, transactional_id: str | None) -> int:
        if not transactional_id:
            return E.invalid_request
        if not self.active:
            return E.coordinator_not_available
        return E.none

    def _valid_timeout(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config.transaction_max_timeout_ms

    # InitProducerId ----------------------------------------------------------------------------
    async def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected_producer_id: int = NO_PRODUCER_ID,
        expected_epoch: int = NO_PRODUCER_EPOCH,
    ) -> InitResult:
        error = self._check(transactional_id)
        if error:
            return InitResult(error)
        if not self._valid_timeout(timeout_ms):
            return InitResult(E.invalid_transaction_timeout)
        expected = (
            (expected_producer_id, expected_epoch)
            if expected_producer_id != NO_PRODUCER_ID
            else None
        )
        await self._await_completion(transactional_id)
        error, held = self.manager.get(transactional_id)
        if error:
            return InitResult(error)
        if held is None:
            producer_id = await self.producer_ids.next_id()
            created = TransactionMetadata(
                transactional_id,
                producer_id,
                timeout_ms=timeout_ms,
                last_update_timestamp_ms=now_ms(),
            )
            error, held = self.manager.put_if_absent(created)
            if error:
                return InitResult(error)
        assert held is not None
        metadata = held.metadata
        new_producer_id: int | None = None
        while True:
            outcome = self._prepare_init(metadata, timeout_ms, expected, new_producer_id)
            if outcome != "rotate":
                break
            new_producer_id = await self.producer_ids.next_id()
            if not self.manager.is_current(transactional_id, held):
                return InitResult(E.not_coordinator)
        if isinstance(outcome, int):
            return InitResult(outcome)
        assert isinstance(outcome, TxnTransit)
        if outcome.state == S.PREPARE_EPOCH_FENCE:
            # Abort the transaction the previous epoch left open, under the bumped epoch,
            # then have the client retry (it gets the epoch after that on its retry).
            code = await self._end(
                transactional_id, metadata.producer_id, outcome.producer_epoch, False, False
            )
            if metadata.pending_state == S.PREPARE_EPOCH_FENCE:
                metadata.abort_transition()  # the abort was refused before it began
            return InitResult(code if code else E.concurrent_transactions)
        code = await self.manager.append(transactional_id, held, outcome)
        if code:
            log.info("InitProducerId of %s answered %s", transactional_id, ErrorCode(code).name)
            return InitResult(code)
        log.info(
            "initialised transactional id %s with producer id %d epoch %d",
            transactional_id,
            outcome.producer_id,
            outcome.producer_epoch,
        )
        return InitResult(E.none, outcome.producer_id, outcome.producer_epoch)

    def _prepare_init(
        self,
        metadata: TransactionMetadata,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        new_producer_id: int | None,
    ) -> TxnTransit | int | str:
        """prepareInitProducerIdTransit: a transit, an error, or "rotate" when a new
        producer id is needed first."""
        if metadata.pending_transition_in_progress:
            return E.concurrent_transactions
        if expected is not None and not (
            metadata.producer_epoch == NO_PRODUCER_EPOCH
            or expected[0] == metadata.producer_id
            or (expected[0] == metadata.last_producer_id and is_epoch_exhausted(expected[1]))
        ):
            return E.producer_fenced
        state = metadata.state
        if state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            return E.concurrent_transactions
        if state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            if metadata.is_producer_epoch_exhausted and (
                expected is None or expected[1] == metadata.producer_epoch
            ):
                if new_producer_id is None:
                    return "rotate"
                return metadata.prepare_producer_id_rotation(
                    new_producer_id, timeout_ms, now_ms(), expected is not None
                )
            return metadata.prepare_increment_producer_epoch(
                timeout_ms, expected[1] if expected is not None else None, now_ms()
            )
        if state == S.ONGOING:
            return metadata.prepare_fence_producer_epoch()
        return E.unknown_server_error  # Dead or PrepareEpochFence: never held here

    # AddPartitionsToTxn / AddOffsetsToTxn --------------------------------------------------------
    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: set[TopicPartition],
    ) -> int:
        error = self._check(transactional_id)
        if error:
            return error
        await self._await_completion(transactional_id)
        error, held = self.manager.get(transactional_id)
        if error:
            return error
        if held is None:
            return E.invalid_producer_id_mapping
        metadata = held.metadata
        if metadata.producer_id != producer_id:
            return E.invalid_producer_id_mapping
        if metadata.producer_epoch != producer_epoch:
            return E.producer_fenced
        if metadata.pending_transition_in_progress:
            return E.concurrent_transactions
        if metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return E.concurrent_transactions
        if metadata.state == S.ONGOING and partitions <= metadata.partitions:
            return E.none
        transit = metadata.prepare_add_partitions(partitions, now_ms())
        return await self.manager.append(transactional_id, held, transit)

    async def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> int:
        """AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the
        transaction, so its offsets get the transaction's marker."""
        partition = self.offsets_partition_for(group_id)
        return await self.add_partitions(
            transactional_id, producer_id, producer_epoch, {(self.offsets_topic, partition)}
        )

    # EndTxn --------------------------------------------------------------------------------------
    async def end_transaction(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> int:
        error = self._check(transactional_id)
        if error:
            return error
        return await self._end(transactional_id, producer_id, producer_epoch, commit, True)

    async def _end(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        from_client: bool,
    ) -> int:
        prepared = self._prepare_end(
            transactional_id, producer_id, producer_epoch, commit, from_client
        )
        if isinstance(prepared, int):
            return prepared
        return await self._finish_end(prepared, producer_id, producer_epoch, commit)

    async def _finish_end(
        self,
        prepared: tuple[Held, TxnTransit, bool],
        producer_id: int,
        producer_epoch: int,
        commit: bool,
    ) -> int:
        """Write PrepareCommit/PrepareAbort; once written, the markers go out."""
        held, transit, is_epoch_fence = prepared
        transactional_id = held.metadata.transactional_id
        metadata = held.metadata
        code = await self.manager.append(transactional_id, held, transit)
        if code:
            if is_epoch_fence and self.manager.is_current(transactional_id, held):
                metadata.has_failed_epoch_fence = True
            return code
        if not self.manager.is_current(transactional_id, held):
            return E.not_coordinator
        if metadata.producer_id != producer_id:
            return E.invalid_producer_id_mapping
        if metadata.producer_epoch != producer_epoch:
            return E.producer_fenced
        if metadata.pending_transition_in_progress:
            return E.concurrent_transactions
        expected = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        if metadata.state != expected:
            return E.invalid_txn_state
        self._send_markers(held, metadata.prepare_complete(now_ms()))
        return E.none

    def _prepare_end(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        from_client: bool,
    ) -> tuple[Held, TxnTransit, bool] | int:
        error, held = self.manager.get(transactional_id)
        if error:
            return error
        if held is None:
            return E.invalid_producer_id_mapping
        metadata = held.metadata
        if metadata.producer_id != producer_id:
            return E.invalid_producer_id_mapping
        if (from_client and producer_epoch != metadata.producer_epoch) or (
            producer_epoch < metadata.producer_epoch
        ):
            return E.producer_fenced
        if (
            metadata.pending_transition_in_progress
            and metadata.pending_state != S.PREPARE_EPOCH_FENCE
        ):
            return E.concurrent_transactions
        state = metadata.state
        if state == S.ONGOING:
            next_state = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            is_epoch_fence = False
            if next_state == S.PREPARE_ABORT and metadata.pending_state == S.PREPARE_EPOCH_FENCE:
                is_epoch_fence = True
                metadata.pending_state = None
                metadata.producer_epoch = producer_epoch
                metadata.last_producer_epoch = NO_PRODUCER_EPOCH
            elif metadata.pending_state is not None:
                return E.concurrent_transactions
            return held, metadata.prepare_abort_or_commit(next_state, now_ms()), is_epoch_fence
        if state == S.COMPLETE_COMMIT:
            return E.none if commit else E.invalid_txn_state
        if state == S.COMPLETE_ABORT:
            return E.none if not commit else E.invalid_txn_state
        if state == S.PREPARE_COMMIT:
            return E.concurrent_transactions if commit else E.invalid_txn_state
        if state == S.PREPARE_ABORT:
            return E.concurrent_transactions if not commit else E.invalid_txn_state
        return E.invalid_txn_state  # Empty

    # Markers ---------------------------------------------------------------------------------------
    def _on_loaded_prepared(self, coordinator_epoch: int, metadata: TransactionMetadata) -> None:
        """A transaction loaded in PrepareCommit/PrepareAbort: its markers are owed."""
        held = Held(coordinator_epoch, metadata)
        if metadata.pending_transition_in_progress:
            return
        self._send_markers(held, metadata.prepare_complete(now_ms()))

    def _send_markers(self, held: Held, complete: TxnTransit) -> None:
        transactional_id = held.metadata.transactional_id
        done = self._completing[transactional_id] = asyncio.Event()
        self._tasks.spawn(self._complete_and_signal(held, complete, done))

    async def _complete_and_signal(
        self, held: Held, complete: TxnTransit, done: asyncio.Event
    ) -> None:
        try:
            await self._complete_transaction(held, complete)
        finally:
            done.set()
            transactional_id = held.metadata.transactional_id
            if self._completing.get(transactional_id) is done:
                del self._completing[transactional_id]

    async def _await_completion(self, transactional_id: str) -> None:
        """Hold a request that meets this id's transaction completing (its markers out)
        until the Complete record is written, at most completion_wait_seconds; the caller
        then checks the state afresh (CONCURRENT_TRANSACTIONS if still not complete)."""
        done = self._completing.get(transactional_id)
        if done is None:
            return
        try:
            await asyncio.wait_for(done.wait(), self.completion_wait_seconds)
        except TimeoutError:
            pass

    async def _complete_transaction(self, held: Held, complete: TxnTransit) -> None:
        metadata = held.metadata
        transactional_id = metadata.transactional_id
        commit = complete.state == S.COMPLETE_COMMIT
        written = await self.markers.write_markers(
            metadata.producer_id,
            metadata.producer_epoch,
            commit,
            held.coordinator_epoch,
            set(metadata.partitions),
            still_coordinator=lambda: self.manager.is_current(transactional_id, held),
            topic_exists=self.topic_exists,
        )
        if not written:
            if self.manager.is_current(transactional_id, held):
                metadata.abort_transition()
            return
        while self.manager.is_current(transactional_id, held):
            code = await self.manager.append(transactional_id, held, complete)
            if code == E.none:
                log.debug(
                    "%s transaction of %s", "committed" if commit else "aborted", transactional_id
                )
                return
            if code == E.not_coordinator:
                return
            await asyncio.sleep(RETRY_BACKOFF_SECONDS)
            if not self.manager.is_current(transactional_id, held) or metadata.state not in (
                S.PREPARE_COMMIT,
                S.PREPARE_ABORT,
            ):
                return
            if metadata.pending_transition_in_progress:
                return
            complete = metadata.prepare_complete(now_ms())

    # Timeouts and expiry -----------------------------------------------------------------------
    def abort_timed_out_transactions(self, now: int | None = None) -> int:
        """Abort (under a bumped epoch, fencing the producer) every ongoing transaction
        past its timeout; returns how many were started."""
        now = now_ms() if now is None else now
        started = 0
        for transactional_id, producer_id, _epoch in self.manager.timed_out(now):
            error, held = self.manager.get(transactional_id)
            if error or held is None:
                continue
            metadata = held.metadata
            if metadata.producer_id != producer_id or metadata.pending_transition_in_progress:
                continue
            fence = metadata.prepare_fence_producer_epoch()
            log.info(
                "aborting the transaction of %s (producer id %d): timed out after %d ms",
                transactional_id,
                producer_id,
                metadata.timeout_ms,
            )
            # The fence and the PrepareAbort it leads to are prepared together, so no
            # request can slip in between; only the write is left to the task.
            prepared = self._prepare_end(
                transactional_id, producer_id, fence.producer_epoch, False, False
            )
            if isinstance(prepared, int):
                metadata.abort_transition()
                continue
            self._tasks.spawn(self._finish_end(prepared, producer_id, fence.producer_epoch, False))
            started += 1
        return started

    async def remove_expired_transactional_ids(self, now: int | None = None) -> int:
        now = now_ms() if now is None else now
        removed = 0
        for transactional_id in self.manager.expired_ids(now):
            error, held = self.manager.get(transactional_id)
            if error or held is None or held.metadata.pending_transition_in_progress:
                continue
            transit = held.metadata.prepare_dead()
            code = await self.manager.append(transactional_id, held, transit)
            if code == E.none:
                self.manager.remove(transactional_id, held)
                removed += 1
        return removed

    # ListTransactions / DescribeTransactions ------------------------------------------------------
    def list_transactions(
        self, states: set[str], producer_ids: set[int]
    ) -> tuple[int, list[TransactionListing]]:
        if not self.active:
            return E.coordinator_not_available, []
        out = []
        for metadata in self.manager.transactions():
            if metadata.state == S.DEAD:
                continue
            name = metadata.state.kafka_name
            if states and name not in states:
                continue
            if producer_ids and metadata.producer_id not in producer_ids:
                continue
            out.append(TransactionListing(metadata.transactional_id, metadata.producer_id, name))
        return (E.coordinator_load_in_progress if self.manager.is_loading else E.none), out

    def describe(self, transactional_id: str) -> TransactionDescription:
        if not self.active:
            return TransactionDescription(E.coordinator_not_available, transactional_id)
        if not transactional_id:
            return TransactionDescription(E.invalid_request, transactional_id)
        error, held = self.manager.get(transactional_id)
        if error:
            return TransactionDescription(error, transactional_id)
        if held is None or held.metadata.state == S.DEAD:
            return TransactionDescription(E.transactional_id_not_found, transactional_id)
        m = held.metadata
        return TransactionDescription(
            E.none,
            transactional_id,
            m.state.kafka_name,
            m.timeout_ms,
            m.start_timestamp_ms,
            m.producer_id,
            m.producer_epoch,
            tuple(sorted(m.partitions)),
        )
