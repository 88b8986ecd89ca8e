"""The client side of SASL mechanisms, for brokerd's own connections (inter-broker, tools):
`start()` gives the first message, `evaluate(server_token)` the next (None when done)."""

from __future__ import annotations

from . import plain, scram


class PlainClient:
    mechanism = plain.MECHANISM

    def __init__(self, username: str, password: str):
        self._message = plain.client_message(username, password)

    def start(self) -> bytes:
        return self._message

    def evaluate(self, server_token: bytes) -> bytes | None:
        return None  # PLAIN is one message; the broker's answer is empty


def client_for(mechanism: str, username: str, password: str):
    if mechanism == plain.MECHANISM:
        return PlainClient(username, password)
    if mechanism in scram.MECHANISMS:
        return scram.ScramClient(mechanism, username, password)
    raise ValueError(f"SASL mechanism {mechanism} is not supported")
