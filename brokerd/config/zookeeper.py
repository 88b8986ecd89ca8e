"""ZooKeeper connection configs (Kafka's ZkConfigs)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from brokerd.config.definitions import ConfigDef, by_name, resolve_view

DEFINITIONS = by_name(
    [
        ConfigDef("zookeeper.connect", "string", None, "host:port[,...][/chroot]", read_only=True),
        ConfigDef(
            "zookeeper.session.timeout.ms",
            "int",
            18000,
            "ZooKeeper session timeout",
            at_least=1,
            read_only=True,
        ),
        ConfigDef(
            "zookeeper.connection.timeout.ms",
            "int",
            None,
            "wait for a ZooKeeper connection (default: session timeout)",
            at_least=1,
            read_only=True,
        ),
    ]
)


@dataclass(frozen=True)
class ZooKeeperConfig:
    zookeeper_connect: str
    zookeeper_session_timeout_ms: int
    zookeeper_connection_timeout_ms: int  # the session timeout when unset, as in Kafka

    @classmethod
    def resolve(cls, get: Callable[[str], Any]) -> ZooKeeperConfig:
        view = resolve_view(cls, get)
        if view.zookeeper_connection_timeout_ms is None:
            view = replace(view, zookeeper_connection_timeout_ms=view.zookeeper_session_timeout_ms)
        return view

    @property
    def hosts(self) -> str:
        """zookeeper.connect without its chroot."""
        slash = self.zookeeper_connect.find("/")
        return self.zookeeper_connect if slash < 0 else self.zookeeper_connect[:slash]

    @property
    def chroot(self) -> str | None:
        slash = self.zookeeper_connect.find("/")
        if slash < 0:
            return None
        return self.zookeeper_connect[slash:].rstrip("/") or None
