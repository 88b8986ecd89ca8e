"""One client connection: pipelined requests, handled and answered in request order.

A reader task reads each frame as its bytes arrive, within queued.max.request.bytes (shared
by every connection, see memory_pool.py), decodes it and starts its handler when its turn
has come (request_order.py: after the requests before it, as Kafka handles one request per
connection at a time); a writer task awaits the handlers in order and writes their
responses. A connection that received nothing and owed nothing for connections.max.idle.ms
is closed, a half-sent frame included. A frame that cannot be read, or an API the broker does
not advertise, ends this connection only: responses already owed are written first.

On a SASL listener nothing is read into that pipeline until the client has authenticated
(brokerd.security.sasl.authenticator); a later SaslHandshake re-authenticates (KIP-368) once
every earlier request is answered, and any other request after the session expired
(connections.max.reauth.ms) closes the connection, as Kafka does.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from brokerd.protocol import framing
from brokerd.protocol.framing import FrameError, Request
from brokerd.security.sasl.authenticator import SASL_HANDSHAKE, SaslServerAuthenticator

from .memory_pool import UNBOUNDED, RequestMemoryPool, Reservation
from .request_order import RequestSequencer

if TYPE_CHECKING:
    from brokerd.config import BrokerConfig
    from brokerd.security.sasl.settings import SaslServerSettings

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
# Who the connection authenticated as: `User:<name>` (a TLS client's mapped certificate
# name), User:ANONYMOUS without authentication, as Kafka's principal builder says.
current_principal: contextvars.ContextVar[str] = contextvars.ContextVar(
    "current_principal", default="User:ANONYMOUS"
)
# Under TLS a file region is read and written in chunks of this size (sendfile cannot
# encrypt): large enough to keep per-chunk overhead low, small enough to bound memory.
TLS_CHUNK_BYTES = 256 * 1024
# Requests one connection may have answered while reading (no pass of the event loop between
# them) before the reader lets the loop run: the writer and other connections wait no longer.
ANSWERED_IN_A_ROW_MAX = 16


@dataclass(slots=True)
class ResponseParts:
    """A response written piecewise, in order (the Fetch path): bytes, and file regions
    (`.file`, `.position`, `.length`, e.g. brokerd.log.segment.FileRegion) sent with sendfile.
    A region with `release()` (brokerd.log.local_log.OwnedRegion) is released once written, or
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


class RequestMetrics(Protocol):
    """What a connection reports: each request read, each response written (bytes)."""

    def request_received(self, request: Request) -> None: ...

    def response_sent(self, request: Request, size: int) -> None: ...


@dataclass(frozen=True, slots=True)
class ConnectionServices:
    """What every connection of the broker shares: the handlers, the request memory pool,
    the metrics, and the (read-only) limits on one connection."""

    dispatch: Callable[[Request], Awaitable[Any]]
    memory: RequestMemoryPool  # queued.max.request.bytes, broker-wide
    metrics: RequestMetrics
    max_request_bytes: int  # socket.request.max.bytes
    max_queued_requests: int  # queued.max.requests
    max_idle_ms: int  # connections.max.idle.ms

    @classmethod
    def of(
        cls,
        config: BrokerConfig,
        dispatch: Callable[[Request], Awaitable[Any]],
        memory: RequestMemoryPool,
        metrics: RequestMetrics,
    ) -> ConnectionServices:
        return cls(
            dispatch=dispatch,
            memory=memory,
            metrics=metrics,
            max_request_bytes=config.socket.socket_request_max_bytes,
            max_queued_requests=config.socket.queued_max_requests,
            max_idle_ms=config.socket.connections_max_idle_ms,
        )


