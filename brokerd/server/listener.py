"""The broker's listeners: listening sockets, accepting within the connection quotas
(connection_quotas.py), and the set of live connections."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from collections.abc import Sequence

from brokerd.config import BrokerConfig, Endpoint
from brokerd.coordination.zk_client import ZkClient
from brokerd.security.principal import ANONYMOUS, PrincipalMapper, PrincipalMappingError
from brokerd.security.sasl.credentials import ZkScramCredentials
from brokerd.security.sasl.settings import SASL_PROTOCOLS, SaslServerSettings
from brokerd.security.tls import TLS_PROTOCOLS, ContextSource

from .connection import Connection, ConnectionServices
from .connection_quotas import ConnectionQuotas, normalized_ip

log = logging.getLogger(__name__)

DRAIN_TIMEOUT_S = 10  # SIGTERM answers in-flight requests for at most this long
BACKLOG = 100  # pending connections the kernel keeps while the broker does not accept
# A connection's StreamReader stops reading from the socket past twice this many buffered
# bytes: what a client sends ahead of what the broker reads stays in its socket buffer.
STREAM_LIMIT = 1 << 16
# Out of descriptors or memory: accepting is paused this long (the kernel keeps the backlog).
ACCEPT_RETRY_S = 1.0
_RESOURCE_ERRORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
# A TLS client that has not finished its handshake by then is disconnected (it holds a
# connection slot meanwhile).
TLS_HANDSHAKE_TIMEOUT_S = 30.0


# A TLS connection's records are decrypted straight into this one buffer of the event loop,
# then copied into the connection's StreamReader: asyncio's SSLProtocol, given a protocol that
# is not a BufferedProtocol, allocates a buffer of 256 KiB per TLS record (16 KiB) and joins
# the records into another bytes object. One buffer serves every connection: SSLProtocol
# fills it and hands it over (buffer_updated) in one synchronous step, which copies it out.
TLS_READ_BUFFER_BYTES = 256 * 1024


class _TlsReadProtocol(asyncio.StreamReaderProtocol, asyncio.BufferedProtocol):
    """A StreamReaderProtocol that asyncio's SSLProtocol decrypts into (read-only loan of
    `buffer`, shared by the listener's connections)."""

    def __init__(self, reader: asyncio.StreamReader, buffer: memoryview):
        super().__init__(reader)
        self._reader = reader
        self._read_buffer = buffer

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        # StreamReader.feed_data extends its bytearray: the bytes are copied out here.
        self._reader.feed_data(self._read_buffer[:nbytes])


