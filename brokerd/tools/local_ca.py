"""A local certificate authority for loopback clusters (`make run SECURE=1`) and the TLS
tests, made with the `openssl` command line.

`make_ca` writes a self-signed CA; `issue` a key and a certificate signed by it, with the
subject alternative names a broker on 127.0.0.1 needs, plus a PEM key store (the key, then
the certificate chain in one file: Kafka's `ssl.keystore.type=PEM` with
`ssl.keystore.location`). Keys are RSA 2048 (quick to make, what every client accepts); keys
are written 0600.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Identity:
    cert: Path
    key: Path
    keystore: Path  # key then certificate chain in one file: ssl.keystore.type=PEM


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(directory: Path, name: str, organisation: str, days: int) -> tuple[Path, Path]:
    """(key, certificate) of a new self-signed CA named `name`."""
    key, cert = directory / f"{name}.key", directory / f"{name}.pem"
    openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", str(days),
        "-subj", f"/O={organisation}/CN={name}", "-keyout", str(key), "-out", str(cert),
        cwd=directory,
    )  # fmt: skip
    key.chmod(0o600)
    return key, cert


def issue(
    directory: Path,
    name: str,
    subject: str,
    ca: tuple[Path, Path],
    days: int,
    san: str | None = None,
) -> Identity:
    """A key and a certificate for `subject` (e.g. /O=x/CN=localhost) signed by `ca`."""
    key, csr, cert = (directory / f"{name}{ext}" for ext in (".key", ".csr", ".pem"))
    openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
        "-keyout", str(key), "-out", str(csr), cwd=directory,
    )  # fmt: skip
    key.chmod(0o600)
    extensions = directory / f"{name}.ext"
    extensions.write_text(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca[1]), "-CAkey", str(ca[0]),
        "-CAcreateserial", "-days", str(days), "-out", str(cert), "-extfile", str(extensions),
        cwd=directory,
    )  # fmt: skip
    keystore = directory / f"{name}.keystore.pem"
    fd = os.open(keystore, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(key.read_text() + cert.read_text() + ca[1].read_text())
    return Identity(cert, key, keystore)
