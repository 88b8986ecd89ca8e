"""A throwaway certificate authority for TLS tests, made with Debian's `openssl` CLI.

`make_pki(dir)` writes a CA, a server certificate for 127.0.0.1/localhost (what the brokers
present, and their client certificate between themselves), two client certificates and a
certificate from an unrelated CA, all as PEM files, and returns their paths. Keys are RSA
2048 (quick to make, what every client accepts).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Identity:
    cert: Path
    key: Path
    keystore: Path  # key then certificate chain in one file: ssl.keystore.type=PEM


@dataclass(frozen=True)
class Pki:
    ca: Path
    server: Identity
    client: Identity  # CN=alice,OU=eng,O=brokerd tests
    other_client: Identity  # CN=bob,OU=ops,O=brokerd tests
    stranger: Identity  # signed by a CA the brokers do not trust
    encrypted_key: Path  # the server key, encrypted with KEY_PASSWORD
    key_password: str = "changeit"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    key, cert = directory / f"{name}.key", directory / f"{name}.pem"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-subj", f"/O=brokerd tests/CN={name}", "-keyout", str(key), "-out", str(cert),
        cwd=directory,
    )  # fmt: skip
    return key, cert


def _issue(
    directory: Path, name: str, subject: str, ca: tuple[Path, Path], san: str | None = None
) -> Identity:
    key, csr, cert = (directory / f"{name}{ext}" for ext in (".key", ".csr", ".pem"))
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
        "-keyout", str(key), "-out", str(csr), cwd=directory,
    )  # fmt: skip
    extensions = directory / f"{name}.ext"
    extensions.write_text(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca[1]), "-CAkey", str(ca[0]),
        "-CAcreateserial", "-days", "2", "-out", str(cert), "-extfile", str(extensions),
        cwd=directory,
    )  # fmt: skip
    keystore = directory / f"{name}.keystore.pem"
    keystore.write_text(key.read_text() + cert.read_text() + ca[1].read_text())
    return Identity(cert, key, keystore)


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
    _openssl(
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
