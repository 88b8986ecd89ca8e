"""queued.max.request.bytes: the bytes of requests being read or handled, broker-wide.

Kafka's broker uses a non-strict SimpleMemoryPool of that size: a request is admitted whole
(the size its frame announces) as soon as any memory is free, so the total may exceed the
pool by one request (at most socket.request.max.bytes), and every admitted request can be
read to its end; while nothing is free, no connection reads another request. The memory
comes back once the request has been handled. Admitting counts bytes, it allocates nothing:
the frame is read as its bytes arrive. A size of 0 or less (Kafka's default -1) is unbounded.
"""

from __future__ import annotations

import asyncio
from collections import deque


class Reservation:
    """Bytes taken from the pool for one request; `release` gives them back (once)."""

    __slots__ = ("_pool", "size")

    def __init__(self, pool: RequestMemoryPool | None, size: int):
        self._pool = pool
        self.size = size

    def release(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool._give_back(self.size)


UNBOUNDED = Reservation(None, 0)


class RequestMemoryPool:
    def __init__(self, size: int):
        self.size = size
        self.available = size
        # Connections waiting for memory, served first come first served, one at a time:
        # the one woken takes its share before the next is considered.
        self._waiting: deque[asyncio.Future] = deque()
        self._handing_over = False

    @property
    def bounded(self) -> bool:
        return self.size > 0

    @property
    def out_of_memory(self) -> bool:
        return self.bounded and self.available <= 0

    async def reserve(self, size: int) -> Reservation:
        """Wait until some memory is free, then take `size` bytes (possibly more than is
        free, as Kafka's non-strict pool does)."""
        if not self.bounded:
            return UNBOUNDED
        if self.available <= 0 or self._waiting or self._handing_over:
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._handing_over = False  # it was our turn: pass it on
                    self._wake_next()
                else:
                    self._waiting.remove(waiter)
                raise
            self._handing_over = False
        self.available -= size
        self._wake_next()
        return Reservation(self, size)

    def _give_back(self, size: int) -> None:
        self.available += size
        self._wake_next()

    def _wake_next(self) -> None:
        if self._handing_over or self.available <= 0:
            return
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                self._handing_over = True
                return