class Connection:
    def __init__(
        self,
        services: ConnectionServices,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        listener_name: str | None = None,
        principal: str = "User:ANONYMOUS",
        sasl: SaslServerSettings | None = None,
    ):
        self._dispatch = services.dispatch
        self._metrics = services.metrics
        self.sasl = sasl  # a SASL listener's settings: authenticate before anything else
        self._session_expires: float | None = None  # connections.max.reauth.ms, loop time
        self._all_answered = asyncio.Event()
        self._authenticating = False  # the first exchange: nothing read into the pipeline yet
        self.listener_name = listener_name
        self.principal = principal
        self.tls = writer.get_extra_info("ssl_object") is not None
        self.reader = reader
        self.writer = writer
        self.peer = writer.get_extra_info("peername")
        self.max_request_bytes = services.max_request_bytes
        self._loop = asyncio.get_running_loop()
        self._memory = services.memory
        self._reading: Reservation = UNBOUNDED  # the frame being read
        self._sequencer = RequestSequencer()
        self._answered_in_a_row = 0  # requests handled while reading, without a loop pass
        # Requests started or waiting to: at most queued.max.requests read ahead.
        self._slots = asyncio.Semaphore(services.max_queued_requests)
        self._pending: asyncio.Queue = asyncio.Queue()  # (request, handling), in order
        self._owed = 0  # requests started and not answered yet
        self._read_task: asyncio.Task | None = None
        self.last_active = self._loop.time()  # bytes received, or the last owed answer sent
        self._max_idle_s = services.max_idle_ms / 1000
        self._idle_check: asyncio.TimerHandle | None = None

    async def serve(self) -> None:
        self._schedule_idle_check(self.last_active + self._max_idle_s)
        if self.sasl is not None and not await self._authenticate_first(self.sasl):
            if self._idle_check is not None:
                self._idle_check.cancel()
            self.writer.close()
            return
        self._read_task = asyncio.create_task(self._read_requests())
        write_task = asyncio.create_task(self._write_responses())
        try:
            # wait() rather than await: cancelling the reader (shutdown) must not cancel us.
            await asyncio.wait([self._read_task])
        finally:
            self._pending.put_nowait(_END)
            try:
                await asyncio.wait([write_task])
            finally:
                if self._idle_check is not None:
                    self._idle_check.cancel()
                self.writer.close()

    # Idle expiry (connections.max.idle.ms) --------------------------------------------------
    def _schedule_idle_check(self, when: float) -> None:
        if self._max_idle_s >= 0:
            self._idle_check = self._loop.call_at(when, self._expire_if_idle)

    def _expire_if_idle(self) -> None:
        """Close the connection if it has received nothing for connections.max.idle.ms and
        owes no answer (a client waiting on a long poll or a rebalance is not idle)."""
        now = self._loop.time()
        if self._owed:
            self._schedule_idle_check(now + self._max_idle_s)
        elif now - self.last_active < self._max_idle_s:
            self._schedule_idle_check(self.last_active + self._max_idle_s)
        else:
            log.info(
                "closing connection from %s: idle for more than connections.max.idle.ms (%d)",
                self.peer,
                self._max_idle_s * 1000,
            )
            self._abandon()

    def _bytes_received(self) -> None:
        self.last_active = self._loop.time()

    def stop_reading(self) -> None:
        """Read no further requests; those already read are still answered."""
        if self._read_task is not None and not self._read_task.done():
            self._read_task.cancel()
        if self._authenticating:
            self.writer.close()  # owes nothing: shutdown must not wait on a half-done login

    # SASL ---------------------------------------------------------------------------------
    async def _authenticate_first(self, settings: SaslServerSettings) -> bool:
        self._authenticating = True
        try:
            return await self._authenticate(settings)
        finally:
            self._authenticating = False

    async def _authenticate(
        self, settings: SaslServerSettings, handshake: Request | None = None
    ) -> bool:
        """Authenticate (again, from a SaslHandshake already read); False: close."""
        authenticator = SaslServerAuthenticator(
            settings,
            self.reader,
            self.writer,
            self._answer_directly,
            self.peer,
            self._bytes_received,
        )
        principal = await authenticator.authenticate(
            handshake, self.principal if handshake is not None else None
        )
        if principal is None:
            return False
        self.principal = principal
        lifetime_ms = authenticator.session_lifetime_ms
        self._session_expires = self._loop.time() + lifetime_ms / 1000 if lifetime_ms else None
        return True

    async def _answer_directly(self, request: Request) -> bytes:
        return await self._handle(request)

    async def _reauthenticate(self, settings: SaslServerSettings, handshake: Request) -> bool:
        """KIP-368: once every earlier request is answered, run the exchange again on this
        connection (the writer is idle meanwhile); the principal must stay the same."""
        self._reading.release()
        self._reading = UNBOUNDED
        while self._owed:
            self._all_answered.clear()
            await self._all_answered.wait()
        return await self._authenticate(settings, handshake)

    def _session_expired(self) -> bool:
        return self._session_expires is not None and self._loop.time() > self._session_expires

    async def _read_requests(self) -> None:
        try:
            while (request := await self._read_request()) is not None:
                if self.sasl is not None:
                    if request.api_key == SASL_HANDSHAKE:
                        if not await self._reauthenticate(self.sasl, request):
                            return
                        continue
                    if self._session_expired():
                        log.info(
                            "closing connection from %s: its SASL session expired "
                            "(connections.max.reauth.ms) without re-authentication",
                            self.peer,
                        )
                        return
                await self._start_in_turn(request)
        finally:
            self._reading.release()  # a frame cut short, or read and never started

    async def _read_request(self) -> Request | None:
        """The next request, its memory held in `self._reading`; None to stop reading."""
        try:
            frame = await framing.read_frame(
                self.reader,
                self.max_request_bytes,
                admit=self._admit,
                progressed=self._bytes_received,
            )
            if frame is None:
                return None
            request = framing.decode_request(frame)
        except (FrameError, ConnectionError) as exc:  # UnsupportedRequest included
            log.info("closing connection from %s: %s", self.peer, exc)
            return None
        self._metrics.request_received(request)
        return request

    async def _admit(self, size: int) -> None:
        """queued.max.request.bytes: wait (reading nothing) until the pool has room."""
        self._reading = await self._memory.reserve(size)

    async def _start_in_turn(self, request: Request) -> None:
        await self._slots.acquire()
        try:
            await self._sequencer.wait_turn(request.api_key)
        except BaseException:
            self._slots.release()
            raise
        held, self._reading = self._reading, UNBOUNDED
        handling = self._sequencer.start(request.api_key, self._handle(request))
        # As Kafka releases a request's buffer: once it has been handled.
        handling.add_done_callback(lambda _: held.release())
        self._owed += 1
        self._pending.put_nowait((request, handling))
        if handling.done():
            # Answered without the loop (a Produce runs at once, see request_order): after a
            # few, let the loop run the writer and the other connections before reading on.
            self._answered_in_a_row += 1
            if self._answered_in_a_row >= ANSWERED_IN_A_ROW_MAX:
                self._answered_in_a_row = 0
                await asyncio.sleep(0)
        else:
            self._answered_in_a_row = 0

    async def _handle(self, request: Request) -> Any:
        current_peer.set(self.peer)
        current_listener.set(self.listener_name)
        current_principal.set(self.principal)
        if request.unsupported_api_versions:
            return framing.unsupported_api_versions_response(request)
        response = await self._dispatch(request)
        if response is None or isinstance(response, bytes | ResponseParts):
            return response
        return framing.encode_response(request, response)

    async def _write_responses(self) -> None:
        while True:
            item = await self._pending.get()
            if item is _END:
                return
            try:
                if not await self._answer(*item):
                    return
            finally:
                self._owed -= 1
                self._slots.release()
                if not self._owed:
                    self.last_active = self._loop.time()
                    self._all_answered.set()

    async def _answer(self, request: Request, handling: asyncio.Task) -> bool:
        """Write one response; False if the connection had to be given up."""
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
            return False
        if response is None:
            return True  # acks=0 produce: no response at all
        try:
            await self._send(response)
            self._metrics.response_sent(
                request, len(response) if isinstance(response, bytes) else response.size
            )
            return True
        except (ConnectionError, OSError) as exc:
            log.info("connection from %s lost while writing: %s", self.peer, exc)
        except Exception:
            # Anything else half-wrote a response: the stream is no longer framed, so
            # the client must be disconnected rather than left waiting.
            log.exception("writing a %s response to %s failed", request.name, self.peer)
        finally:
            if isinstance(response, ResponseParts):
                response.release()
        self._abandon()
        return False

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
            if not part.length:
                continue
            if self.tls:
                await self._write_region(part)
            else:
                await loop.sendfile(self.writer.transport, part.file, part.position, part.length)
        await self.writer.drain()

    async def _write_region(self, region: Any) -> None:
        """A file region through the TLS transport, one bounded chunk at a time (page-cache
        reads, cheaper on the loop than a thread hop per chunk)."""
        fd = region.file.fileno()
        position, end = region.position, region.position + region.length
        while position < end:
            chunk = os.pread(fd, min(TLS_CHUNK_BYTES, end - position), position)
            if not chunk:
                raise ConnectionError("segment file shorter than the region being sent")
            self.writer.write(chunk)
            position += len(chunk)
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
                _drop(item[1])
        self.writer.close()


def _drop(handling: asyncio.Task) -> None:
    """Cancel an unanswered request, or free the file regions of an answer never sent."""
    if not handling.done():
        handling.cancel()
    elif not handling.cancelled() and handling.exception() is None:
        response = handling.result()
        if isinstance(response, ResponseParts):
            response.release()
