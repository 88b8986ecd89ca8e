"""TLS contexts from Kafka's `ssl.*` configs, for a listener (server side) and for the
broker's own connections to its peers (client side, as Kafka's inter-broker clients use the
inter-broker listener's configs).

Each config resolves as Kafka's `valuesWithPrefixOverride`: `listener.name.<name>.ssl.x`
(listener name in lower case) over `ssl.x`. Key stores are PEM as Kafka 2.7+ takes them
(`ssl.keystore.location` naming one file with the key and the chain, or inline
`ssl.keystore.certificate.chain` + `ssl.keystore.key`; `ssl.key.password` for an encrypted
key; `ssl.truststore.location` or inline `ssl.truststore.certificates`) or PKCS12 (through
the `cryptography` package); JKS is refused with a message saying what is supported.

`ContextSource` hands out a listener's server context and builds it again when a key or
trust store file changes, so renewed certificates take effect for new connections without a
restart (connections already open keep theirs, as in Kafka).
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from brokerd.config import BROKER_CONFIGS, BrokerConfig, ConfigError

log = logging.getLogger(__name__)

TLS_PROTOCOLS = {"SSL", "SASL_SSL"}
_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
# What a Kafka broker on Java 11+ enables when ssl.enabled.protocols is left unset (the
# catalog records the Java 8 value, TLSv1.2 alone); Python's OpenSSL always has TLSv1.3.
DEFAULT_ENABLED_PROTOCOLS = ["TLSv1.2", "TLSv1.3"]
_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}
RELOAD_CHECK_S = 1.0  # how often a listener looks at its store files' modification times


class TlsConfigError(ConfigError):
    pass


def listener_value(config: BrokerConfig, listener_name: str, name: str) -> Any:
    """`listener.name.<listener>.<name>` if set, else `<name>` (typed as <name>)."""
    prefixed = f"listener.name.{listener_name.lower()}.{name}"
    explicit = config.explicit
    if prefixed in explicit:
        raw = explicit[prefixed]
        return BROKER_CONFIGS[name].parse(raw) if isinstance(raw, str) else raw
    return config.get(name)


def _explicitly_set(config: BrokerConfig, listener_name: str, name: str) -> bool:
    explicit = config.explicit
    return name in explicit or f"listener.name.{listener_name.lower()}.{name}" in explicit


# Versions and ciphers ----------------------------------------------------------------------
def _apply_protocols(context: ssl.SSLContext, config: BrokerConfig, listener: str) -> None:
    protocol = (listener_value(config, listener, "ssl.protocol") or "TLS").strip()
    if protocol not in ("TLS", "TLSv1.2", "TLSv1.3", "TLSv1.1", "TLSv1", "SSL"):
        raise TlsConfigError(f"ssl.protocol: {protocol} is not a TLS protocol Python supports")
    if _explicitly_set(config, listener, "ssl.enabled.protocols"):
        enabled = listener_value(config, listener, "ssl.enabled.protocols") or []
    else:
        enabled = list(DEFAULT_ENABLED_PROTOCOLS)
    if not enabled:  # Kafka: an empty list means ssl.protocol alone
        enabled = [protocol] if protocol in _VERSIONS else DEFAULT_ENABLED_PROTOCOLS
    unknown = [name for name in enabled if name not in _VERSIONS]
    if unknown:
        raise TlsConfigError(
            f"ssl.enabled.protocols: {','.join(unknown)} not supported "
            f"(supported: {','.join(_VERSIONS)})"
        )
    versions = sorted(_VERSIONS[name] for name in enabled)
    context.minimum_version = versions[0]
    context.maximum_version = versions[-1]


def openssl_cipher_name(name: str) -> str:
    """OpenSSL's name for a TLS 1.2 suite given by its IANA (Java) name, e.g.
    TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 -> ECDHE-RSA-AES128-GCM-SHA256; other names
    (already OpenSSL's) are returned unchanged."""
    if not name.startswith("TLS_") or "_WITH_" not in name:
        return name
    exchange, cipher = name[4:].split("_WITH_", 1)
    prefix = {"RSA": ""}.get(exchange, exchange.replace("_", "-"))
    for java, openssl in (
        ("AES_128_", "AES128-"),
        ("AES_256_", "AES256-"),
        ("CHACHA20_POLY1305_SHA256", "CHACHA20-POLY1305"),
        ("CBC_", ""),
    ):
        cipher = cipher.replace(java, openssl)
    cipher = cipher.replace("_", "-")
    return f"{prefix}-{cipher}" if prefix else cipher


def _apply_ciphers(context: ssl.SSLContext, config: BrokerConfig, listener: str) -> None:
    suites = listener_value(config, listener, "ssl.cipher.suites") or []
    if not suites:
        return
    tls13 = {cipher["name"] for cipher in context.get_ciphers() if cipher["protocol"] == "TLSv1.3"}
    # Python's ssl cannot narrow the TLS 1.3 suites; named ones are accepted as they are.
    wanted = [openssl_cipher_name(name) for name in suites if name not in tls13]
    if not wanted:
        if context.minimum_version < ssl.TLSVersion.TLSv1_3:
            context.minimum_version = ssl.TLSVersion.TLSv1_3
        return
    try:
        context.set_ciphers(":".join(wanted))
    except ssl.SSLError as exc:
        raise TlsConfigError(f"ssl.cipher.suites: none of {','.join(suites)} is available") from exc
    available = {cipher["name"] for cipher in context.get_ciphers()}
    missing = [name for name in wanted if name not in available]
    if missing:
        raise TlsConfigError(f"ssl.cipher.suites: {','.join(missing)} not available")


# Key and trust stores -----------------------------------------------------------------------
@contextmanager
def _private_file(data: bytes) -> Iterator[str]:
    """A file only this process can read, removed as soon as the context has loaded it."""
    fd, path = tempfile.mkstemp(prefix="brokerd-tls-", suffix=".pem")
    try:
        os.write(fd, data)
        os.close(fd)
        yield path
    finally:
        os.unlink(path)


def _pkcs12(path: str, password: str | None):
    try:
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError as exc:  # pragma: no cover - cryptography ships with the platform
        raise TlsConfigError(
            "PKCS12 key stores need the cryptography package; use ssl.keystore.type=PEM"
        ) from exc
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError as exc:
        raise TlsConfigError(f"cannot read PKCS12 store {path}: {exc}") from exc


def _store_type(config: BrokerConfig, listener: str, name: str) -> str:
    kind = (listener_value(config, listener, name) or "JKS").strip().upper()
    if kind not in ("PEM", "PKCS12"):
        raise TlsConfigError(
            f"{name}: {kind} is not supported; use PEM (or PKCS12) stores, "
            "e.g. ssl.keystore.type=PEM with ssl.keystore.location=<key and chain .pem>"
        )
    return kind


def has_keystore(config: BrokerConfig, listener: str) -> bool:
    return bool(
        listener_value(config, listener, "ssl.keystore.location")
        or listener_value(config, listener, "ssl.keystore.certificate.chain")
    )


def _load_keystore(context: ssl.SSLContext, config: BrokerConfig, listener: str) -> None:
    location = listener_value(config, listener, "ssl.keystore.location")
    chain = listener_value(config, listener, "ssl.keystore.certificate.chain")
    key = listener_value(config, listener, "ssl.keystore.key")
    key_password = listener_value(config, listener, "ssl.key.password")
    store_password = listener_value(config, listener, "ssl.keystore.password")
    kind = _store_type(config, listener, "ssl.keystore.type")
    if kind == "PKCS12":
        if not location:
            raise TlsConfigError("ssl.keystore.location: required with ssl.keystore.type=PKCS12")
        from cryptography.hazmat.primitives import serialization

        private, certificate, extra = _pkcs12(location, store_password)
        if private is None or certificate is None:
            raise TlsConfigError(f"ssl.keystore.location: {location} holds no key entry")
        pem = private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        for cert in (certificate, *(extra or ())):
            pem += cert.public_bytes(serialization.Encoding.PEM)
        with _private_file(pem) as path:
            context.load_cert_chain(path)
        return
    if store_password:
        raise TlsConfigError(
            "ssl.keystore.password: SSL key store password cannot be specified with PEM "
            "format, only key password may be specified"
        )
    try:
        if location:
            if chain or key:
                raise TlsConfigError(
                    "ssl.keystore.location: give either a key store file or "
                    "ssl.keystore.certificate.chain and ssl.keystore.key, not both"
                )
            context.load_cert_chain(location, password=key_password)
        elif chain or key:
            if not (chain and key):
                raise TlsConfigError(
                    "ssl.keystore.key: both ssl.keystore.certificate.chain and "
                    "ssl.keystore.key are required for an inline PEM key store"
                )
            with _private_file(f"{key.strip()}\n{chain.strip()}\n".encode()) as path:
                context.load_cert_chain(path, password=key_password)
    except (ssl.SSLError, OSError) as exc:
        raise TlsConfigError(f"cannot load the key store of listener {listener}: {exc}") from exc


def _load_truststore(
    context: ssl.SSLContext, config: BrokerConfig, listener: str, purpose: ssl.Purpose
) -> None:
    location = listener_value(config, listener, "ssl.truststore.location")
    certificates = listener_value(config, listener, "ssl.truststore.certificates")
    if not (location or certificates):
        context.load_default_certs(purpose)  # as Java's default trust store
        return
    kind = _store_type(config, listener, "ssl.truststore.type")
    password = listener_value(config, listener, "ssl.truststore.password")
    try:
        if kind == "PKCS12":
            from cryptography.hazmat.primitives import serialization

            _, certificate, extra = _pkcs12(location, password)
            trusted = [c for c in (certificate, *(extra or ())) if c is not None]
            context.load_verify_locations(
                cadata="".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in trusted)
            )
            return
        if password:
            raise TlsConfigError(
                "ssl.truststore.password: SSL trust store password cannot be specified for "
                "PEM format"
            )
        if location and certificates:
            raise TlsConfigError(
                "ssl.truststore.location: give either a trust store file or "
                "ssl.truststore.certificates, not both"
            )
        if location:
            context.load_verify_locations(cafile=location)
        else:
            context.load_verify_locations(cadata=certificates)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise TlsConfigError(f"cannot load the trust store of listener {listener}: {exc}") from exc


