"""A SASL listener's server settings, resolved once when it starts (bad settings stop the
broker there): Kafka's `listener.name.<l>.sasl.enabled.mechanisms` over
`sasl.enabled.mechanisms`, each mechanism's `listener.name.<l>.<mechanism>.sasl.jaas.config`
(brokers take JAAS configs only listener- and mechanism-prefixed, as Kafka does),
connections.max.reauth.ms, connection.failed.authentication.delay.ms and
sasl.server.max.receive.size."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from brokerd.config import ConfigError

from . import plain, scram
from .jaas import JaasConfigError, LoginModule, parse_jaas_config

if TYPE_CHECKING:
    from brokerd.config import BrokerConfig

SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
SUPPORTED_MECHANISMS = (plain.MECHANISM, *scram.MECHANISMS)
LOGIN_MODULES = {plain.MECHANISM: plain.LOGIN_MODULE} | {
    mechanism: scram.LOGIN_MODULE for mechanism in scram.MECHANISMS
}


def _raw(config: BrokerConfig, name: str) -> str | None:
    value = config.raw.get(name)
    if value is None:
        value = config.explicit.get(name)
    return value if value is None or isinstance(value, str) else str(value)


def _listener_value(config: BrokerConfig, listener: str, name: str):
    prefixed = f"listener.name.{listener.lower()}.{name}"
    raw = _raw(config, prefixed)
    if raw is not None:
        return raw
    return config.get(name)


def enabled_mechanisms(config: BrokerConfig, listener: str) -> list[str]:
    value = _listener_value(config, listener, "sasl.enabled.mechanisms")
    items = value.split(",") if isinstance(value, str) else list(value or [])
    return [item.strip() for item in items if item.strip()]


def jaas_login_module(config: BrokerConfig, listener: str, mechanism: str) -> LoginModule:
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = _raw(config, key)
    if text is None:
        raise ConfigError(
            f"{key} is not set: a {listener} listener with SASL mechanism {mechanism} needs "
            "its JAAS config"
        )
    try:
        module = parse_jaas_config(text)
    except JaasConfigError as exc:
        raise ConfigError(f"{key}: {exc}") from exc
    expected = LOGIN_MODULES[mechanism]
    if module.class_name != expected:
        raise ConfigError(f"{key}: login module {module.class_name} is not {expected}")
    return module


@dataclass(frozen=True)
class SaslServerSettings:
    listener: str
    mechanisms: tuple[str, ...]
    plain_users: dict[str, str] = field(default_factory=dict, repr=False)
    reauth_ms: int = 0
    failed_authentication_delay_ms: int = 100
    max_receive_bytes: int = 524288
    scram_credentials: Callable[[str, str], Awaitable[scram.ScramCredential | None]] | None = field(
        default=None, repr=False
    )

    @classmethod
    def for_listener(
        cls, config: BrokerConfig, listener: str, scram_credentials=None
    ) -> SaslServerSettings:
        """`scram_credentials(user, mechanism)`: the stored SCRAM credential or None."""
        mechanisms = enabled_mechanisms(config, listener)
        if not mechanisms:
            raise ConfigError(f"sasl.enabled.mechanisms: no mechanism enabled for {listener}")
        unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
        if unsupported:
            raise ConfigError(
                f"sasl.enabled.mechanisms for {listener}: {', '.join(unsupported)} not supported "
                f"(brokerd speaks {', '.join(SUPPORTED_MECHANISMS)})"
            )
        users: dict[str, str] = {}
        if plain.MECHANISM in mechanisms:
            users = plain.users_from_jaas(
                jaas_login_module(config, listener, plain.MECHANISM).options
            )
        return cls(
            listener=listener,
            mechanisms=tuple(mechanisms),
            plain_users=users,
            reauth_ms=int(_listener_value(config, listener, "connections.max.reauth.ms") or 0),
            failed_authentication_delay_ms=config.socket.connection_failed_authentication_delay_ms,
            max_receive_bytes=config.security.sasl_server_max_receive_size,
            scram_credentials=scram_credentials,
        )

    def server_for(self, mechanism: str):
        """A new server-side exchange for an enabled mechanism."""
        if mechanism == plain.MECHANISM:
            return plain.PlainServer(self.plain_users)
        if mechanism in scram.MECHANISMS and self.scram_credentials is not None:
            return scram.ScramServer(mechanism, self.scram_credentials)
        raise ValueError(mechanism)


@dataclass(frozen=True)
class SaslClientCredentials:
    """How this broker authenticates to a peer's SASL listener: the mechanism
    (sasl.mechanism.inter.broker.protocol) and the username/password of that listener's
    JAAS config for it."""

    mechanism: str
    username: str
    password: str = field(repr=False)


def inter_broker_credentials(config: BrokerConfig, listener: str) -> SaslClientCredentials:
    mechanism = config.security.sasl_mechanism_inter_broker_protocol.strip()
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ConfigError(
            f"sasl.mechanism.inter.broker.protocol: {mechanism} is not supported "
            f"(brokerd speaks {', '.join(SUPPORTED_MECHANISMS)})"
        )
    options = jaas_login_module(config, listener, mechanism).options
    username, password = options.get("username"), options.get("password")
    if not username or password is None:
        raise ConfigError(
            f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config: "
            "username and password (this broker's own credentials) are needed for "
            "inter-broker SASL"
        )
    return SaslClientCredentials(mechanism, username, password)
