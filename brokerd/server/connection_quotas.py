"""max.connections, max.connections.per.ip and its overrides, as Kafka's ConnectionQuotas
applies them, broker-wide (every listener counts).

- `max.connections`: at the limit, listeners stop accepting until a connection closes (the
  clients wait in the listen backlog), except the inter-broker listener when there are
  several listeners: it accepts anyway, and the least recently active connection of another
  listener is closed instead.
- `max.connections.per.ip` (per address, `max.connections.per.ip.overrides` by host or
  address): a connection over the limit is closed right after it is accepted.

Values are read from the config at each decision, so a dynamic update applies to the next
connection. Addresses compare as IP addresses (an IPv4-mapped IPv6 peer is its IPv4 address).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections import Counter
from collections.abc import Callable
from functools import lru_cache

from brokerd.config import BrokerConfig, ConfigError, parse_connection_overrides

log = logging.getLogger(__name__)


def normalized_ip(address: str) -> str:
    """`address` in one canonical spelling (IPv4-mapped IPv6 as IPv4)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


@lru_cache(maxsize=8)
def _overrides_by_ip(text: str) -> dict[str, int]:
    """max.connections.per.ip.overrides by address; host names are resolved once (Kafka
    resolves them when the value is set). A bad or unresolvable entry is skipped."""
    try:
        entries = parse_connection_overrides(text)
    except ConfigError as exc:
        log.warning("ignoring max.connections.per.ip.overrides: %s", exc)
        return {}
    by_ip = {}
    for host, count in entries.items():
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as exc:
            log.warning("max.connections.per.ip.overrides: cannot resolve %s: %s", host, exc)
            continue
        for info in infos:
            by_ip[normalized_ip(str(info[4][0]))] = count
    return by_ip


class ConnectionQuotas:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.total = 0
        self.by_ip: Counter[str] = Counter()
        self.by_listener: Counter[str] = Counter()
        self.listener_names: set[str] = set()
        self._paused_acceptors: list[Callable[[], None]] = []

    def add_listener(self, name: str) -> None:
        self.listener_names.add(name)
        _overrides_by_ip(self.config.socket.max_connections_per_ip_overrides)  # resolve now

    def protected(self, listener: str) -> bool:
        """Kafka's protected listener: the inter-broker one, when there are others."""
        return len(self.listener_names) > 1 and listener == self.config.inter_broker_listener_name

    def slot_available(self, listener: str) -> bool:
        return self.protected(listener) or self.total < self.config.socket.max_connections

    def max_connections_exceeded(self) -> bool:
        """The broker-wide count is over its limit (a protected listener accepted anyway)."""
        return self.total > self.config.socket.max_connections

    def limit_for(self, ip: str) -> int:
        overrides = _overrides_by_ip(self.config.socket.max_connections_per_ip_overrides)
        return overrides.get(ip, self.config.socket.max_connections_per_ip)

    def register(self, listener: str, ip: str) -> bool:
        """Count a new connection from `ip`; False (nothing counted) if that address already
        has its maximum, and the caller closes the connection."""
        if self.by_ip[ip] >= self.limit_for(ip):
            return False
        self.total += 1
        self.by_ip[ip] += 1
        self.by_listener[listener] += 1
        return True

    def unregister(self, listener: str, ip: str) -> None:
        self.total -= 1
        self.by_ip[ip] -= 1
        if self.by_ip[ip] <= 0:
            del self.by_ip[ip]
        self.by_listener[listener] -= 1
        paused, self._paused_acceptors = self._paused_acceptors, []
        for resume in paused:
            resume()

    def when_slot_frees(self, resume: Callable[[], None]) -> None:
        """Call `resume` once a connection closes (an acceptor paused at max.connections)."""
        self._paused_acceptors.append(resume)
