"""Failure probes: named points in the broker that a test can hold (after Redpanda's).

A probe is armed at start-up by the `failure.probes` config (`module.point=suspend`): the
first task to reach the point waits there, as do later ones, until the probe is released
through the admin API (`DELETE /v1/failure-probes/{module}/{point}`). The config is empty by
default and then every point returns at once, so production behaviour cannot change. Tests
use probes to hold the broker in a window that is otherwise too short to hit on purpose.

Points:
    group_coordinator.load  before a gained __consumer_offsets partition is read into the
                            group coordinator (requests for its groups get
                            COORDINATOR_LOAD_IN_PROGRESS meanwhile)
    controller.failover     a new controller has read the registered brokers and has told
                            none of them anything yet (brokers registering meanwhile must
                            still be taken in)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from brokerd.config.failure_probes import SUSPEND, parse_probe

log = logging.getLogger(__name__)


class FailureProbes:
    def __init__(self, specs: Iterable[str]):
        self._suspended: dict[tuple[str, str], asyncio.Event] = {
            parse_probe(spec): asyncio.Event() for spec in specs
        }

    async def reached(self, module: str, point: str) -> None:
        """Return once the point may go on: at once unless a suspend probe holds it."""
        released = self._suspended.get((module, point))
        if released is None or released.is_set():
            return
        log.warning("failure probe %s.%s: suspended until released", module, point)
        await released.wait()

    def release(self, module: str, point: str) -> bool:
        """Let every waiter at the point go on (and later ones pass); False if not armed."""
        released = self._suspended.get((module, point))
        if released is None:
            return False
        released.set()
        log.warning("failure probe %s.%s: released", module, point)
        return True

    def describe(self) -> list[dict]:
        return [
            {
                "module": module,
                "point": point,
                "type": SUSPEND,
                "released": released.is_set(),
            }
            for (module, point), released in sorted(self._suspended.items())
        ]
