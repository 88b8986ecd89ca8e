"""Listener, socket and connection-limit configs (Kafka's SocketServerConfigs)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from brokerd.config import catalog
from brokerd.config.definitions import INT_MAX, ConfigDef, ConfigError, by_name

# Listener security protocols brokerd speaks.
SUPPORTED_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

_VALID_HOST = re.compile(r"[0-9a-zA-Z\-%._:]*")  # Kafka's Utils.validHostPattern
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def parse_connection_overrides(text: str) -> dict[str, int]:
    """max.connections.per.ip.overrides as Kafka reads it: `host:count` pairs separated by
    commas, split at the last colon (so IPv6 addresses work)."""
    overrides: dict[str, int] = {}
    for entry in re.split(r"\s*,\s*", text.strip()) if text.strip() else ():
        host, colon, count = entry.rpartition(":")
        host, count = host.strip(), count.strip()
        if not colon or not _VALID_HOST.fullmatch(host) or not _JAVA_INT.fullmatch(count):
            raise ConfigError(f"max.connections.per.ip.overrides: invalid entry {entry!r}")
        value = int(count)
        if not -INT_MAX - 1 <= value <= INT_MAX:
            raise ConfigError(f"max.connections.per.ip.overrides: {count} is not an int")
        overrides[host] = value
    return overrides


def _valid_connection_overrides(_name: str, value: str) -> None:
    try:
        parse_connection_overrides(value)
    except ConfigError as exc:
        raise catalog.InvalidValue(str(exc)) from exc


DEFINITIONS = by_name(
    [
        ConfigDef(
            "listeners",
            "list",
            ["PLAINTEXT://:9092"],
            "listener URIs the broker binds",
            read_only=True,
        ),
        ConfigDef(
            "advertised.listeners",
            "list",
            None,
            "listener URIs published to clients (default: listeners)",
            read_only=True,
        ),
        ConfigDef(
            "listener.security.protocol.map",
            "list",
            [
                "PLAINTEXT:PLAINTEXT",
                "SSL:SSL",
                "SASL_PLAINTEXT:SASL_PLAINTEXT",
                "SASL_SSL:SASL_SSL",
            ],
            "listener name to security protocol",
            read_only=True,
        ),
        ConfigDef(
            "control.plane.listener.name",
            "string",
            None,
            "listener for controller requests (default: the inter-broker listener)",
            read_only=True,
        ),
        ConfigDef(
            "socket.request.max.bytes",
            "int",
            104857600,
            "largest request frame accepted",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "queued.max.requests",
            "int",
            500,
            "requests read ahead on one connection before reading pauses",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "queued.max.request.bytes",
            "long",
            -1,
            "bytes of requests being read or handled before no more are read (-1: no limit)",
            read_only=True,
        ),
        ConfigDef(
            "connections.max.idle.ms",
            "long",
            600000,
            "close a connection that received nothing and owed nothing this long (-1: never)",
            read_only=True,
        ),
        ConfigDef(
            "max.connections",
            "int",
            INT_MAX,
            "connections open at once, broker-wide; at the limit no more are accepted",
            at_least=0,
        ),
        ConfigDef(
            "max.connections.per.ip",
            "int",
            INT_MAX,
            "connections from one address; one more is closed as soon as it is accepted",
            at_least=0,
        ),
        ConfigDef(
            "max.connections.per.ip.overrides",
            "string",
            "",
            "max.connections.per.ip by host or address, e.g. hostName:100,127.0.0.1:200",
            validator=_valid_connection_overrides,
        ),
    ]
)


@dataclass(frozen=True)
class SocketServerConfig:
    """Listeners and endpoints are resolved by BrokerConfig (they are checked together with
    the inter-broker listener)."""

    socket_request_max_bytes: int
    queued_max_requests: int
    queued_max_request_bytes: int
    connections_max_idle_ms: int
    max_connections: int
    max_connections_per_ip: int
    max_connections_per_ip_overrides: str
    connection_failed_authentication_delay_ms: int  # defined by Kafka's catalog

    @property
    def connection_overrides(self) -> dict[str, int]:
        """max.connections.per.ip.overrides by host or address."""
        return parse_connection_overrides(self.max_connections_per_ip_overrides)


@dataclass(frozen=True)
class Endpoint:
    listener_name: str
    security_protocol: str
    host: str
    port: int

    @property
    def uri(self) -> str:
        return f"{self.listener_name}://{self.host}:{self.port}"


def parse_host_port(text: str, key: str) -> tuple[str, int]:
    """`host:port` (IPv6 as `[::1]:port`); an empty host means all interfaces."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise ConfigError(f"{key}: expected host:port, got {text!r}")
    return host.strip("[]"), int(port)


def parse_endpoint(uri: str, protocol_map: Mapping[str, str], key: str) -> Endpoint:
    name, sep, address = uri.partition("://")
    if not sep or not name:
        raise ConfigError(f"{key}: {uri!r} is not of the form NAME://host:port")
    host, colon, port_text = address.rpartition(":")
    if not colon:
        raise ConfigError(f"{key}: {uri!r} has no port")
    host = host.strip("[]")
    try:
        port = int(port_text)
    except ValueError as exc:
        raise ConfigError(f"{key}: {uri!r} has an invalid port") from exc
    if not 0 <= port <= 65535:
        raise ConfigError(f"{key}: port {port} is out of range")
    name = name.upper()
    protocol = protocol_map.get(name)
    if protocol is None:
        raise ConfigError(f"{key}: listener {name} has no listener.security.protocol.map entry")
    if protocol not in SUPPORTED_SECURITY_PROTOCOLS:
        raise ConfigError(f"{key}: security protocol {protocol} is not supported yet")
    return Endpoint(name, protocol, host, port)
