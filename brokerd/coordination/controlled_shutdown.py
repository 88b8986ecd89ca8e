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
from typing import TYPE_CHECKING

from brokerd.client.connection import BrokerConnection
from brokerd.peer_security import peer_security
from brokerd.protocol import interbroker
from brokerd.protocol.errors import ErrorCode

from . import zk

if TYPE_CHECKING:
    from brokerd.server.broker import Broker

log = logging.getLogger(__name__)

LEADERSHIP_HANDOVER_WAIT_S = 5.0


async def controlled_shutdown(broker: Broker) -> bool:
    """True when the controller moved everything off this broker."""
    config = broker.config
    if not config.get("controlled.shutdown.enable"):
        return False
    if not (set(broker.metadata.brokers) - {broker.broker_id}):
        return False  # nowhere else to lead from
    backoff = config.get("controlled.shutdown.retry.backoff.ms") / 1000
    timeout = config.get("controller.socket.timeout.ms") / 1000
    for attempt in range(config.get("controlled.shutdown.max.retries")):
        if attempt:
            await asyncio.sleep(backoff)
        try:
            error, remaining = await _ask_controller(broker, timeout)
        except Exception as exc:  # noqa: BLE001 - retried, then we stop anyway
            log.warning("controlled shutdown attempt %d failed: %s", attempt + 1, exc)
            continue
        if error == ErrorCode.none and not remaining:
            log.info("controlled shutdown succeeded")
            await _await_leadership_handover(broker)
            return True
        log.warning(
            "controlled shutdown attempt %d: %s, %d partitions remain led here",
            attempt + 1,
            ErrorCode(error).name,
            len(remaining),
        )
    log.warning("controlled shutdown did not complete; stopping anyway")
    return False


async def _ask_controller(broker: Broker, timeout: float) -> tuple[int, list]:
    await broker.metadata.refresh_controller()
    controller_id = broker.metadata.controller_id
    info = broker.metadata.brokers.get(controller_id)
    endpoint = broker.replicas.inter_broker_endpoint(info) if info is not None else None
    if endpoint is None:
        raise ConnectionError(f"no reachable controller (id {controller_id})")
    broker_epoch = await broker.zk.creation_zxid(zk.broker_path(broker.broker_id))
    connection = BrokerConnection(
        endpoint.host,
        endpoint.port,
        node_id=controller_id,
        client_id=f"broker-{broker.broker_id}-shutdown",
        request_timeout=timeout,
        security=peer_security(broker.config, endpoint),
    )
    try:
        response = await connection.send(
            interbroker.ControlledShutdownRequest(
                broker_id=broker.broker_id,
                broker_epoch=broker_epoch if broker_epoch is not None else -1,
            )
        )
    finally:
        await connection.close()
    remaining = [(p.topic_name, p.partition_index) for p in response.remaining_partitions]
    return response.error_code, remaining


async def _await_leadership_handover(broker: Broker) -> None:
    deadline = time.monotonic() + LEADERSHIP_HANDOVER_WAIT_S
    while time.monotonic() < deadline:
        if not any(len(p.replicas) > 1 for p in broker.replicas.leaders.values()):
            return
        await asyncio.sleep(0.02)
