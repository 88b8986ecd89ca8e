"""The `failure.probes` config: which points a test may hold, and how a probe is written.

Holding and releasing a point is brokerd.server.failure_probes' job (it documents each
point); the spec is parsed here, below the server, so a bad probe is refused with the other
configs at start-up.
"""

from __future__ import annotations

from brokerd.config.definitions import ConfigError

POINTS = frozenset({("group_coordinator", "load"), ("controller", "failover")})
SUSPEND = "suspend"


def parse_probe(spec: str) -> tuple[str, str]:
    """(module, point) of a `module.point=suspend` spec; ConfigError when it is not one."""
    name, sep, kind = spec.partition("=")
    module, dot, point = name.strip().partition(".")
    if not sep or not dot or kind.strip() != SUSPEND:
        raise ConfigError(f"failure.probes: {spec!r} is not module.point={SUSPEND}")
    if (module, point) not in POINTS:
        known = ", ".join(sorted(f"{m}.{p}" for m, p in POINTS))
        raise ConfigError(f"failure.probes: unknown point {name.strip()!r} (known: {known})")
    return module, point
