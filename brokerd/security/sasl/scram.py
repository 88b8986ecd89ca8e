"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's ScramSaslServer speaks
them, and the credential format Kafka keeps in ZooKeeper:
`salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>` (never the password).

An unknown user gets the same exchange as a known one with a wrong password (a salt derived
from the name and a secret of this process), so neither the answer nor the number of round
trips tells whether the user exists.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .errors import SaslAuthenticationError

MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096  # Kafka's ScramMechanism bounds
MAX_ITERATIONS = 16384
LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
MAX_MESSAGE_BYTES = 4096  # a client message is a few hundred bytes; more is not SCRAM
_FAKE_SALT_KEY = secrets.token_bytes(32)


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_text(self) -> str:
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @classmethod
    def from_text(cls, text: str) -> ScramCredential:
        fields = dict(item.split("=", 1) for item in text.split(",") if "=" in item)
        try:
            return cls(
                salt=base64.b64decode(fields["salt"], validate=True),
                stored_key=base64.b64decode(fields["stored_key"], validate=True),
                server_key=base64.b64decode(fields["server_key"], validate=True),
                iterations=int(fields["iterations"]),
            )
        except (KeyError, ValueError) as exc:
            raise ValueError(f"invalid SCRAM credential: {exc}") from None


def _hmac(digest: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, digest).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism], password.encode(), salt, iterations)


