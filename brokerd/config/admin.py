"""brokerd's own configs, which Kafka does not have: the HTTP admin API and failure probes."""

from __future__ import annotations

from dataclasses import dataclass, field

from brokerd.config.definitions import ConfigDef, by_name
from brokerd.config.failure_probes import parse_probe
from brokerd.config.socket_server import parse_host_port

DEFINITIONS = by_name(
    [
        ConfigDef(
            "admin.listener",
            "string",
            "127.0.0.1:0",
            "host:port of the HTTP admin API and /metrics (port 0: a free port, published "
            "in the broker registration as admin_endpoint)",
            read_only=True,
        ),
        ConfigDef(
            "admin.token",
            "password",
            None,
            "bearer token of the admin API (default: generated into <log dir>/admin.token)",
            read_only=True,
            sensitive=True,
        ),
        ConfigDef(
            "failure.probes",
            "list",
            [],
            "testing only: points held at start-up until released through the admin API, "
            "module.point=suspend (see brokerd/server/failure_probes.py); empty in production",
            read_only=True,
        ),
    ]
)


@dataclass(frozen=True)
class AdminConfig:
    admin_listener: str
    admin_token: str | None = field(repr=False)  # a secret: kept out of logs
    failure_probes: tuple[str, ...]

    @property
    def listener_address(self) -> tuple[str, int]:
        """(host, port) of admin.listener."""
        return parse_host_port(self.admin_listener, "admin.listener")

    @property
    def probes(self) -> list[tuple[str, str]]:
        """(module, point) of each failure probe."""
        return [parse_probe(spec) for spec in self.failure_probes]
