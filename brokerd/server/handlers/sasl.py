"""SaslHandshake (17) and SaslAuthenticate (36) outside authentication: Kafka's KafkaApis
answers them ILLEGAL_SASL_STATE (on a PLAINTEXT/SSL listener, or SaslAuthenticate on an
authenticated connection). The exchange itself runs before the request pipeline
(brokerd.security.sasl.authenticator), re-authentication included."""

from __future__ import annotations

from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import build, response_module

from .context import HandlerContext


async def handle_sasl_handshake(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)
    return build(
        module.SaslHandshakeResponse, error_code=ErrorCode.illegal_sasl_state, mechanisms=()
    )


async def handle_sasl_authenticate(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)
    return build(
        module.SaslAuthenticateResponse,
        error_code=ErrorCode.illegal_sasl_state,
        error_message="SaslAuthenticate request received after successful authentication",
        auth_bytes=b"",
    )


HANDLERS = {17: handle_sasl_handshake, 36: handle_sasl_authenticate}
