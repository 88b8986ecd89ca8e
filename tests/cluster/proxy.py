"""Test-controlled TCP proxies on loopback, for network partitions between processes.

A `Link` forwards one listening port to one target port. Cut, it behaves like a network
that drops packets: bytes on open connections are swallowed (no FIN, no RST, so peers only
notice through their own timeouts) and new connections are accepted but go nowhere. Healed,
the swallowed connections are closed (as their peers' TCP would have given up by then) and
new connections forward again. All links run on one asyncio loop in a daemon thread; the
test thread drives them through `Network`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

HOST = "127.0.0.1"
CHUNK = 65536


class Link:
    """127.0.0.1:<port> -> 127.0.0.1:<target_port>, cut and healed by the test."""

    def __init__(self, name: str, target_port: int):
        self.name = name
        self.target_port = target_port
        self.port = 0
        self.cut = False
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def __repr__(self) -> str:
        state = "cut" if self.cut else "open"
        return f"Link({self.name}: {self.port} -> {self.target_port}, {state})"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, HOST, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self._close_all()

    def heal(self) -> None:
        if self.cut:
            self.cut = False
            self._close_all()  # connections whose bytes were dropped cannot resume

    def _close_all(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        if self.cut:
            await self._swallow(reader)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(HOST, self.target_port)
        except OSError:
            writer.transport.abort()  # nothing listens there (the target is down)
            self._writers.discard(writer)
            return
        self._writers.add(up_writer)
        await asyncio.gather(
            self._pump(reader, up_writer), self._pump(up_reader, writer), return_exceptions=True
        )
        for end in (writer, up_writer):
            end.transport.abort()
            self._writers.discard(end)

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while True:
            data = await source.read(CHUNK)
            if not data:
                with contextlib.suppress(OSError):
                    sink.write_eof()
                return
            if self.cut:
                continue  # dropped on the floor, as a partitioned network would
            sink.write(data)
            await sink.drain()

    async def _swallow(self, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(OSError, ConnectionError):
            while await reader.read(CHUNK):
                pass


class Network:
    """A set of named links on one event loop thread: `add`, `cut`, `heal`."""

    def __init__(self):
        self.links: dict[str, Link] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    def _call(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(10)

    def add(self, name: str, target_port: int) -> Link:
        link = Link(name, target_port)
        self._call(link.start())
        self.links[name] = link
        return link

    def cut(self, *names: str) -> None:
        async def cut() -> None:
            for name in names:
                self.links[name].cut = True

        self._call(cut())

    def heal(self, *names: str) -> None:
        """Heal the named links, or all of them."""

        async def heal() -> None:
            for name in names or list(self.links):
                self.links[name].heal()

        self._call(heal())

    def close(self) -> None:
        async def stop_all() -> None:
            for link in self.links.values():
                await link.stop()

        self._call(stop_all())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
