"""The controller role: topic creation, partition states, deletion, config changes.

This is the single-broker increment: the broker that holds the ephemeral /controller znode
writes assignments and partition states straight to ZooKeeper, and the brokers named leader
in a state znode serve that partition. The clustering issue will add LeaderAndIsr and
UpdateMetadata requests on top; the znode writes stay as they are here (conditional on the
znode versions, so a stale controller is fenced).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

from kazoo.exceptions import NodeExistsError

from brokerd.protocol.errors import ErrorCode, KafkaError

from . import zk
from .metadata import MetadataCache, TopicInfo
from .zk import PartitionState, ZkClient

log = logging.getLogger(__name__)

PartitionsCallback = Callable[[str, Sequence[int]], Awaitable[None]]


class Controller:
    def __init__(self, zk_client: ZkClient, broker_id: int, cache: MetadataCache):
        self.zk = zk_client
        self.broker_id = broker_id
        self.cache = cache
        self.epoch = 0
        self.on_topic_deleted: list[PartitionsCallback] = []

    @property
    def is_active(self) -> bool:
        return self.cache.controller_id == self.broker_id

    async def elect(self) -> bool:
        """Try to become controller: /controller (ephemeral) and a bumped /controller_epoch."""
        payload = {"version": 1, "brokerid": self.broker_id, "timestamp": str(_now_ms())}
        try:
            await self.zk.create_json(zk.CONTROLLER, payload, ephemeral=True)
        except NodeExistsError:
            await self.cache.refresh_controller()
            return self.is_active
        found = await self.zk.get(zk.CONTROLLER_EPOCH)
        if found is None:
            self.epoch = 1
            await self.zk.create_raw(zk.CONTROLLER_EPOCH, b"1")
        else:
            self.epoch = int(found[0] or b"0") + 1
            await self.zk.set_raw(zk.CONTROLLER_EPOCH, str(self.epoch).encode(), found[1])
        await self.cache.refresh_controller()
        await self.elect_missing_leaders()
        await self.process_pending_deletions()
        return self.is_active

    # Assignment -------------------------------------------------------------------------
    def assign_replicas(
        self, partitions: int, replication_factor: int, first_partition: int = 0
    ) -> dict[int, list[int]]:
        """Round-robin over live brokers from a random start, as Kafka does without racks."""
        brokers = sorted(self.cache.brokers) or [self.broker_id]
        if replication_factor > len(brokers):
            raise KafkaError(
                ErrorCode.invalid_replication_factor,
                f"Replication factor: {replication_factor} larger than available brokers: "
                f"{len(brokers)}.",
            )
        start = random.randrange(len(brokers))
        return {
            first_partition + p: [
                brokers[(start + p + r) % len(brokers)] for r in range(replication_factor)
            ]
            for p in range(partitions)
        }

    # Topics -----------------------------------------------------------------------------
    async def create_topic(
        self, name: str, assignment: Mapping[int, Sequence[int]], configs: Mapping[str, str]
    ) -> TopicInfo:
        """Config first, then the assignment (what other brokers watch), then the states."""
        if await self.zk.exists(zk.topic_path(name)):
            raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        topic_id = zk.new_kafka_uuid()
        await self.zk.upsert_json(zk.topic_config_path(name), zk.entity_config(configs))
        try:
            await self.zk.create_json(
                zk.topic_path(name), zk.topic_assignment(topic_id, assignment)
            )
        except NodeExistsError:
            raise KafkaError(
                ErrorCode.topic_already_exists, f"Topic '{name}' already exists."
            ) from None
        await self._create_states(name, assignment)
        info = await self.cache.refresh_topic(name)
        assert info is not None
        return info

    async def create_partitions(self, info: TopicInfo, assignment: Mapping[int, Sequence[int]]):
        combined = {**info.assignment, **{p: list(r) for p, r in assignment.items()}}
        found = await self.zk.get_json(zk.topic_path(info.name))
        if found is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition)
        data, version = found
        data["partitions"] = {str(p): list(r) for p, r in sorted(combined.items())}
        await self.zk.set_json(zk.topic_path(info.name), data, version)
        await self._create_states(info.name, assignment)
        return await self.cache.refresh_topic(info.name)

    async def _create_states(self, name: str, assignment: Mapping[int, Sequence[int]]) -> None:
        live = set(self.cache.brokers) | {self.broker_id}
        for partition, replicas in assignment.items():
            isr = [r for r in replicas if r in live]
            state = PartitionState(
                leader=isr[0] if isr else -1,
                leader_epoch=0,
                isr=isr,
                controller_epoch=self.epoch,
            )
            try:
                await self.zk.create_json(zk.partition_state_path(name, partition), state.to_json())
            except NodeExistsError:
                pass

    async def elect_missing_leaders(self) -> None:
        """Topics written by other tools (only /brokers/topics/<t>) get partition states."""
        for info in list(self.cache.topics.values()):
            missing = {p: r for p, r in info.assignment.items() if p not in info.states}
            if missing:
                await self._create_states(info.name, missing)
                await self.cache.refresh_topic(info.name)

    async def alter_topic_config(self, name: str, configs: Mapping[str, str]) -> None:
        await self.zk.upsert_json(zk.topic_config_path(name), zk.entity_config(configs))
        await self._notify_config_change(f"topics/{name}")
        await self.cache.refresh_topic(name)

    async def alter_broker_config(self, entity: str, configs: Mapping[str, str]) -> None:
        await self.zk.upsert_json(zk.broker_config_path(entity), zk.entity_config(configs))
        await self._notify_config_change(f"brokers/{entity}")

    async def _notify_config_change(self, entity_path: str) -> None:
        await self.zk.create_json(
            f"{zk.CONFIG_CHANGES}/{zk.CONFIG_CHANGE_PREFIX}",
            zk.config_change_notification(entity_path),
            sequence=True,
        )

    # Deletion ---------------------------------------------------------------------------
    async def delete_topic(self, name: str) -> None:
        """Mark for deletion (/admin/delete_topics/<t>), then carry it out as controller."""
        try:
            await self.zk.create_json(zk.delete_topic_path(name), {})
        except NodeExistsError:
            pass
        if self.is_active:
            await self._complete_deletion(name)

    async def process_pending_deletions(self) -> None:
        for name in await self.zk.children(zk.DELETE_TOPICS):
            await self._complete_deletion(name)

    async def _complete_deletion(self, name: str) -> None:
        info = self.cache.topic(name) or await self.cache.refresh_topic(name)
        if info is not None:
            for callback in self.on_topic_deleted:
                await callback(name, sorted(info.assignment))
        await self.zk.delete(zk.topic_path(name), recursive=True)
        await self.zk.delete(zk.topic_config_path(name))
        await self.zk.delete(zk.delete_topic_path(name))
        self.cache.topics.pop(name, None)
        log.info("deleted topic %s", name)


def _now_ms() -> int:
    return int(time.time() * 1000)