class Listener:
    """One listener (e.g. PLAINTEXT://127.0.0.1:9092); port 0 binds a free port."""

    def __init__(
        self,
        endpoint: Endpoint,
        config: BrokerConfig,
        zk: ZkClient,
        quotas: ConnectionQuotas,
        services: ConnectionServices,
        peers: Sequence[Listener] = (),
    ):
        self.endpoint = endpoint
        self.config = config  # the listener's TLS and SASL settings are read at start
        self.zk = zk  # SCRAM credentials
        self.quotas = quotas
        self.services = services
        # Every listener of the broker (this one included): max.connections closes the least
        # recently active connection on another listener to admit one on a protected listener.
        self.peers = peers
        self.sockets: list[socket.socket] = []
        self.connections: set[Connection] = set()
        self._tasks: set[asyncio.Task] = set()
        self._loop: asyncio.AbstractEventLoop  # set by start(), before anything uses it
        self._accepting = False
        self.tls: ContextSource | None = None  # SSL listeners: the server context
        self.principals: PrincipalMapper | None = None
        self.sasl: SaslServerSettings | None = None  # SASL listeners: mechanisms, users
        self._tls_read_buffer: memoryview | None = None  # TLS listeners, see _TlsReadProtocol

    @property
    def server(self) -> list[socket.socket] | None:
        """The listening sockets while listening, else None."""
        return self.sockets or None

    @property
    def bound_port(self) -> int:
        return self.sockets[0].getsockname()[1]

    @property
    def name(self) -> str:
        return self.endpoint.listener_name

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.endpoint.security_protocol in TLS_PROTOCOLS:
            # Bad stores or settings stop the broker here, before anything listens.
            self.tls = ContextSource(self.config, self.name)
            self.principals = PrincipalMapper(self.config.security.ssl_principal_mapping_rules)
            self._tls_read_buffer = memoryview(bytearray(TLS_READ_BUFFER_BYTES))
        if self.endpoint.security_protocol in SASL_PROTOCOLS:
            self.sasl = SaslServerSettings.for_listener(
                self.config, self.name, ZkScramCredentials(self.zk)
            )
        host = self.endpoint.host or None  # empty host: all interfaces, as Kafka does
        infos = await self._loop.getaddrinfo(
            host, self.endpoint.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        try:
            for family, kind, proto, _, address in dict.fromkeys(infos):
                sock = socket.socket(family, kind, proto)
                self.sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                try:
                    sock.bind(address)
                except OSError as exc:
                    raise OSError(
                        exc.errno, f"cannot bind {self.endpoint.uri} on {address}: {exc.strerror}"
                    ) from exc
                sock.listen(BACKLOG)
                sock.setblocking(False)
        except OSError:
            self._close_sockets()
            raise
        self.quotas.add_listener(self.name)
        self._resume_accepting()
        log.info("listening on %s (port %d)", self.endpoint.uri, self.bound_port)

    # Accepting ---------------------------------------------------------------------------
    def _resume_accepting(self) -> None:
        if self._accepting or not self.sockets:
            return
        self._accepting = True
        for sock in self.sockets:
            self._loop.add_reader(sock, self._accept_ready, sock)

    def _pause_accepting(self) -> None:
        if self._accepting:
            self._accepting = False
            for sock in self.sockets:
                self._loop.remove_reader(sock)

    def _accept_ready(self, sock: socket.socket) -> None:
        for _ in range(BACKLOG):
            if not self.quotas.slot_available(self.name):
                # max.connections: accept nothing more until a connection closes, as Kafka's
                # acceptor waits for a slot; clients wait in the listen backlog.
                log.debug("%s: max.connections reached, not accepting", self.name)
                self._pause_accepting()
                self.quotas.when_slot_frees(self._resume_accepting)
                return
            try:
                conn, address = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno not in _RESOURCE_ERRORS:
                    continue  # e.g. the client gave up before we got to it
                log.error(
                    "accepting on %s failed (%s); pausing %.0fs", self.name, exc, ACCEPT_RETRY_S
                )
                self._pause_accepting()
                self._loop.call_later(ACCEPT_RETRY_S, self._resume_accepting)
                return
            self._admit(conn, address)

    def _admit(self, conn: socket.socket, address: tuple) -> None:
        ip = normalized_ip(address[0])
        if not self.quotas.register(self.name, ip):
            log.info(
                "Rejected connection from %s, address already has the configured maximum of "
                "%d connections.",
                ip,
                self.quotas.limit_for(ip),
            )
            conn.close()
            return
        if self.quotas.max_connections_exceeded():  # only a protected listener gets here
            self._close_least_recently_active_elsewhere()
        task = self._loop.create_task(self._serve(conn, ip))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _close_least_recently_active_elsewhere(self) -> None:
        others = [
            connection
            for listener in self.peers
            if listener is not self
            for connection in listener.connections
        ]
        if others:
            victim = min(others, key=lambda connection: connection.last_active)
            log.info("max.connections exceeded: closing connection from %s", victim.peer)
            victim.abandon()

    async def _serve(self, conn: socket.socket, ip: str) -> None:
        connection = None
        try:
            conn.setblocking(False)
            reader = asyncio.StreamReader(limit=STREAM_LIMIT)
            protocol = (
                asyncio.StreamReaderProtocol(reader)
                if self._tls_read_buffer is None
                else _TlsReadProtocol(reader, self._tls_read_buffer)
            )
            try:
                transport, _ = await self._loop.connect_accepted_socket(
                    lambda: protocol, conn, **self._tls_options()
                )
            except (ssl.SSLError, ConnectionError, TimeoutError, OSError) as exc:
                # Not TLS (plaintext bytes), a refused or missing client certificate, a
                # timeout: this connection only.
                log.info("TLS handshake with %s on %s failed: %s", ip, self.name, exc)
                conn.close()
                return
            writer = asyncio.StreamWriter(transport, protocol, reader, self._loop)
            principal = self._principal(transport)
            if principal is None:
                writer.close()
                return
            connection = Connection(
                self.services, reader, writer, self.name, principal, sasl=self.sasl
            )
            self.connections.add(connection)
            await connection.serve()
        except Exception:
            log.exception("connection from %s failed", ip)
            if connection is None:
                conn.close()
        finally:
            if connection is not None:
                self.connections.discard(connection)
            self.quotas.unregister(self.name, ip)

    def _tls_options(self) -> dict:
        if self.tls is None:
            return {}
        return {"ssl": self.tls.current(), "ssl_handshake_timeout": TLS_HANDSHAKE_TIMEOUT_S}

    def _principal(self, transport: asyncio.Transport) -> str | None:
        """The client's principal; None when ssl.principal.mapping.rules refuse its name
        (an authentication failure in Kafka: the connection is closed)."""
        if self.principals is None:
            return ANONYMOUS
        try:
            return self.principals.principal(transport.get_extra_info("peercert"))
        except PrincipalMappingError as exc:
            log.info("closing TLS connection on %s: %s", self.name, exc)
            return None

    # Shutdown ----------------------------------------------------------------------------
    def stop_accepting(self) -> None:
        self._pause_accepting()
        self._close_sockets()

    def _close_sockets(self) -> None:
        for sock in self.sockets:
            sock.close()
        self.sockets = []

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