def store_files(config: BrokerConfig, listener: str) -> list[str]:
    names = ("ssl.keystore.location", "ssl.truststore.location")
    return [path for name in names if (path := listener_value(config, listener, name))]


# Contexts ---------------------------------------------------------------------------------
def server_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    """The context an SSL listener accepts with; TlsConfigError says what is wrong."""
    if not has_keystore(config, listener):
        raise TlsConfigError(
            f"listener {listener}: an SSL listener needs a key store "
            f"(listener.name.{listener.lower()}.ssl.keystore.location or ssl.keystore.location)"
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _apply_protocols(context, config, listener)
    _apply_ciphers(context, config, listener)
    _load_keystore(context, config, listener)
    auth = (listener_value(config, listener, "ssl.client.auth") or "none").strip().lower()
    if auth not in _CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth: {auth} is not one of none, requested, required")
    context.verify_mode = _CLIENT_AUTH[auth]
    if auth != "none":
        _load_truststore(context, config, listener, ssl.Purpose.CLIENT_AUTH)
    return context


def client_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    """The context this broker connects to a peer's `listener` with: the same listener's
    trust store, its key store as the client certificate (peers may require one), and host
    name checks as ssl.endpoint.identification.algorithm says (https, Kafka's default)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _apply_protocols(context, config, listener)
    _apply_ciphers(context, config, listener)
    _load_truststore(context, config, listener, ssl.Purpose.SERVER_AUTH)
    if has_keystore(config, listener):
        _load_keystore(context, config, listener)
    algorithm = listener_value(config, listener, "ssl.endpoint.identification.algorithm")
    context.check_hostname = bool(algorithm and algorithm.strip())
    return context


class ContextSource:
    """A listener's server context, rebuilt when its store files change on disk."""

    def __init__(self, config: BrokerConfig, listener: str):
        self.config = config
        self.listener = listener
        self.context = server_context(config, listener)
        self._stamps = self._file_stamps()
        self._checked = time.monotonic()

    def _file_stamps(self) -> dict[str, tuple[int, int] | None]:
        stamps: dict[str, tuple[int, int] | None] = {}
        for path in store_files(self.config, self.listener):
            try:
                info = os.stat(path)
                stamps[path] = (info.st_mtime_ns, info.st_size)
            except OSError:
                stamps[path] = None
        return stamps

    def current(self) -> ssl.SSLContext:
        now = time.monotonic()
        if now - self._checked >= RELOAD_CHECK_S:
            self._checked = now
            stamps = self._file_stamps()
            if stamps != self._stamps:
                self._stamps = stamps
                try:
                    self.context = server_context(self.config, self.listener)
                    log.info("listener %s: reloaded its key and trust stores", self.listener)
                except (ConfigError, OSError, ssl.SSLError) as exc:
                    # A half-written file must not take the listener down: keep the old one.
                    log.error("listener %s: stores not reloaded: %s", self.listener, exc)
        return self.context
