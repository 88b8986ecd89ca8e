"""The asyncio servers for the broker's listeners, and the set of live connections."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from brokerd.config import Endpoint

from .connection import Connection

if TYPE_CHECKING:
    from .broker import Broker

log = logging.getLogger(__name__)

DRAIN_TIMEOUT_S = 10  # SIGTERM answers in-flight requests for at most this long


class Listener:
    """One listener (e.g. PLAINTEXT://127.0.0.1:9092); port 0 binds a free port."""

    def __init__(self, broker: Broker, endpoint: Endpoint):
        self.broker = broker
        self.endpoint = endpoint
        self.server: asyncio.Server | None = None
        self.connections: set[Connection] = set()
        self._tasks: set[asyncio.Task] = set()

    @property
    def bound_port(self) -> int:
        assert self.server is not None
        return self.server.sockets[0].getsockname()[1]

    async def start(self) -> None:
        host = self.endpoint.host or None  # empty host: all interfaces, as Kafka does
        self.server = await asyncio.start_server(
            self._accept, host, self.endpoint.port, reuse_address=True, limit=1 << 16
        )
        log.info("listening on %s (port %d)", self.endpoint.uri, self.bound_port)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = Connection(self.broker, reader, writer, self.endpoint.listener_name)
        self.connections.add(connection)
        self._tasks.add(asyncio.current_task())
        try:
            await connection.serve()
        except Exception:
            log.exception("connection from %s failed", connection.peer)
        finally:
            self.connections.discard(connection)
            self._tasks.discard(asyncio.current_task())

    def stop_accepting(self) -> None:
        if self.server is not None:
            self.server.close()

    async def drain(self) -> None:
        """Stop reading new requests on every connection; wait for owed responses."""
        for connection in list(self.connections):
            connection.stop_reading()
        if self._tasks:
            _, stuck = await asyncio.wait(set(self._tasks), timeout=DRAIN_TIMEOUT_S)
            if stuck:
                # A handler waiting on something shutdown has already stopped must not
                # hold the process: its client sees a closed connection and retries.
                log.warning(
                    "%d connections still owed responses after %ds; closing them",
                    len(stuck),
                    DRAIN_TIMEOUT_S,
                )
                for connection in list(self.connections):
                    connection.abandon()
