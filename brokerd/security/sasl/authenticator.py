"""The server side of SASL on one connection, before it may send anything else: Kafka's
SaslServerAuthenticator.

Until authentication completes only ApiVersions (once, first), SaslHandshake and then the
mechanism's exchange are read, one at a time. SaslHandshake v0 means the exchange follows
as raw tokens each framed by a 4-byte length (no Kafka header); v1 means SaslAuthenticate
requests. Any other request ends the connection, as do failures: after
connection.failed.authentication.delay.ms, with Kafka's error response where Kafka sends
one (UNSUPPORTED_SASL_MECHANISM with the enabled list, SASL_AUTHENTICATION_FAILED with the
mechanism's message), so a client guessing passwords gains nothing by hammering.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from brokerd.protocol import framing
from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.framing import FrameError, Request
from brokerd.protocol.messages import build, response_module
from brokerd.protocol.versions import api_name

from .errors import SaslAuthenticationError
from .settings import SaslServerSettings

log = logging.getLogger(__name__)

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36


class AuthenticationClosed(Exception):
    """The connection must close (a response, if any, has been written)."""


class SaslServerAuthenticator:
    def __init__(
        self,
        settings: SaslServerSettings,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        answer_api_versions: Callable[[Request], Awaitable[bytes]],
        peer: Any = None,
        progressed: Callable[[], object] | None = None,
    ):
        self.settings = settings
        self.reader = reader
        self.writer = writer
        self._answer_api_versions = answer_api_versions
        self.peer = peer
        self._progressed = progressed
        self.mechanism: str | None = None
        self.session_lifetime_ms = 0

    async def authenticate(
        self, handshake: Request | None = None, principal: str | None = None
    ) -> str | None:
        """The authenticated principal (`User:<name>`), or None: close the connection.

        Re-authentication (KIP-368) passes the SaslHandshake already read and the principal
        the connection has, which must not change."""
        try:
            if handshake is None:
                handshake = await self._read_handshake()
            server = await self._answer_handshake(handshake)
            if handshake.api_version == 0:
                name = await self._exchange_raw_tokens(server)
            else:
                name = await self._exchange_authenticate_requests(server, principal)
        except AuthenticationClosed:
            return None
        except (FrameError, ConnectionError, asyncio.IncompleteReadError) as exc:
            log.info("closing connection from %s during SASL authentication: %s", self.peer, exc)
            return None
        return f"User:{name}"

    # Reading -------------------------------------------------------------------------------
    async def _read_frame(self, min_size: int) -> bytes:
        frame = await framing.read_frame(
            self.reader, self.settings.max_receive_bytes, min_size, progressed=self._progressed
        )
        if frame is None:
            raise ConnectionError("closed by the client")
        return frame

    async def _read_handshake(self) -> Request:
        """ApiVersions (at most once) then SaslHandshake; anything else closes."""
        versions_allowed = True
        while True:
            frame = await self._read_frame(framing.FIXED_HEADER.size)
            api_key, _, _ = framing.peek_header(frame)
            if api_key not in (API_VERSIONS, SASL_HANDSHAKE):
                await self._fail(
                    None,
                    f"Unexpected Kafka request of type {api_name(api_key)} during SASL handshake.",
                )
            if api_key == API_VERSIONS and not versions_allowed:
                # Kafka's IllegalStateException: closed at once, not an authentication failure.
                log.info(
                    "closing connection from %s: a second ApiVersions before SaslHandshake",
                    self.peer,
                )
                raise AuthenticationClosed
            request = framing.decode_request(frame)
            if api_key == SASL_HANDSHAKE:
                return request
            await self._write(await self._answer_api_versions(request))
            versions_allowed = request.unsupported_api_versions  # a retry at a lower version

    async def _answer_handshake(self, request: Request):
        mechanism = request.body.mechanism
        module = response_module(SASL_HANDSHAKE, request.api_version)
        enabled = self.settings.mechanisms
        if mechanism not in enabled:
            response = build(
                module.SaslHandshakeResponse,
                error_code=ErrorCode.unsupported_sasl_mechanism,
                mechanisms=enabled,
            )
            await self._fail(
                framing.encode_response(request, response),
                f"Unsupported SASL mechanism {mechanism}",
            )
        if self.mechanism is not None and mechanism != self.mechanism:
            # Re-authentication must keep the mechanism (Kafka: REAUTH_BAD_MECHANISM).
            await self._fail(
                None,
                f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self.mechanism}'",
            )
        response = build(
            module.SaslHandshakeResponse, error_code=ErrorCode.none, mechanisms=enabled
        )
        await self._write(framing.encode_response(request, response))
        self.mechanism = mechanism
        return self.settings.server_for(mechanism)

    # The exchange --------------------------------------------------------------------------
    async def _exchange_raw_tokens(self, server) -> str:
        """SaslHandshake v0: size-prefixed tokens; a failure is answered by closing."""
        while True:
            token = await self._read_frame(0)
            try:
                challenge = await server.evaluate(token)
            except SaslAuthenticationError as exc:
                await self._fail(None, exc.message)
            if challenge is not None:
                await self._write(framing.SIZE.pack(len(challenge)) + challenge)
            if server.complete:
                self.session_lifetime_ms = self.settings.reauth_ms
                return server.authorization_id

    async def _exchange_authenticate_requests(self, server, principal: str | None) -> str:
        while True:
            frame = await self._read_frame(framing.FIXED_HEADER.size)
            api_key, _, _ = framing.peek_header(frame)
            if api_key != SASL_AUTHENTICATE:
                await self._fail(
                    None,
                    f"Unexpected Kafka request of type {api_name(api_key)} during SASL "
                    "authentication.",
                )
            request = framing.decode_request(frame)
            module = response_module(SASL_AUTHENTICATE, request.api_version)
            try:
                challenge = await server.evaluate(request.body.auth_bytes)
                if server.complete and principal and principal != f"User:{server.authorization_id}":
                    raise SaslAuthenticationError(
                        f"Cannot change principals during re-authentication from {principal}: "
                        f"User:{server.authorization_id}"
                    )
            except SaslAuthenticationError as exc:
                response = build(
                    module.SaslAuthenticateResponse,
                    error_code=ErrorCode.sasl_authentication_failed,
                    error_message=exc.message,
                    auth_bytes=b"",
                )
                await self._fail(framing.encode_response(request, response), exc.message)
            lifetime = self.settings.reauth_ms if server.complete else 0
            response = build(
                module.SaslAuthenticateResponse,
                error_code=ErrorCode.none,
                error_message=None,
                auth_bytes=challenge or b"",
                session_lifetime=datetime.timedelta(milliseconds=lifetime),
            )
            await self._write(framing.encode_response(request, response))
            if server.complete:
                self.session_lifetime_ms = lifetime
                return server.authorization_id

    # Writing and failing -------------------------------------------------------------------
    async def _write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def _fail(self, response: bytes | None, reason: str):
        """Kafka's delayed close on failed authentication: wait, answer, close."""
        log.info("SASL authentication from %s failed: %s", self.peer, reason)
        await asyncio.sleep(self.settings.failed_authentication_delay_ms / 1000)
        if response is not None:
            try:
                await self._write(response)
            except (ConnectionError, OSError):
                pass
        raise AuthenticationClosed
