"""A stopping broker's side of controlled shutdown (controlled.shutdown.enable).

Before it closes anything the broker asks the controller (ControlledShutdown) to move the
leadership of its replicated partitions elsewhere and take it out of their ISRs, retrying
up to controlled.shutdown.max.retries times while partitions remain. Then it waits, briefly,
for the controller's LeaderAndIsr to turn it into a follower, so acks=all produces parked
on it answer NOT_LEADER_OR_FOLLOWER (retriable) instead of a closed connection.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from kio.schema.types import BrokerId
from kio.static.primitive import i64

from brokerd.client.connection import BrokerConnection
from brokerd.config import BrokerConfig, Endpoint
from brokerd.peer_security import peer_security
from brokerd.protocol import interbroker
from brokerd.protocol.errors import ErrorCode

from . import zk_data
from .metadata import MetadataCache
from .zk_client import ZkClient
from .zk_data import BrokerInfo

log = logging.getLogger(__name__)

LEADERSHIP_HANDOVER_WAIT_S = 5.0


class LedPartition(Protocol):
    """A partition this broker leads, as the replica manager holds it."""

    @property
    def replicas(self) -> Sequence[int]: ...


class ControlledShutdown:
    def __init__(
        self,
        broker_id: int,
        config: BrokerConfig,
        metadata: MetadataCache,
        zk: ZkClient,
        endpoint_for: Callable[[BrokerInfo], Endpoint | None],
        led_partitions: Callable[[], Iterable[LedPartition]],
    ):
        self.broker_id = broker_id
        self.config = config
        self.metadata = metadata
        self.zk = zk
        self.endpoint_for = endpoint_for  # a peer's inter-broker endpoint
        self.led_partitions = led_partitions

    async def run(self) -> bool:
        """True when the controller moved everything off this broker."""
        config = self.config
        if not config.server.controlled_shutdown_enable:
            return False
        if not (set(self.metadata.brokers) - {self.broker_id}):
            return False  # nowhere else to lead from
        backoff = config.server.controlled_shutdown_retry_backoff_ms / 1000
        timeout = config.replication.controller_socket_timeout_ms / 1000
        for attempt in range(config.server.controlled_shutdown_max_retries):
            if attempt:
                await asyncio.sleep(backoff)
            try:
                error, remaining = await self._ask_controller(timeout)
            except Exception as exc:  # noqa: BLE001 - retried, then we stop anyway
                log.warning("controlled shutdown attempt %d failed: %s", attempt + 1, exc)
                continue
            if error == ErrorCode.none and not remaining:
                log.info("controlled shutdown succeeded")
                await self._await_leadership_handover()
                return True
            log.warning(
                "controlled shutdown attempt %d: %s, %d partitions remain led here",
                attempt + 1,
                ErrorCode(error).name,
                len(remaining),
            )
        log.warning("controlled shutdown did not complete; stopping anyway")
        return False

    async def _ask_controller(self, timeout: float) -> tuple[int, list]:
        await self.metadata.refresh_controller()
        controller_id = self.metadata.controller_id
        info = self.metadata.brokers.get(controller_id)
        endpoint = self.endpoint_for(info) if info is not None else None
        if endpoint is None:
            raise ConnectionError(f"no reachable controller (id {controller_id})")
        broker_epoch = await self.zk.creation_zxid(zk_data.broker_path(self.broker_id))
        connection = BrokerConnection(
            endpoint.host,
            endpoint.port,
            node_id=controller_id,
            client_id=f"broker-{self.broker_id}-shutdown",
            request_timeout=timeout,
            security=peer_security(self.config, endpoint),
        )
        try:
            response = await connection.send(
                interbroker.ControlledShutdownRequest(
                    broker_id=BrokerId(self.broker_id),
                    broker_epoch=i64(broker_epoch if broker_epoch is not None else -1),
                )
            )
        finally:
            await connection.close()
        remaining = [(p.topic_name, p.partition_index) for p in response.remaining_partitions]
        return response.error_code, remaining

    async def _await_leadership_handover(self) -> None:
        deadline = time.monotonic() + LEADERSHIP_HANDOVER_WAIT_S
        while time.monotonic() < deadline:
            if not any(len(p.replicas) > 1 for p in self.led_partitions()):
                return
            await asyncio.sleep(0.02)
