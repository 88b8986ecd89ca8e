"""The controller's parts built on their own over a real ZooKeeper chroot: the context, the
partition state writer, the partition state machine and the reassigner, with a recorder in
place of the channel (the requests it would queue to brokers are what these tests check)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from brokerd.coordination import zk_data
from brokerd.coordination.controller_context import ControllerContext
from brokerd.coordination.metadata import MetadataCache
from brokerd.coordination.partition_state_machine import PartitionStateMachine
from brokerd.coordination.partition_states import PartitionStateWriter
from brokerd.coordination.reassignment import Reassigner
from brokerd.coordination.zk_client import ZkClient
from brokerd.coordination.zk_data import PartitionState

_chroots = itertools.count(1)
CONTROLLER_ID = 1


@dataclass
class RecordedRequests:
    """What the reassigner asked the channel to send, in order."""

    sent: list[tuple] = field(default_factory=list)

    def send_leader_and_isr(self, broker_id, states) -> None:
        self.sent.append(("LeaderAndIsr", broker_id, _plain(states)))

    def send_update_metadata(self, broker_ids, states) -> None:
        for broker_id in broker_ids:
            self.sent.append(("UpdateMetadata", broker_id, _plain(states)))

    def send_stop_replica(self, broker_id, topic, partitions, delete) -> None:
        self.sent.append(("StopReplica", broker_id, topic, sorted(partitions), delete))

    def take(self) -> list[tuple]:
        sent, self.sent = self.sent, []
        return sent


def _plain(states) -> list[tuple]:
    return [
        (topic, index, state.leader, state.leader_epoch, list(state.isr), list(replicas))
        for topic, index, state, replicas in states
    ]


@dataclass
class Parts:
    zk: ZkClient
    cache: MetadataCache
    context: ControllerContext
    requests: RecordedRequests
    states: PartitionStateWriter
    machine: PartitionStateMachine
    reassigner: Reassigner
    superseded: list[bool]
    scheduled: list

    async def create_topic(
        self, name: str, assignment: dict[int, list[int]], configs: dict[str, str] | None = None
    ) -> None:
        """The znodes a controller writes for a new topic: config, assignment, states."""
        if configs:
            await self.zk.create_json(
                zk_data.topic_config_path(name), zk_data.entity_config(configs)
            )
        await self.zk.create_json(
            zk_data.topic_path(name),
            zk_data.topic_assignment(zk_data.new_kafka_uuid(), assignment),
        )
        await self.zk.ensure_path(zk_data.partitions_path(name))
        await self.zk.create_many(
            [(f"{zk_data.partitions_path(name)}/{index}", b"") for index in assignment]
        )
        await self.zk.create_many(
            [
                (
                    zk_data.partition_state_path(name, index),
                    zk_data.encode(
                        PartitionState(replicas[0], 0, list(replicas), self.context.epoch).to_json()
                    ),
                )
                for index, replicas in assignment.items()
            ]
        )
        await self.cache.refresh_topic(name)

    async def state(self, topic: str, index: int) -> PartitionState:
        data, version = await self.zk.get_json(zk_data.partition_state_path(topic, index))
        return PartitionState.from_json(data, version)

    async def topic_znode(self, topic: str) -> dict:
        data, _version = await self.zk.get_json(zk_data.topic_path(topic))
        return data

    async def set_isr(self, topic: str, index: int, isr: list[int]) -> None:
        """What a partition leader writes when its ISR changes."""
        current = await self.state(topic, index)
        current.isr = list(isr)
        await self.zk.set_json(
            zk_data.partition_state_path(topic, index), current.to_json(), current.zk_version
        )

    async def take_office(self) -> None:
        """Bump /controller_epoch as an elected controller does and fence on its version."""
        found = await self.zk.get(zk_data.CONTROLLER_EPOCH)
        if found is None:
            await self.zk.create_raw(zk_data.CONTROLLER_EPOCH, zk_data.encode_controller_epoch(1))
            self.context.epoch, self.context.epoch_zk_version = 1, 0
        else:
            self.context.epoch = zk_data.decode_controller_epoch(found[0]) + 1
            self.context.epoch_zk_version = await self.zk.set_raw(
                zk_data.CONTROLLER_EPOCH,
                zk_data.encode_controller_epoch(self.context.epoch),
                found[1],
            )
        self.context.observe_epoch(self.context.epoch)

    async def close(self) -> None:
        await self.zk.stop()


async def build(zookeeper, live: dict[int, int], config=None) -> Parts:
    client = ZkClient(
        zookeeper.connect, f"/controller-parts-{next(_chroots)}", 6000, connect_ms=10000
    )
    await client.start()
    cache = MetadataCache(client)
    await cache.load()
    controller_id = {"id": CONTROLLER_ID}
    context = ControllerContext(CONTROLLER_ID, lambda: controller_id["id"], live=dict(live))
    superseded: list[bool] = []
    scheduled: list = []

    async def on_superseded() -> None:
        superseded.append(True)
        found = await client.get(zk_data.CONTROLLER_EPOCH)
        context.observe_epoch(zk_data.decode_controller_epoch(found[0]))

    requests = RecordedRequests()
    states = PartitionStateWriter(client, cache, context, on_superseded)
    machine = PartitionStateMachine(cache, context, states, requests, config)
    reassigner = Reassigner(
        client,
        cache,
        context,
        requests,
        states,
        on_superseded=on_superseded,
        schedule_event=scheduled.append,
    )
    parts = Parts(
        client, cache, context, requests, states, machine, reassigner, superseded, scheduled
    )
    await parts.take_office()
    return parts
