"""One client connection: pipelined requests, answered strictly in request order.

A reader task parses frames and starts each request's handler at once (so a long-polling
Fetch does not stall the parsing of what follows); a writer task awaits the handlers in
arrival order and writes their responses. A frame that cannot be read, or an API the broker
does not advertise, ends this connection only: responses already owed are written first.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brokerd.protocol import framing
from brokerd.protocol.framing import FrameError, Request, UnsupportedRequest

if TYPE_CHECKING:
    from .broker import Broker

log = logging.getLogger(__name__)

# The peer (host, port) of the connection whose request a handler answers; each request runs
# in its own task, so this is per request (JoinGroup records it as the member's host).
current_peer: contextvars.ContextVar[tuple | None] = contextvars.ContextVar(
    "current_peer", default=None
)
# The name of the listener that connection came in on (inter-broker APIs check it).
current_listener: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "current_listener", default=None
)


@dataclass(slots=True)
class ResponseParts:
    """A response written piecewise, in order (the Fetch path): bytes, and file regions
    (`.file`, `.position`, `.length`, e.g. brokerd.log.segment.FileRegion) sent with sendfile.
    A region with `release()` (brokerd.log.log.OwnedRegion) is released once written, or
    when the connection fails while writing it."""

    parts: list[Any]

    @property
    def size(self) -> int:
        return sum(len(p) if isinstance(p, bytes) else p.length for p in self.parts)

    def release(self) -> None:
        for part in self.parts:
            release = getattr(part, "release", None)
            if release is not None:
                release()


_END = object()


class Connection:
    def __init__(
        self,
        broker: Broker,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        listener_name: str | None = None,
    ):
        self.broker = broker
        self.listener_name = listener_name
        self.reader = reader
        self.writer = writer
        self.peer = writer.get_extra_info("peername")
        self.max_request_bytes = broker.config.get("socket.request.max.bytes")
        self._pending: asyncio.Queue = asyncio.Queue(broker.config.get("queued.max.requests"))
        self._read_task: asyncio.Task | None = None

    async def serve(self) -> None:
        self._read_task = asyncio.create_task(self._read_requests())
        write_task = asyncio.create_task(self._write_responses())
        try:
            # wait() rather than await: cancelling the reader (shutdown) must not cancel us.
            await asyncio.wait([self._read_task])
        finally:
            await self._pending.put(_END)
            try:
                await asyncio.wait([write_task])
            finally:
                self.writer.close()

    def stop_reading(self) -> None:
        """Read no further requests; those already read are still answered."""
        if self._read_task is not None and not self._read_task.done():
            self._read_task.cancel()

    async def _read_requests(self) -> None:
        while True:
            try:
                frame = await framing.read_frame(self.reader, self.max_request_bytes)
                if frame is None:
                    return
                request = framing.decode_request(frame)
                self.broker.metrics.request_received(request)
            except UnsupportedRequest as exc:
                log.info("closing connection from %s: %s", self.peer, exc)
                return
            except (FrameError, ConnectionError) as exc:
                log.info("closing connection from %s: %s", self.peer, exc)
                return
            handling = asyncio.create_task(self._handle(request))
            await self._pending.put((request, handling))

    async def _handle(self, request: Request) -> Any:
        current_peer.set(self.peer)
        current_listener.set(self.listener_name)
        if request.unsupported_api_versions:
            return framing.unsupported_api_versions_response(request)
        response = await self.broker.dispatcher.dispatch(request)
        if response is None or isinstance(response, bytes | ResponseParts):
            return response
        return framing.encode_response(request, response)

    async def _write_responses(self) -> None:
        while True:
            item = await self._pending.get()
            if item is _END:
                return
            request, handling = item
            try:
                response = await handling
            except Exception:
                log.exception(
                    "%s v%d from %s failed; closing the connection",
                    request.name,
                    request.api_version,
                    self.peer,
                )
                self._abandon()
                return
            if response is None:
                continue  # acks=0 produce: no response at all
            try:
                await self._send(response)
                self.broker.metrics.response_sent(
                    request, len(response) if isinstance(response, bytes) else response.size
                )
            except (ConnectionError, OSError) as exc:
                log.info("connection from %s lost while writing: %s", self.peer, exc)
                self._abandon()
                return
            except Exception:
                # Anything else half-wrote a response: the stream is no longer framed, so
                # the client must be disconnected rather than left waiting.
                log.exception("writing a %s response to %s failed", request.name, self.peer)
                self._abandon()
                return
            finally:
                if isinstance(response, ResponseParts):
                    response.release()

    async def _send(self, response: bytes | ResponseParts) -> None:
        if isinstance(response, bytes):
            self.writer.write(response)
            await self.writer.drain()
            return
        loop = asyncio.get_running_loop()
        for part in response.parts:
            if isinstance(part, bytes):
                self.writer.write(part)
                continue
            await self.writer.drain()
            if part.length:
                await loop.sendfile(self.writer.transport, part.file, part.position, part.length)
        await self.writer.drain()

    def abandon(self) -> None:
        """Shutdown gave up waiting: drop unanswered work and close."""
        self._abandon()

    def _abandon(self) -> None:
        """Stop reading and drop unanswered work: the connection is going away."""
        self.stop_reading()
        while not self._pending.empty():
            item = self._pending.get_nowait()
            if item is not _END:
                item[1].cancel()
        self.writer.close()