def make_credential(
    mechanism: str, password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    if mechanism not in MECHANISMS:
        raise ValueError(f"unknown SCRAM mechanism {mechanism}")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(
            f"iterations {iterations} out of range [{MIN_ITERATIONS}, {MAX_ITERATIONS}]"
        )
    digest = MECHANISMS[mechanism]
    salt = salt if salt is not None else secrets.token_bytes(24)
    salted = salted_password(mechanism, password, salt, iterations)
    client_key = _hmac(digest, salted, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=hashlib.new(digest, client_key).digest(),
        server_key=_hmac(digest, salted, b"Server Key"),
        iterations=iterations,
    )


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in message.split(","):
        if len(item) < 2 or item[1] != "=":
            raise SaslAuthenticationError("Invalid SCRAM message")
        out.setdefault(item[0], item[2:])
    return out


def _saslname(text: str) -> str:
    """RFC 5802 saslname: `=2C` is a comma, `=3D` an equals sign, no other `=`."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "=":
            code = text[i : i + 3]
            if code not in ("=2C", "=3D"):
                raise SaslAuthenticationError("Invalid username in SCRAM message")
            out.append("," if code == "=2C" else "=")
            i += 3
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _escape(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


class ScramServer:
    """Two client messages: client-first (user, nonce), client-final (proof)."""

    def __init__(
        self, mechanism: str, lookup: Callable[[str, str], Awaitable[ScramCredential | None]]
    ):
        self.mechanism = mechanism
        self._digest = MECHANISMS[mechanism]
        self._lookup = lookup
        self.complete = False
        self.authorization_id: str | None = None
        self._state = "first"

    async def evaluate(self, token: bytes) -> bytes:
        if len(token) > MAX_MESSAGE_BYTES:
            raise SaslAuthenticationError("Invalid SCRAM message: too long")
        try:
            message = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SCRAM message: not UTF-8") from None
        if self._state == "first":
            return await self._client_first(message)
        if self._state == "final":
            return self._client_final(message)
        raise SaslAuthenticationError("Unexpected SCRAM message")

    async def _client_first(self, message: str) -> bytes:
        parts = message.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            raise SaslAuthenticationError("Invalid SCRAM client first message")
        gs2_flag, authzid, bare = parts
        attributes = _attributes(bare)
        if "n" not in attributes or "r" not in attributes or not attributes["r"]:
            raise SaslAuthenticationError("Invalid SCRAM client first message")
        username = _saslname(attributes["n"])
        if authzid and _saslname(authzid.removeprefix("a=")) != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        credential = await self._lookup(username, self.mechanism)
        self._known = credential is not None
        if credential is None:
            credential = self._unknown_user_credential(username)
        self._username = username
        self._credential = credential
        self._gs2_header = f"{gs2_flag},{authzid},"
        self._nonce = attributes["r"] + secrets.token_urlsafe(24).replace("-", "").replace("_", "")
        self._client_first_bare = bare
        self._server_first = (
            f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
            f"i={credential.iterations}"
        )
        self._state = "final"
        return self._server_first.encode()

    def _unknown_user_credential(self, username: str) -> ScramCredential:
        salt = _hmac("sha256", _FAKE_SALT_KEY, username.encode())[:24]
        key = _hmac("sha256", _FAKE_SALT_KEY, salt + b"key")
        size = hashlib.new(self._digest).digest_size
        return ScramCredential(salt, (key * 2)[:size], (key * 2)[:size], MIN_ITERATIONS)

    def _client_final(self, message: str) -> bytes:
        self._state = "done"
        without_proof, sep, proof_text = message.rpartition(",p=")
        if not sep:
            raise SaslAuthenticationError("Invalid SCRAM client final message")
        attributes = _attributes(without_proof)
        expected_binding = base64.b64encode(self._gs2_header.encode()).decode()
        if attributes.get("c") != expected_binding:
            raise SaslAuthenticationError("Invalid SCRAM client final message: channel binding")
        # Kafka checks the ending only (older librdkafka repeats the client nonce in front).
        if not attributes.get("r", "").endswith(self._nonce):
            raise SaslAuthenticationError("Invalid SCRAM client final message: nonce")
        try:
            proof = base64.b64decode(proof_text, validate=True)
        except ValueError:
            raise SaslAuthenticationError("Invalid SCRAM client final message") from None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        credential = self._credential
        signature = _hmac(self._digest, credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslAuthenticationError(INVALID_CREDENTIALS.format(self.mechanism))
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        computed = hashlib.new(self._digest, client_key).digest()
        if not hmac.compare_digest(computed, credential.stored_key) or not self._known:
            raise SaslAuthenticationError(INVALID_CREDENTIALS.format(self.mechanism))
        self.authorization_id = self._username
        self.complete = True
        server_signature = _hmac(self._digest, credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)


# Kafka's answer to a SaslException (it never passes the mechanism's own message on).
INVALID_CREDENTIALS = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
)


class ScramClient:
    def __init__(self, mechanism: str, username: str, password: str):
        self.mechanism = mechanism
        self._digest = MECHANISMS[mechanism]
        self._password = password
        self._nonce = base64.b64encode(os.urandom(18)).decode().rstrip("=")
        self._first_bare = f"n={_escape(username)},r={self._nonce}"
        self._state = "first"

    def start(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def evaluate(self, server_token: bytes) -> bytes | None:
        message = server_token.decode("utf-8")
        if self._state == "first":
            attributes = _attributes(message)
            nonce, salt = attributes["r"], base64.b64decode(attributes["s"])
            iterations = int(attributes["i"])
            if not nonce.startswith(self._nonce) or not 0 < iterations <= MAX_ITERATIONS:
                raise SaslAuthenticationError("Invalid SCRAM server first message")
            salted = salted_password(self.mechanism, self._password, salt, iterations)
            client_key = _hmac(self._digest, salted, b"Client Key")
            stored_key = hashlib.new(self._digest, client_key).digest()
            without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
            auth_message = f"{self._first_bare},{message},{without_proof}".encode()
            signature = _hmac(self._digest, stored_key, auth_message)
            proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
            server_key = _hmac(self._digest, salted, b"Server Key")
            self._expected = _hmac(self._digest, server_key, auth_message)
            self._state = "final"
            return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
        if self._state == "final":
            self._state = "done"
            verifier = _attributes(message).get("v", "")
            if not hmac.compare_digest(base64.b64decode(verifier), self._expected):
                raise SaslAuthenticationError("Invalid SCRAM server signature")
            return None
        return None
