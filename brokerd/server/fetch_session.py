"""Fetch sessions (KIP-227): the broker remembers a consumer's partitions between fetches.

Epoch 0 opens a session with a full fetch; later fetches carry session id and the next
epoch and list only what changed (added or updated partitions, forgotten ones), and the
response leaves out partitions with nothing new. Epoch -1 is a sessionless full fetch
(closing the named session, if any).
"""

from __future__ import annotations

import itertools
import random
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from brokerd.protocol.errors import ErrorCode, KafkaError

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
NO_SESSION = 0


@dataclass
class SessionPartition:
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    # What the client last heard, so unchanged partitions can be left out.
    last_high_watermark: int | None = None
    last_log_start_offset: int | None = None


@dataclass
class FetchSession:
    session_id: int
    next_epoch: int
    partitions: OrderedDict = field(default_factory=OrderedDict)  # (topic, p) -> state
    last_used: float = field(default_factory=time.monotonic)


class FetchSessionCache:
    def __init__(self, max_slots: int):
        self.max_slots = max_slots
        self.sessions: dict[int, FetchSession] = {}
        self._ids = itertools.count(random.randrange(1, 1 << 20))

    def new_session(self) -> FetchSession | None:
        if self.max_slots <= 0:
            return None
        if len(self.sessions) >= self.max_slots:
            oldest = min(self.sessions.values(), key=lambda s: s.last_used)
            del self.sessions[oldest.session_id]
        session_id = next(self._ids) & 0x7FFFFFFF or next(self._ids)
        session = FetchSession(session_id, INITIAL_EPOCH + 1)
        self.sessions[session_id] = session
        return session

    def close(self, session_id: int) -> None:
        self.sessions.pop(session_id, None)

    def incremental(self, session_id: int, epoch: int) -> FetchSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise KafkaError(ErrorCode.fetch_session_id_not_found)
        if epoch != session.next_epoch:
            raise KafkaError(ErrorCode.invalid_fetch_session_epoch)
        session.next_epoch = epoch + 1 if epoch < 0x7FFFFFFF else 1
        session.last_used = time.monotonic()
        return session
