"""A throwaway certificate authority for TLS tests (brokerd/tools/local_ca.py, Debian's `openssl`).

`make_pki(dir)` writes a CA, a server certificate for 127.0.0.1/localhost (what the brokers
present, and their client certificate between themselves), two client certificates and a
certificate from an unrelated CA, all as PEM files, and returns their paths. Keys are RSA
2048 (quick to make, what every client accepts).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from brokerd.tools.local_ca import Identity, issue, make_ca, openssl


@dataclass(frozen=True)
class Pki:
    ca: Path
    server: Identity
    client: Identity  # CN=alice,OU=eng,O=brokerd tests
    other_client: Identity  # CN=bob,OU=ops,O=brokerd tests
    stranger: Identity  # signed by a CA the brokers do not trust
    encrypted_key: Path  # the server key, encrypted with KEY_PASSWORD
    key_password: str = "changeit"


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    return make_ca(directory, name, "brokerd tests", days=2)


def _issue(
    directory: Path, name: str, subject: str, ca: tuple[Path, Path], san: str | None = None
) -> Identity:
    return issue(directory, name, subject, ca, days=2, san=san)


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca = _ca(directory, "ca")
    stranger_ca = _ca(directory, "stranger-ca")
    server = _issue(
        directory,
        "server",
        "/O=brokerd tests/CN=localhost",
        ca,
        san="DNS:localhost,IP:127.0.0.1",
    )
    client = _issue(directory, "client", "/O=brokerd tests/OU=eng/CN=alice", ca)
    other = _issue(directory, "other", "/O=brokerd tests/OU=ops/CN=bob", ca)
    stranger = _issue(directory, "stranger", "/O=elsewhere/CN=mallory", stranger_ca)
    encrypted = directory / "server.encrypted.key"
    openssl(
        "pkey", "-in", str(server.key), "-aes256", "-passout", "pass:changeit",
        "-out", str(encrypted), cwd=directory,
    )  # fmt: skip
    return Pki(ca[1], server, client, other, stranger, encrypted)


def ssl_props(pki: Pki, **extra: str) -> dict[str, str]:
    """Broker configs for SSL listeners with the server key store and the test CA."""
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server.keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        **extra,
    }
