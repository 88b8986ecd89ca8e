"""Where long-polling Fetch requests wait for data (Kafka's DelayedFetch purgatory).

A parked fetch waits on the partitions it reads; an append to any of them wakes it to
re-check min_bytes, and max_wait_ms bounds the wait. Wake-ups are level-less: a woken
fetch re-reads the logs and parks again if there is still too little.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

Key = Any  # (topic, partition)


class FetchPurgatory:
    def __init__(self) -> None:
        self._watchers: dict[Key, set[asyncio.Future]] = {}
        self._all: set[asyncio.Future] = set()
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

    def notify(self, key: Key) -> None:
        for waiter in self._watchers.pop(key, ()):
            if not waiter.done():
                waiter.set_result(None)

    def wake_all(self) -> None:
        """Shutdown: every parked fetch answers now with what it has."""
        self.closed = True
        for waiter in list(self._all):
            if not waiter.done():
                waiter.set_result(None)
