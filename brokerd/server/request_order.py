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

A Produce whose turn has come runs at once, inside `start`, up to its first real wait (an
acks=1 produce: to its encoded answer), rather than as a task the event loop starts on a later
pass. librdkafka sends one partition per Produce request, so a producer spread over 1,000
partitions sends one request per batch; each used to wait for the loop to start the one
before it (to its appends) and then for the loop to wake the reader: two passes of a loop
busy with every other connection per request, which bounded such a producer to a few hundred
requests a second per connection whatever the broker's CPU (issue 15's "produce to 1,000
partitions at once"). Python 3.12's eager tasks do the same; this is Python 3.11.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Generator
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
        self._unfinished: list[asyncio.Future] = []
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

    def start(self, api_key: int, handling: Coroutine[Any, Any, Any]) -> asyncio.Future:
        """Run `handling` now (its turn has come): a Produce runs here up to its first wait
        (see module doc), anything else as a task. The future holds its result."""
        loop = asyncio.get_running_loop()
        effect = loop.create_future()
        if api_key == PRODUCE:
            task = start_eagerly(loop, _run(handling, effect))
        else:
            task = asyncio.create_task(_run(handling, effect))
        # A task cancelled before its first step (the connection went away) never awaited
        # `handling`: closing it then spares the "never awaited" warning; otherwise a no-op.
        task.add_done_callback(lambda _: handling.close())
        # Pruned here too: a connection that only produces never reaches wait_turn's
        # pruning, and kept every finished request (and its answer) for its lifetime.
        self._unfinished = [earlier for earlier in self._unfinished if not earlier.done()]
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


def start_eagerly(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]
) -> asyncio.Future:
    """Run `coro` now, in a context of its own (as a task would), up to its first suspension;
    a task goes on from there. Finished without suspending: a done future, no task at all."""
    context = contextvars.copy_context()
    try:
        suspended_on = context.run(coro.send, None)
    except StopIteration as finished:
        done = loop.create_future()
        done.set_result(finished.value)
        return done
    except Exception as exc:  # noqa: BLE001 - the future carries it, as a task's would
        failed = loop.create_future()
        failed.set_exception(exc)
        return failed
    task = asyncio.create_task(_go_on(coro, suspended_on), context=context)
    # Cancelled before its first step, the task never resumes `coro`: close it then (a
    # no-op once `coro` has finished) rather than rely on CPython's refcounting to.
    task.add_done_callback(lambda _: coro.close())
    return task


async def _go_on(coro: Coroutine[Any, Any, Any], suspended_on: Any) -> Any:
    return await _Resumed(coro, suspended_on)


class _Resumed:
    """A coroutine already stepped once, awaited from where it stopped: what `await coro`
    would do after its first step (the task sees the future it waits on, sends and throws
    into it, cancellation included)."""

    __slots__ = ("_coro", "_suspended_on")

    def __init__(self, coro: Coroutine[Any, Any, Any], suspended_on: Any) -> None:
        self._coro = coro
        self._suspended_on = suspended_on

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, waiting_on = self._coro, self._suspended_on
        while True:
            try:
                sent = yield waiting_on
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # noqa: BLE001 - cancellation goes into coro
                try:
                    waiting_on = coro.throw(exc)
                except StopIteration as finished:
                    return finished.value
            else:
                try:
                    waiting_on = coro.send(sent)
                except StopIteration as finished:
                    return finished.value
