"""Where requests wait: long-polling fetches (DelayedFetch) and acks=all produces
(DelayedProduce).

A parked fetch waits on the partitions it reads; an append to any of them wakes it to
re-check min_bytes, and max_wait_ms bounds the wait. Wake-ups are level-less: a woken
fetch re-reads the logs and parks again if there is still too little.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from brokerd.protocol.errors import ErrorCode

Key = Any  # (topic, partition)

# The change journal's length (see FetchPurgatory.changes_since): a fetch session that fell
# further behind than this walks all its partitions once.
CHANGE_JOURNAL = 65536


class FetchPurgatory:
    def __init__(self) -> None:
        self._watchers: dict[Key, set[asyncio.Future]] = {}
        self._all: set[asyncio.Future] = set()
        # Parked session fetches: woken by a change to any partition their test accepts
        # (a follower's session of 10,000 partitions registers once, not 10,000 times).
        self._any_of: dict[asyncio.Future, Callable[[Key], bool]] = {}
        # Every notified partition in order, numbered: a fetch session reads only the
        # partitions changed since its last answer (changes_since).
        self.change_seq = 0
        self._changes: deque[tuple[int, Key]] = deque(maxlen=CHANGE_JOURNAL)
        self.closed = False

    async def wait(self, keys: Iterable[Key], timeout: float) -> bool:
        """Wait until one of `keys` gets an append (True) or the timeout (False)."""
        if self.closed or timeout <= 0:
            return False
        keys = list(keys)
        waiter = asyncio.get_running_loop().create_future()
        for key in keys:
            self._watchers.setdefault(key, set()).add(waiter)
        self._all.add(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            self._all.discard(waiter)
            for key in keys:
                watchers = self._watchers.get(key)
                if watchers is not None:
                    watchers.discard(waiter)
                    if not watchers:
                        del self._watchers[key]

    async def wait_any(self, wanted: Callable[[Key], bool], timeout: float) -> bool:
        """Wait until a partition `wanted` accepts is notified (True) or the timeout."""
        if self.closed or timeout <= 0:
            return False
        waiter = asyncio.get_running_loop().create_future()
        self._any_of[waiter] = wanted
        self._all.add(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            self._all.discard(waiter)
            self._any_of.pop(waiter, None)

    def notify(self, key: Key) -> None:
        """An append, a HW move or a leadership change of `key`."""
        self.change_seq += 1
        self._changes.append((self.change_seq, key))
        for waiter in self._watchers.pop(key, ()):
            if not waiter.done():
                waiter.set_result(None)
        if self._any_of:
            for waiter, wanted in list(self._any_of.items()):
                if not waiter.done() and wanted(key):
                    waiter.set_result(None)

    def notify_many(self, keys: Iterable[Key]) -> None:
        for key in keys:
            self.notify(key)

    def changes_since(self, seq: int, limit: int | None = None) -> list[Key] | None:
        """The partitions notified after change number `seq` (repeats possible), newest
        first; None when the journal no longer reaches back that far, or when there are
        more than `limit` (reading them would cost more than reading everything)."""
        if seq >= self.change_seq:
            return []
        if limit is not None and self.change_seq - seq > limit:
            return None
        changes = self._changes
        if not changes or changes[0][0] > seq + 1:
            return None
        keys = []
        for number, key in reversed(changes):
            if number <= seq:
                break
            keys.append(key)
        return keys

    def wake_all(self) -> None:
        """Shutdown: every parked fetch answers now with what it has."""
        self.closed = True
        for waiter in list(self._all):
            if not waiter.done():
                waiter.set_result(None)

    def __len__(self) -> int:
        """Fetches parked now (a gauge of the admin API)."""
        return len(self._all)


class ProducePurgatory:
    """acks=all produces wait here until the high watermark covers their last offset.

    The replica manager calls `high_watermark_moved` when a leader's HW advances and
    `leadership_lost` when it stops leading; each waiter gets an error code (NONE when
    replicated; NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
    min.insync.replicas meanwhile is decided by the caller, which knows the ISR)."""

    def __init__(self) -> None:
        self._waiters: dict[Key, list[tuple[int, asyncio.Future]]] = {}

    async def wait(self, key: Key, required_offset: int, timeout: float) -> ErrorCode:
        future = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(key, []).append((required_offset, future))
        try:
            return await asyncio.wait_for(asyncio.shield(future), max(timeout, 0))
        except TimeoutError:
            return ErrorCode.request_timed_out
        finally:
            waiters = self._waiters.get(key)
            if waiters is not None:
                waiters[:] = [w for w in waiters if w[1] is not future]
                if not waiters:
                    del self._waiters[key]

    def high_watermark_moved(self, key: Key, high_watermark: int) -> None:
        for required, future in self._waiters.get(key, ()):
            if required <= high_watermark and not future.done():
                future.set_result(ErrorCode.none)

    def leadership_lost(self, key: Key) -> None:
        for _, future in self._waiters.get(key, ()):
            if not future.done():
                future.set_result(ErrorCode.not_leader_or_follower)

    def wake_all(self) -> None:
        for waiters in self._waiters.values():
            for _, future in waiters:
                if not future.done():
                    future.set_result(ErrorCode.not_leader_or_follower)

    def __len__(self) -> int:
        return sum(len(w) for w in self._waiters.values())
