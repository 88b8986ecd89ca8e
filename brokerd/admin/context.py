"""What the admin API and the state gauges read: the broker's collaborators, given by the
composition root (brokerd/server/broker.py), never the broker itself."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from brokerd.config import BrokerConfig, Endpoint
from brokerd.coordination.controller import Controller
from brokerd.coordination.metadata import MetadataCache
from brokerd.coordination.zk_client import ZkClient
from brokerd.log.cleaner_manager import CleanerThread, LogCleanerManager
from brokerd.log.manager import LogManager
from brokerd.replication.replica_manager import ReplicaManager

from .metrics import BrokerMetrics


class FailureProbeControl(Protocol):
    """The failure probes as the admin routes see them (brokerd/server/failure_probes.py)."""

    def describe(self) -> list[dict[str, Any]]: ...

    def release(self, module: str, point: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class AdminContext:
    config: BrokerConfig
    broker_id: int
    metadata: MetadataCache
    log_manager: LogManager
    replicas: ReplicaManager
    controller: Controller
    zk: ZkClient
    metrics: BrokerMetrics
    failure_probes: FailureProbeControl
    started: asyncio.Event  # set once the broker has finished starting
    # advertised.listeners with the ports actually bound (known once the listeners started).
    advertised_endpoints: Callable[[], list[Endpoint]]
    # The cleaner and its thread are made at start-up; None with log.cleaner.enable=false.
    cleaner: Callable[[], LogCleanerManager | None]
    cleaner_thread: Callable[[], CleanerThread | None]
