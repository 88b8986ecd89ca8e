"""A synchronous facade for code without an event loop: Django views, Celery tasks, Spark.

`SyncClient` runs one event loop in a daemon thread and marshals every call onto it, so it
may be used from any number of plain threads at once. Its `admin`, and the producers and
consumers it makes, have the same methods as the asyncio classes, blocking instead of
awaitable; async iterators (`Consumer.iter_range`) become plain iterators, and
`Producer.send` returns a `concurrent.futures.Future`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from collections.abc import Coroutine, Iterator, Sequence
from typing import Any, TypeVar

from .admin import AdminClient
from .cluster import Cluster
from .consumer import Consumer
from .errors import KafkaClientError
from .producer import Producer

T = TypeVar("T")


class LoopThread:
    """An event loop running in its own daemon thread."""

    def __init__(self, name: str = "brokerd-client-loop"):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if self.loop.is_closed():
            coroutine.close()
            raise KafkaClientError("the client is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("a blocking call from inside the client's own loop would hang")
        return self.submit(coroutine).result(timeout)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


class SyncProxy:
    """Blocking versions of an asyncio object's coroutine methods, run on a LoopThread."""

    def __init__(self, target: Any, loop: LoopThread):
        self._target = target
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if inspect.iscoroutinefunction(attribute):

            def blocking(*args: Any, **kwargs: Any) -> Any:
                return self._loop.run(attribute(*args, **kwargs))

            return blocking
        if inspect.isasyncgenfunction(attribute):

            def iterate(*args: Any, **kwargs: Any) -> Iterator[Any]:
                return _iterate(self._loop, attribute(*args, **kwargs))

            return iterate
        return attribute


def _iterate(loop: LoopThread, generator: Any) -> Iterator[Any]:
    try:
        while True:
            try:
                yield loop.run(generator.__anext__())
            except StopAsyncIteration:
                return
    finally:
        loop.run(generator.aclose())


class SyncProducer(SyncProxy):
    def send(self, topic: str, value: bytes | None = None, key: bytes | None = None, **kw: Any):
        """Buffer a record (blocking only while buffering); a Future of its RecordMetadata."""
        done: concurrent.futures.Future = concurrent.futures.Future()

        async def buffer() -> None:
            pending = await self._target.send(topic, value, key, **kw)
            pending.add_done_callback(lambda f: _copy_result(f, done))

        self._loop.run(buffer())
        return done

    def close(self) -> None:
        self._loop.run(self._target.close())


def _copy_result(source: asyncio.Future, target: concurrent.futures.Future) -> None:
    if source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(source.exception())
    else:
        target.set_result(source.result())


class SyncClient:
    """Blocking access to one cluster: `admin`, `producer(...)`, `consumer(...)`."""

    def __init__(self, bootstrap_servers: str | Sequence[str], **cluster_options: Any):
        self._loop = LoopThread()
        try:
            self.cluster: Cluster = self._loop.run(
                _started_cluster(bootstrap_servers, cluster_options)
            )
        except BaseException:
            self._loop.stop()
            raise
        self.admin = SyncProxy(AdminClient(self.cluster), self._loop)

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run any coroutine of the async API on the client's loop."""
        return self._loop.run(coroutine, timeout)

    def producer(self, **options: Any) -> SyncProducer:
        async def make() -> Producer:
            producer = Producer(self.cluster, **options)
            await producer.start()
            return producer

        return SyncProducer(self._loop.run(make()), self._loop)

    def consumer(self, **options: Any) -> SyncProxy:
        async def make() -> Consumer:
            return Consumer(self.cluster, **options)

        return SyncProxy(self._loop.run(make()), self._loop)

    def close(self) -> None:
        if self._loop.loop.is_closed():
            return
        try:
            self._loop.run(self.cluster.close(), timeout=30)
        finally:
            self._loop.stop()


async def _started_cluster(bootstrap_servers: Any, options: dict[str, Any]) -> Cluster:
    cluster = Cluster(bootstrap_servers, **options)
    try:
        await cluster.start()
    except BaseException:
        await cluster.close()
        raise
    return cluster
