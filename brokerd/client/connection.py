"""One asyncio connection to one broker: pipelined requests matched by correlation id.

Requests are written as soon as they are made; a reader task hands each response to the
request with its correlation id. The first request on a new connection is ApiVersions, whose
answer fixes the version of every later request (the highest both sides implement). A lost
connection fails what is in flight with KafkaConnectionError; the next request reconnects,
after an exponential backoff if connecting keeps failing.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import ssl
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.framing import (
    FrameError,
    decode_response,
    encode_request,
    read_frame,
    response_correlation_id,
)
from brokerd.protocol.versions import VersionRange
from brokerd.security.sasl.client import client_for

from .errors import KafkaConnectionError, KafkaResponseError, KafkaTimeoutError
from .requests import API_NAMES, CLIENT_VERSIONS, materialize, negotiate

log = logging.getLogger(__name__)

API_VERSIONS = 18
# A SASL session with a lifetime is renewed (by reconnecting) once this much of it is gone.
SESSION_RENEW_FRACTION = 0.8
MAX_RESPONSE_BYTES = 0x7FFFFFFF
CLIENT_SOFTWARE_NAME = "brokerd-client"
CLIENT_SOFTWARE_VERSION = "0.1"
_ERROR_CODE = struct.Struct(">h")


@dataclass(frozen=True)
class ClientSecurity:
    """How to reach brokers, in the terms of Kafka's client settings: `security_protocol`
    PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; for SSL and SASL_SSL the CA bundle that signs
    the brokers' certificates (`ssl_cafile`, like ssl.ca.location; None: the system's CAs), a
    client certificate for mutual TLS (`ssl_certfile`, `ssl_keyfile`, `ssl_password` for an
    encrypted key), whether the broker's host name must match its certificate, or a ready
    `ssl_context` instead of the files; for SASL_* the mechanism and credentials
    (`sasl_mechanism`, `sasl_username`, `sasl_password`, like sasl.mechanism(s) and
    sasl.username/password)."""

    security_protocol: str = "PLAINTEXT"
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_password: str | None = None
    ssl_check_hostname: bool = True
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str = "PLAIN"
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    _built: list = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        protocol = self.security_protocol.upper()
        if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise ValueError(f"security_protocol {self.security_protocol} is not supported")
        if protocol.startswith("SASL_") and (not self.sasl_username or self.sasl_password is None):
            raise ValueError(f"{protocol} needs sasl_username and sasl_password")

    @property
    def sasl(self) -> bool:
        return self.security_protocol.upper().startswith("SASL_")

    def sasl_credentials(self) -> tuple[str, str]:
        """(sasl_username, sasl_password) of a SASL_* protocol, which requires both."""
        if self.sasl_username is None or self.sasl_password is None:
            raise ValueError(f"{self.security_protocol} needs sasl_username and sasl_password")
        return self.sasl_username, self.sasl_password

    def context(self) -> ssl.SSLContext | None:
        """The TLS context to connect with (built once), None for PLAINTEXT."""
        if self.security_protocol.upper() not in ("SSL", "SASL_SSL"):
            return None
        if self.ssl_context is not None:
            return self.ssl_context
        if not self._built:
            context = ssl.create_default_context(cafile=self.ssl_cafile)
            context.check_hostname = self.ssl_check_hostname
            if self.ssl_certfile:
                context.load_cert_chain(
                    self.ssl_certfile, self.ssl_keyfile, password=self.ssl_password
                )
            self._built.append(context)
        return self._built[0]


PLAINTEXT = ClientSecurity()


class BrokerConnection:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        node_id: int | None = None,
        client_id: str = "brokerd-client",
        request_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        reconnect_backoff: float = 0.05,
        reconnect_backoff_max: float = 1.0,
        security: ClientSecurity = PLAINTEXT,
    ):
        self.host = host
        self.security = security
        self.port = port
        self.node_id = node_id
        self.client_id = client_id
        self.request_timeout = request_timeout
        self.connect_timeout = connect_timeout
        self.reconnect_backoff = reconnect_backoff
        self.reconnect_backoff_max = reconnect_backoff_max
        self.api_versions: dict[int, VersionRange] = {}
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task | None = None
        self._pending: dict[int, tuple[asyncio.Future, int, int]] = {}
        self._correlation_ids = itertools.count(1)
        self._connect_lock = asyncio.Lock()
        self._drain_lock = asyncio.Lock()
        self._failures = 0
        self._next_attempt = 0.0
        self._closed = False
        self._session_renew_at: float | None = None

    def __repr__(self) -> str:
        return f"BrokerConnection({self.host}:{self.port}, node={self.node_id})"

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    # Connecting ------------------------------------------------------------------------
    async def connect(self) -> None:
        async with self._connect_lock:
            if self.connected:
                return
            if self._closed:
                raise KafkaConnectionError(f"{self} is closed")
            delay = self._next_attempt - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            try:
                await self._open()
            except Exception as exc:
                self._failures += 1
                backoff = min(
                    self.reconnect_backoff_max,
                    self.reconnect_backoff * 2 ** (self._failures - 1),
                )
                self._next_attempt = time.monotonic() + backoff * random.uniform(0.8, 1.2)
                self._drop_transport()
                if isinstance(exc, KafkaConnectionError | KafkaResponseError):
                    raise
                raise KafkaConnectionError(
                    f"cannot connect to {self.host}:{self.port}: {exc}"
                ) from exc
            self._failures = 0

    async def _open(self) -> None:
        context = self.security.context()
        options: dict[str, Any] = {}
        if context is not None:
            options = {"ssl": context, "server_hostname": self.host}
        reader, self._writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, **options), self.connect_timeout
        )
        self._reader = reader
        self._reader_task = asyncio.create_task(self._read_responses(reader))
        self.api_versions = await self._handshake()
        if self.security.sasl:
            await self._authenticate()

    async def _authenticate(self) -> None:
        """SaslHandshake v1 then SaslAuthenticate until the mechanism is done; a refusal
        is a KafkaResponseError with the broker's message (the broker then closes)."""
        security = self.security
        mechanism = security.sasl_mechanism
        handshake = SaslHandshakeRequest(mechanism=mechanism)
        response = await self._exchange(handshake, self.connect_timeout)
        if response.error_code != ErrorCode.none:
            raise KafkaResponseError(
                response.error_code,
                f"SASL mechanism {mechanism} refused; enabled: {list(response.mechanisms)}",
                str(self),
            )
        client = client_for(mechanism, *security.sasl_credentials())
        token: bytes | None = client.start()
        while token is not None:
            body = SaslAuthenticateRequest(auth_bytes=token)
            response = await self._exchange(body, self.connect_timeout)
            if response.error_code != ErrorCode.none:
                raise KafkaResponseError(response.error_code, response.error_message, str(self))
            token = client.evaluate(response.auth_bytes)
        lifetime = response.session_lifetime.total_seconds()
        if lifetime > 0:
            # connections.max.reauth.ms on the broker: reconnect (a new session) in time.
            self._session_renew_at = time.monotonic() + lifetime * SESSION_RENEW_FRACTION

    async def _handshake(self) -> dict[int, VersionRange]:
        """ApiVersions at our highest version, again lower if the broker says UNSUPPORTED."""
        version = CLIENT_VERSIONS[API_VERSIONS].max_version
        while True:
            body = materialize(
                API_VERSIONS,
                version,
                {
                    "client_software_name": CLIENT_SOFTWARE_NAME,
                    "client_software_version": CLIENT_SOFTWARE_VERSION,
                },
            )
            frame = await self._exchange(body, self.connect_timeout, raw=True)
            (code,) = _ERROR_CODE.unpack_from(frame, 4)
            if code == ErrorCode.unsupported_version:
                # Answered in the v0 shape with the versions the broker speaks.
                response = decode_response(frame, API_VERSIONS, 0)
                assert isinstance(response, ApiVersionsResponseV0)
                versions: dict[int, ApiVersionV0] = {k.api_key: k for k in response.api_keys}
                theirs = versions.get(API_VERSIONS)
                lower = theirs.max_version if theirs is not None else 0
                if lower >= version:
                    raise KafkaResponseError(code, "ApiVersions refused", str(self))
                version = lower
                continue
            response = decode_response(frame, API_VERSIONS, version)
            if response.error_code != ErrorCode.none:
                raise KafkaResponseError(response.error_code, None, f"ApiVersions from {self}")
            return {
                int(k.api_key): VersionRange(int(k.min_version), int(k.max_version))
                for k in response.api_keys
            }

    # Requests --------------------------------------------------------------------------
    def version_for(self, api_key: int) -> int:
        return negotiate(api_key, self.api_versions.get(api_key))

    def supports(self, api_key: int) -> bool:
        try:
            self.version_for(api_key)
        except Exception:
            return False
        return True

    async def call(
        self,
        api_key: int,
        values: dict[str, Any],
        *,
        timeout: float | None = None,
        expect_response: bool = True,
    ) -> Any:
        """Send the request described by `values` at the negotiated version; its response."""
        await self.connect()
        body = materialize(api_key, self.version_for(api_key), values)
        return await self.send(body, timeout=timeout, expect_response=expect_response)

    async def call_raw(
        self, api_key: int, values: dict[str, Any], *, timeout: float | None = None
    ) -> tuple[int, bytes]:
        """Like `call`, but the response frame (header included) is returned undecoded with
        the version it answers, for a caller reading it with its own schema."""
        await self.connect()
        version = self.version_for(api_key)
        body = materialize(api_key, version, values)
        self._renew_session_if_due()
        await self.connect()
        return version, await self._exchange(body, timeout or self.request_timeout, raw=True)

    async def send(
        self, body: Any, *, timeout: float | None = None, expect_response: bool = True
    ) -> Any:
        """Send a built kio request; its decoded response (None when none is expected)."""
        self._renew_session_if_due()
        await self.connect()
        return await self._exchange(body, timeout or self.request_timeout, expect_response)

    async def _exchange(
        self, body: Any, timeout: float, expect_response: bool = True, raw: bool = False
    ) -> Any:
        writer = self._writer
        if writer is None or writer.is_closing():
            raise KafkaConnectionError(f"{self} is not connected")
        api_key, version = int(body.__api_key__), int(body.__version__)
        correlation_id = next(self._correlation_ids) & 0x7FFFFFFF
        frame = encode_request(body, correlation_id, self.client_id)
        future: asyncio.Future | None = None
        if expect_response:
            future = asyncio.get_running_loop().create_future()
            self._pending[correlation_id] = (future, api_key, -1 if raw else version)
        writer.write(frame)
        try:
            async with self._drain_lock:
                await writer.drain()
        except (ConnectionError, OSError) as exc:
            self._pending.pop(correlation_id, None)
            self._connection_lost(exc)
            raise KafkaConnectionError(f"{self}: send failed: {exc}") from exc
        if future is None:
            return None
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            self._pending.pop(correlation_id, None)  # a late answer is dropped by the reader
            name = API_NAMES.get(api_key, api_key)
            raise KafkaTimeoutError(f"{name} to {self} got no answer in {timeout}s") from None

    async def _read_responses(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                frame = await read_frame(reader, MAX_RESPONSE_BYTES, min_size=4)
                if frame is None:
                    raise ConnectionError("closed by the broker")
                correlation_id = response_correlation_id(frame)
                entry = self._pending.pop(correlation_id, None)
                if entry is None:
                    continue  # its request timed out
                future, api_key, version = entry
                if future.done():
                    continue
                if version < 0:
                    future.set_result(frame)
                    continue
                try:
                    future.set_result(decode_response(frame, api_key, version))
                except FrameError as exc:
                    future.set_exception(KafkaConnectionError(str(exc)))
        except asyncio.CancelledError:
            self._fail_pending(KafkaConnectionError(f"{self} closed"))
            raise
        except (ConnectionError, OSError, FrameError, asyncio.IncompleteReadError) as exc:
            self._connection_lost(exc)

    def _renew_session_if_due(self) -> None:
        """Past most of the SASL session's lifetime and nothing in flight: reconnect before
        the broker closes the connection on an expired session."""
        due = self._session_renew_at
        if due is not None and time.monotonic() >= due and not self._pending and self.connected:
            log.debug("%s: SASL session due for renewal; reconnecting", self)
            self._drop_transport()

    # Failure and shutdown --------------------------------------------------------------
    def _connection_lost(self, exc: BaseException) -> None:
        log.debug("%s lost: %s", self, exc)
        self._drop_transport()
        self._fail_pending(KafkaConnectionError(f"{self} lost: {exc}"))

    def _fail_pending(self, error: Exception) -> None:
        pending, self._pending = self._pending, {}
        for future, _, _ in pending.values():
            if not future.done():
                future.set_exception(error)

    def _drop_transport(self) -> None:
        self._session_renew_at = None
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
        task, self._reader_task = self._reader_task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    async def close(self) -> None:
        self._closed = True
        writer, task = self._writer, self._reader_task
        self._drop_transport()
        self._fail_pending(KafkaConnectionError(f"{self} closed"))
        if task is not None:
            try:
                await task
            except asyncio.CancelledError:
                # The reader task's own cancellation is expected; ours (the caller being
                # cancelled while closing) must propagate, or a stopping task never ends.
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
            except Exception:  # noqa: BLE001 - the connection is going away regardless
                pass
        if writer is not None:
            with contextlib.suppress(Exception):
                await writer.wait_closed()
