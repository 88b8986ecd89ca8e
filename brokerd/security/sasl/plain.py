"""SASL/PLAIN (RFC 4616) against the `user_<name>="<password>"` options of the listener's
JAAS config, as Kafka's PlainSaslServer and PlainServerCallbackHandler check them."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from .errors import SaslAuthenticationError

MECHANISM = "PLAIN"
LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
USER_PREFIX = "user_"
INVALID_CREDENTIALS = "Authentication failed: Invalid username or password"
_NO_SUCH_PASSWORD = b"\0" * 32  # compared against for unknown users, so both take as long


def users_from_jaas(options: Mapping[str, str]) -> dict[str, str]:
    return {
        key[len(USER_PREFIX) :]: value
        for key, value in options.items()
        if key.startswith(USER_PREFIX) and len(key) > len(USER_PREFIX)
    }


class PlainServer:
    """One exchange: a single client message `[authzid] NUL authcid NUL passwd`."""

    mechanism = MECHANISM

    def __init__(self, users: Mapping[str, str]):
        self._users = users
        self.complete = False
        self.authorization_id: str | None = None

    async def evaluate(self, token: bytes) -> bytes:
        try:
            message = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
        parts = message.split("\0")
        if len(parts) != 3:
            raise SaslAuthenticationError(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}"
            )
        authzid, username, password = parts
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        given = password.encode("utf-8")
        matches = hmac.compare_digest(
            given, expected.encode("utf-8") if expected is not None else _NO_SUCH_PASSWORD
        )
        if expected is None or not matches:
            raise SaslAuthenticationError(INVALID_CREDENTIALS)
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.authorization_id = username
        self.complete = True
        return b""


def client_message(username: str, password: str) -> bytes:
    return f"\0{username}\0{password}".encode()
