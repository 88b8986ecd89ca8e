"""One transactional id's state and the transitions between states (Kafka's
TransactionMetadata and TxnTransitMetadata).

A change is made in two steps: `prepare_*` checks it is allowed, marks it pending and
returns the `TxnTransit` to write to `__transaction_state`; once the write is replicated,
`complete_transition` applies it (or `abort_transition` drops it when the write failed).
While a transition is pending, the coordinator answers CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from brokerd.protocol.errors import ErrorCode

from .transaction_log import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TxnLogValue,
    TxnState,
    group_partitions,
)

S = TxnState
E = ErrorCode
TopicPartition = tuple[str, int]
SHORT_MAX = (1 << 15) - 1

# TransactionState.validPreviousStates
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
# States in which a transactional id may expire (transactional.id.expiration.ms).
EXPIRATION_ALLOWED = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


class IllegalTransition(RuntimeError):
    """A transition the state machine never makes: a bug, not a client's mistake."""


def is_epoch_exhausted(epoch: int) -> bool:
    """TransactionMetadata.isEpochExhausted: the last epoch is kept for fencing markers."""
    return epoch >= SHORT_MAX - 1


@dataclass(frozen=True)
class TxnTransit:
    """The state a pending transition writes and then applies."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_timestamp_ms: int
    last_update_timestamp_ms: int

    def log_value(self) -> TxnLogValue:
        return TxnLogValue(
            self.producer_id,
            self.producer_epoch,
            self.timeout_ms,
            self.state,
            group_partitions(self.partitions),
            self.last_update_timestamp_ms,
            self.start_timestamp_ms,
        )


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60000
    state: TxnState = S.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_timestamp_ms: int = -1
    last_update_timestamp_ms: int = -1
    pending_state: TxnState | None = None
    # An epoch fence whose write failed: the bumped epoch was never handed out, so the
    # next fence does not bump it again.
    has_failed_epoch_fence: bool = False

    @classmethod
    def from_log(cls, transactional_id: str, value: TxnLogValue) -> TransactionMetadata:
        return cls(
            transactional_id,
            value.producer_id,
            value.previous_producer_id,
            value.producer_epoch,
            NO_PRODUCER_EPOCH,
            value.transaction_timeout_ms,
            value.state,
            set() if value.state == S.EMPTY else value.topic_partitions,
            value.start_timestamp_ms,
            value.last_update_timestamp_ms,
        )

    # Queries --------------------------------------------------------------------------
    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def snapshot(self) -> TxnTransit:
        """The current state as a transit (what is in the log for it)."""
        return TxnTransit(
            self.producer_id,
            self.last_producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            self.state,
            frozenset(self.partitions),
            self.start_timestamp_ms,
            self.last_update_timestamp_ms,
        )

    # Preparing transitions ------------------------------------------------------------
    def _prepare(
        self,
        state: TxnState,
        producer_id: int,
        producer_epoch: int,
        last_producer_epoch: int,
        timeout_ms: int,
        partitions: frozenset[TopicPartition],
        start_timestamp_ms: int,
        update_timestamp_ms: int,
        last_producer_id: int | None = None,
    ) -> TxnTransit:
        if self.pending_state is not None:
            raise IllegalTransition(
                f"{self.transactional_id}: {self.pending_state.kafka_name} is still pending"
            )
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalTransition(
                f"{self.transactional_id}: {self.state.kafka_name} -> {state.kafka_name}"
            )
        if not 0 <= producer_epoch <= SHORT_MAX:
            raise IllegalTransition(f"{self.transactional_id}: epoch {producer_epoch}")
        self.pending_state = state
        return TxnTransit(
            producer_id,
            self.last_producer_id if last_producer_id is None else last_producer_id,
            producer_epoch,
            last_producer_epoch,
            timeout_ms,
            state,
            partitions,
            start_timestamp_ms,
            update_timestamp_ms,
        )

    def prepare_increment_producer_epoch(
        self, timeout_ms: int, expected_epoch: int | None, now_ms: int
    ) -> TxnTransit | int:
        """InitProducerId on a completed (or empty) transactional id: the next epoch, or
        the current one again for a retry of a bump whose answer was lost; PRODUCER_FENCED
        for a producer whose epoch was bumped by another."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransition(f"{self.transactional_id}: producer epochs are exhausted")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epochs = (bumped, NO_PRODUCER_EPOCH)
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epochs = (bumped, self.producer_epoch)
        elif expected_epoch == self.last_producer_epoch:
            epochs = (self.producer_epoch, self.last_producer_epoch)
        else:
            return E.producer_fenced
        return self._prepare(
            S.EMPTY, self.producer_id, epochs[0], epochs[1], timeout_ms, frozenset(), -1, now_ms
        )

    def prepare_producer_id_rotation(
        self, new_producer_id: int, timeout_ms: int, now_ms: int, record_last_epoch: bool
    ) -> TxnTransit:
        """The epoch is exhausted: a new producer id at epoch 0."""
        return self._prepare(
            S.EMPTY,
            new_producer_id,
            0,
            self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            timeout_ms,
            frozenset(),
            -1,
            now_ms,
            last_producer_id=self.producer_id,
        )

    def prepare_fence_producer_epoch(self) -> TxnTransit:
        """An ongoing transaction is to be aborted under a bumped epoch (a new producer
        initialising, or the transaction timed out), fencing the producer that began it."""
        if self.producer_epoch >= SHORT_MAX:
            raise IllegalTransition(f"{self.transactional_id}: epoch {self.producer_epoch}")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(
            S.PREPARE_EPOCH_FENCE,
            self.producer_id,
            bumped,
            NO_PRODUCER_EPOCH,
            self.timeout_ms,
            frozenset(self.partitions),
            self.start_timestamp_ms,
            self.last_update_timestamp_ms,
        )

    def prepare_add_partitions(self, added: set[TopicPartition], now_ms: int) -> TxnTransit:
        """AddPartitionsToTxn / AddOffsetsToTxn: the transaction is (now) ongoing."""
        if self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            partitions, start = frozenset(added), now_ms
        else:
            partitions, start = frozenset(self.partitions | added), self.start_timestamp_ms
        return self._prepare(
            S.ONGOING,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            partitions,
            start,
            now_ms,
        )

    def prepare_abort_or_commit(self, state: TxnState, now_ms: int) -> TxnTransit:
        return self._prepare(
            state,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            frozenset(self.partitions),
            self.start_timestamp_ms,
            now_ms,
        )

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        return self._prepare(
            state,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            frozenset(),
            self.start_timestamp_ms,
            now_ms,
        )

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(
            S.DEAD,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            frozenset(),
            self.start_timestamp_ms,
            self.last_update_timestamp_ms,
        )

    # Applying ---------------------------------------------------------------------------
    def complete_transition(self, transit: TxnTransit) -> None:
        """The transit was written: apply it (Kafka's completeTransitionTo checks)."""
        if self.pending_state != transit.state:
            raise IllegalTransition(
                f"{self.transactional_id}: completing {transit.state.kafka_name}, pending "
                f"{self.pending_state.kafka_name if self.pending_state else None}"
            )
        if transit.state == S.ONGOING and transit.producer_epoch != self.producer_epoch:
            raise IllegalTransition(f"{self.transactional_id}: epoch changed while ongoing")
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.start_timestamp_ms = transit.start_timestamp_ms
        self.last_update_timestamp_ms = transit.last_update_timestamp_ms
        self.pending_state = None
        self.has_failed_epoch_fence = False

    def abort_transition(self) -> None:
        self.pending_state = None
