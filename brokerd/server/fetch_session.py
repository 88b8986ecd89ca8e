"""Fetch sessions (KIP-227): the broker remembers a fetcher's partitions between fetches.

Epoch 0 opens a session with a full fetch; later fetches carry session id and the next
epoch and list only what changed (added or updated partitions, forgotten ones), and the
response leaves out partitions with nothing new. Epoch -1 is a sessionless full fetch
(closing the named session, if any). Followers (replica_id >= 0) use sessions as consumers
do, so an idle follower's fetch carries no partition and its answer none either.

The cache holds at most `max.incremental.fetch.session.cache.slots` sessions. When it is
full, a new session takes the place of another as Kafka's FetchSessionCache decides: a
session unused for 120 s goes first; otherwise a follower's (privileged) session may evict
any consumer's session or one created over 120 s ago, a consumer's session only one created
over 120 s ago, and either only a session less valuable than itself (a consumer's before a
follower's, then fewer partitions). Nothing evictable: the fetch is answered without a
session (session id 0) and the fetcher keeps sending full fetches.

An incremental fetch reads only what may have changed since the session's last answer, not
every partition of the session: the partitions it lists, those the fetch purgatory was told
of since (appends, HW moves, leadership changes: FetchPurgatory.changes_since) and those
still `pending` (their last read had data, an error, or was cut by max_bytes). A parked
fetch waits once for any of its session's partitions (FetchPurgatory.wait_any). An idle
follower of 10,000 partitions therefore costs O(1) per fetch. Every `sweep` seconds (a
third of replica.lag.time.max.ms, at most SWEEP_S) one fetch reads the whole session: what
no notification covers (a log start offset moved by retention) gets there, and a quiet
follower's caught-up time is renewed before the ISR check would find it stale.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from brokerd.protocol.errors import ErrorCode, KafkaError

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
NO_SESSION = 0
# Kafka's FetchManager: sessions younger than this are not evicted (unless by a follower's
# session, for a consumer's), and one unused for this long is stale and evicted first.
EVICTION_MS = 120_000
# The longest a fetch session goes between two reads of all its partitions.
SWEEP_S = 10.0


@dataclass
class SessionPartition:
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    # What the fetcher last heard, so unchanged partitions can be left out (None: resend).
    last_high_watermark: int | None = None
    last_log_start_offset: int | None = None


@dataclass
class FetchSession:
    session_id: int
    next_epoch: int
    privileged: bool = False  # a follower's session
    partitions: OrderedDict = field(default_factory=OrderedDict)  # (topic, p) -> state
    created: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    # Partitions to read at the next fetch whatever the notifications say (an ordered set:
    # those that got data move to its end, so a max_bytes cut starves none), the change
    # number of the purgatory's journal read up to, and when to read everything again.
    pending: dict = field(default_factory=dict)
    seen_seq: int = 0
    sweep_due: float = 0.0

    def eviction_key(self) -> tuple[bool, int, int]:
        """Kafka's EvictableKey: the smallest is evicted first."""
        return (self.privileged, len(self.partitions), self.session_id)


class FetchSessionCache:
    def __init__(self, max_slots: int, clock: Callable[[], float] = time.monotonic):
        self.max_slots = max_slots
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0
        self._clock = clock
        self._ids = itertools.count(random.randrange(1, 1 << 20))
        # Whether leadership changes reach the fetch purgatory's journal (handle_fetch
        # wires it at its first fetch).
        self.leadership_tracked = False

    def new_session(self, privileged: bool = False, size: int = 0) -> FetchSession | None:
        """A new session for a full fetch of `size` partitions, or None when the cache is
        full of sessions it may not evict."""
        if self.max_slots <= 0:
            return None
        now = self._clock()
        if len(self.sessions) >= self.max_slots and not self._try_evict(privileged, size, now):
            return None
        session_id = self._next_id()
        session = FetchSession(
            session_id, INITIAL_EPOCH + 1, privileged, created=now, last_used=now
        )
        self.sessions[session_id] = session
        return session

    def _next_id(self) -> int:
        while True:
            session_id = next(self._ids) & 0x7FFFFFFF
            if session_id != NO_SESSION and session_id not in self.sessions:
                return session_id

    def _try_evict(self, privileged: bool, size: int, now: float) -> bool:
        eviction = EVICTION_MS / 1000
        least_recent = min(self.sessions.values(), key=lambda s: s.last_used)
        if now - least_recent.last_used > eviction:
            self._evict(least_recent)
            return True
        candidates = [
            s
            for s in self.sessions.values()
            if now - s.created > eviction or (privileged and not s.privileged)
        ]
        if not candidates:
            return False
        weakest = min(candidates, key=FetchSession.eviction_key)
        if (privileged, size, NO_SESSION) < weakest.eviction_key():
            return False
        self._evict(weakest)
        return True

    def _evict(self, session: FetchSession) -> None:
        del self.sessions[session.session_id]
        self.evictions += 1

    def close(self, session_id: int) -> None:
        self.sessions.pop(session_id, None)

    def incremental(self, session_id: int, epoch: int) -> FetchSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise KafkaError(ErrorCode.fetch_session_id_not_found)
        if epoch != session.next_epoch:
            raise KafkaError(ErrorCode.invalid_fetch_session_epoch)
        session.next_epoch = epoch + 1 if epoch < 0x7FFFFFFF else 1
        session.last_used = self._clock()
        return session

    @property
    def partition_count(self) -> int:
        """Partitions held over all sessions (Kafka's NumIncrementalFetchPartitionsCached)."""
        return sum(len(s.partitions) for s in self.sessions.values())
