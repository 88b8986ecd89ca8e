"""The follower's side of a fetch session (KIP-227; Kafka's FetchSessionHandler).

A fetcher hands `build` the partitions it wants now, each with its fetch offset, leader epoch
and byte limit. The first request of a session is full (epoch 0, every partition); once the
leader answered with a session id, each request is incremental: it carries only the
partitions that are new or whose fetch offset, leader epoch or limit changed, and forgets
those no longer wanted (moved away, truncating, backing off after an error). An idle
follower's fetch therefore lists no partition at all.

A session error (FETCH_SESSION_ID_NOT_FOUND: the leader restarted or evicted it;
INVALID_FETCH_SESSION_EPOCH: a request or answer was lost) and a failed request both start a
new full session: after a lost answer the leader's view of the session is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from brokerd.protocol.errors import ErrorCode

INITIAL_EPOCH = 0
NO_SESSION = 0
MAX_EPOCH = 0x7FFFFFFF

Key = tuple[str, int]


class PartitionFetch(NamedTuple):
    """What a request says of one partition; a change means it is sent again (a tuple:
    thousands are compared each round)."""

    fetch_offset: int
    current_leader_epoch: int
    max_bytes: int


@dataclass
class FetchPlan:
    """One request: its session fields, the partitions it lists and those it forgets."""

    session_id: int
    epoch: int
    send: dict[Key, PartitionFetch]
    forget: list[Key]
    wanted: dict[Key, PartitionFetch] = field(repr=False)

    @property
    def full(self) -> bool:
        return self.epoch == INITIAL_EPOCH


class FetchSessionHandler:
    def __init__(self) -> None:
        self.session_id = NO_SESSION
        self.next_epoch = INITIAL_EPOCH
        # The partitions the leader holds in our session, as last sent.
        self.partitions: dict[Key, PartitionFetch] = {}
        self.full_fetches = 0  # session starts (first, after errors and restarts)

    @property
    def needs_full(self) -> bool:
        """The next request opens a session: it must list every partition wanted."""
        return self.next_epoch == INITIAL_EPOCH

    def build(self, wanted: dict[Key, PartitionFetch]) -> FetchPlan:
        """A request for exactly `wanted` (every partition the fetcher wants now)."""
        if self.next_epoch == INITIAL_EPOCH:
            # Full: every partition; with our old session id, the leader closes that one.
            return FetchPlan(self.session_id, INITIAL_EPOCH, dict(wanted), [], dict(wanted))
        held = self.partitions
        send = {key: fetch for key, fetch in wanted.items() if held.get(key) != fetch}
        forget = [key for key in held if key not in wanted]
        return FetchPlan(self.session_id, self.next_epoch, send, forget, dict(wanted))

    def build_changes(self, changes: dict[Key, PartitionFetch | None]) -> FetchPlan:
        """An incremental request from what changed since the last one: each key with what
        is wanted of it now, or None when it is no longer wanted. Partitions not named stay
        in the session as they are, so a quiet round costs nothing per partition. Call only
        once a session is open (not `needs_full`)."""
        assert not self.needs_full, "a new session lists every partition: use build()"
        held = self.partitions  # updated in place: one request is in flight at a time
        send: dict[Key, PartitionFetch] = {}
        forget: list[Key] = []
        for key, fetch in changes.items():
            if fetch is None:
                if held.pop(key, None) is not None:
                    forget.append(key)
            elif held.get(key) != fetch:
                held[key] = send[key] = fetch
        return FetchPlan(self.session_id, self.next_epoch, send, forget, held)

    def handle_response(self, plan: FetchPlan, error_code: int, session_id: int) -> bool:
        """After the leader answered `plan`: False if the answer is a session error (its
        partitions carry nothing; the next request starts a full session)."""
        if error_code != ErrorCode.none:
            if error_code == ErrorCode.fetch_session_id_not_found:
                self.session_id = NO_SESSION
            self._restart()
            return False
        if plan.full:
            self.full_fetches += 1
            self.session_id = session_id
            # No session id: the leader keeps no session for us (its cache is full of
            # sessions it may not evict); we keep asking with full fetches.
            self.next_epoch = INITIAL_EPOCH if session_id == NO_SESSION else 1
        else:
            self.next_epoch = self.next_epoch + 1 if self.next_epoch < MAX_EPOCH else 1
        self.partitions = plan.wanted
        return True

    def handle_error(self) -> None:
        """The request failed (connection lost, timeout): the leader may or may not have
        moved the session on, so the next request closes it and opens a new one."""
        self._restart()

    def _restart(self) -> None:
        self.next_epoch = INITIAL_EPOCH
        self.partitions = {}
