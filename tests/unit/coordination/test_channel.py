"""ControllerChannel on its own: what its requests carry (this controller's id and epoch,
the broker epoch it knows for the target, the states and live brokers), and its per-broker
sender retrying over real TCP while the target is live and giving up once it is gone."""

from __future__ import annotations

import asyncio

from brokerd.config import Endpoint
from brokerd.coordination.channel import ControllerChannel
from brokerd.coordination.controller_context import ControllerContext
from brokerd.coordination.zk_data import BrokerInfo, PartitionState
from brokerd.protocol import interbroker


class _Brokers:
    """The metadata cache as the channel reads it: registered brokers by id."""

    def __init__(self, brokers: dict[int, BrokerInfo]):
        self.brokers = brokers


def _info(broker_id: int, port: int, rack: str | None = None) -> BrokerInfo:
    return BrokerInfo(broker_id, (Endpoint("PLAINTEXT", "PLAINTEXT", "127.0.0.1", port),), rack)


def _channel(live: dict[int, int], active: bool, brokers: dict[int, BrokerInfo]):
    context = ControllerContext(1, lambda: 1 if active else -1, epoch=7, live=live)
    context.observe_epoch(7)
    return context, ControllerChannel(context, _Brokers(brokers))  # type: ignore[arg-type]


def _queued(channel: ControllerChannel, broker_id: int):
    """The request queued for `broker_id`, taken before its sender task runs."""
    request, epoch = channel.queues[broker_id].queue.get_nowait()
    return request, epoch


async def test_requests_carry_controller_and_broker_epochs_and_grouped_states():
    brokers = {1: _info(1, 1), 2: _info(2, 2, "r2"), 3: _info(3, 3)}
    _context, channel = _channel({1: 501, 2: 502}, active=False, brokers=brokers)
    a0 = PartitionState(leader=2, leader_epoch=4, isr=[2, 1], controller_epoch=7, zk_version=9)
    b1 = PartitionState(leader=1, leader_epoch=0, isr=[1], controller_epoch=6, zk_version=0)
    try:
        channel.send_leader_and_isr(2, [("a", 0, a0, [2, 1, 3]), ("b", 1, b1, [1])])
        channel.send_update_metadata([1], [("a", 0, a0, [2, 1, 3])])
        channel.send_stop_replica(3, "a", [2, 0], delete=True)

        leader_and_isr, epoch = _queued(channel, 2)
        assert isinstance(leader_and_isr, interbroker.LeaderAndIsrRequest) and epoch == 7
        assert (
            leader_and_isr.controller_id,
            leader_and_isr.controller_epoch,
            leader_and_isr.broker_epoch,
        ) == (1, 7, 502)
        assert [t.topic_name for t in leader_and_isr.topic_states] == ["a", "b"]
        state = leader_and_isr.topic_states[0].partition_states[0]
        assert (state.partition_index, state.leader, state.leader_epoch, state.isr) == (
            0,
            2,
            4,
            (2, 1),
        )
        assert (state.zk_version, state.replicas, state.controller_epoch) == (9, (2, 1, 3), 7)
        assert [(x.broker_id, x.port) for x in leader_and_isr.live_leaders] == [(1, 1), (2, 2)]

        update, _ = _queued(channel, 1)
        assert update.broker_epoch == 501
        # Broker 3 is registered but not live: an offline replica.
        assert update.topic_states[0].partition_states[0].offline_replicas == (3,)
        assert [(b.id, b.rack, b.endpoints[0].port) for b in update.live_brokers] == [
            (1, None, 1),
            (2, "r2", 2),
            (3, None, 3),
        ]

        stop, _ = _queued(channel, 3)
        assert stop.broker_epoch == -1  # not live: no broker epoch known
        assert [
            (p.partition_index, p.delete_partition) for p in stop.topic_states[0].partition_states
        ] == [
            (0, True),
            (2, True),
        ]
    finally:
        await channel.stop()


async def test_a_failing_broker_is_retried_while_live_and_dropped_once_gone():
    accepted = 0

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        writer.close()  # no Kafka spoken here: every attempt fails

    server = await asyncio.start_server(refuse, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    context, channel = _channel({2: 502}, active=True, brokers={2: _info(2, port)})
    try:
        channel.send_update_metadata([2], [])
        for _ in range(500):
            if accepted >= 3:
                break
            await asyncio.sleep(0.02)
        assert accepted >= 3  # retried while broker 2 is live

        del context.live[2]  # its registration went
        await asyncio.sleep(0.5)
        settled = accepted
        await asyncio.sleep(0.5)
        assert accepted == settled  # given up: no more attempts
        assert channel.queues[2].queue.empty()
    finally:
        await channel.stop()
        server.close()
        await server.wait_closed()
