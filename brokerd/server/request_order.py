"""When the next request on a connection may start: Kafka's per-connection order.

Kafka handles one request per connection at a time (the channel is muted until the
response is sent), so a request sees every effect of the ones sent before it on that
connection. Here a request starts once every earlier request on its connection has
finished, with one exception, for throughput: a Produce that follows a Produce starts as soon
as the earlier one has appended (its handler calls `effect_taken()`), without waiting for
that one's acks=all replication or fsync. Appends stay in request order (the idempotent
producer's sequence numbers rely on it), and the only thing the earlier produce still does
is wait, which the later one cannot observe: it never reads what another produce answers.
Every other request waits for everything before it to finish, e.g. a Fetch after an
acks=all Produce sees the high watermark the produce waited for, as in Kafka. Without the
exception, a client pipelining acks=all produces on one connection (librdkafka and the Java
client keep up to 5 in flight) would pay one replication round trip per request in turn.

Other connections are never held up: a long-polling Fetch delays only its own connection.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from typing import Any

PRODUCE = 0

# The effect of the request a handler is running for, set when it has taken effect.
_current_effect: contextvars.ContextVar[asyncio.Future | None] = contextvars.ContextVar(
    "current_effect", default=None
)


def effect_taken() -> None:
    """The running request has made its changes (a produce: appended to the leader's log);
    what remains cannot be observed by a request that may then start (see module doc)."""
    effect = _current_effect.get()
    if effect is not None and not effect.done():
        effect.set_result(None)


class RequestSequencer:
    """Starts one connection's requests in order, each when its turn has come."""

    def __init__(self) -> None:
        self._unfinished: list[asyncio.Task] = []
        self._last_api_key: int | None = None
        self._last_effect: asyncio.Future | None = None

    async def wait_turn(self, api_key: int) -> None:
        """Return once a request of `api_key`, next in order, may start."""
        if api_key == PRODUCE and self._last_api_key == PRODUCE:
            assert self._last_effect is not None
            await asyncio.shield(self._last_effect)
            return
        self._unfinished = [task for task in self._unfinished if not task.done()]
        if self._unfinished:
            await asyncio.wait(self._unfinished)
            self._unfinished.clear()

    def start(self, api_key: int, handling: Coroutine[Any, Any, Any]) -> asyncio.Task:
        """Run `handling` now (its turn has come) as a task."""
        effect = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(_run(handling, effect))
        # A task cancelled before its first step (the connection went away) never awaited
        # `handling`: closing it then spares the "never awaited" warning; otherwise a no-op.
        task.add_done_callback(lambda _: handling.close())
        self._unfinished.append(task)
        self._last_api_key = api_key
        self._last_effect = effect
        return task


async def _run(handling: Coroutine[Any, Any, Any], effect: asyncio.Future) -> Any:
    _current_effect.set(effect)
    try:
        return await handling
    finally:
        if not effect.done():
            effect.set_result(None)  # finished: whatever it did has been done
