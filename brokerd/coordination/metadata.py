"""The broker's view of the cluster, read from ZooKeeper: brokers, topics, partition states.

Kafka brokers learn this from the controller's UpdateMetadata; until the controller exists,
each broker reads the znodes itself and refreshes on watches. Handlers read this cache only.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from . import zk
from .zk import BrokerInfo, PartitionState, ZkClient

log = logging.getLogger(__name__)


@dataclass
class TopicInfo:
    name: str
    topic_id: str  # Kafka's base64 form
    assignment: dict[int, list[int]]
    states: dict[int, PartitionState] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)
    marked_for_deletion: bool = False

    @property
    def partition_count(self) -> int:
        return len(self.assignment)


class MetadataCache:
    def __init__(self, zk_client: ZkClient):
        self.zk = zk_client
        self.cluster_id: str | None = None
        self.controller_id: int = -1
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.listeners: list = []  # callables(topic names changed)
        self.controller_listeners: list = []  # callables() after /controller was re-read
        self._refresh_lock = asyncio.Lock()

    # Loading ----------------------------------------------------------------------------
    async def load(self) -> None:
        self.cluster_id = await zk.get_or_create_cluster_id(self.zk)
        await self.refresh_brokers()
        await self.refresh_controller()
        await self.refresh_topics()

    async def refresh_brokers(self, *_: object) -> None:
        brokers = {}
        for child in await self.zk.children(zk.BROKER_IDS, watch=self._brokers_changed):
            found = await self.zk.get_json(zk.broker_path(int(child)))
            if found is not None:
                brokers[int(child)] = BrokerInfo.from_json(int(child), found[0])
        self.brokers = brokers

    def _brokers_changed(self, *_: object) -> None:
        self._spawn(self.refresh_brokers())

    async def refresh_controller(self, *_: object) -> None:
        found = await self.zk.get_json(zk.CONTROLLER, watch=self._controller_changed)
        self.controller_id = int(found[0]["brokerid"]) if found else -1
        for listener in self.controller_listeners:
            listener()

    def _controller_changed(self, *_: object) -> None:
        self._spawn(self.refresh_controller())

    async def refresh_topics(self) -> None:
        names = await self.zk.children(zk.BROKER_TOPICS, watch=self._topics_changed)
        deleting = set(await self.zk.children(zk.DELETE_TOPICS))
        for gone in set(self.topics) - set(names):
            del self.topics[gone]
        for name in names:
            await self.refresh_topic(name)
            if name in self.topics:
                self.topics[name].marked_for_deletion = name in deleting
        for listener in self.listeners:
            listener()

    def _topics_changed(self, *_: object) -> None:
        self._spawn(self.refresh_topics())

    async def refresh_topic(self, name: str) -> TopicInfo | None:
        # Serialised: a watch-triggered refresh that read older znodes must not land after
        # (and overwrite) one that read newer ones.
        async with self._refresh_lock:
            return await self._refresh_topic(name)

    async def _refresh_topic(self, name: str) -> TopicInfo | None:
        found = await self.zk.get_json(zk.topic_path(name))
        if found is None:
            self.topics.pop(name, None)
            return None
        data = found[0]
        topic_id = data.get("topic_id") or zk.new_kafka_uuid()  # pre-2.8 topics have none
        assignment = {int(p): [int(r) for r in rs] for p, rs in data["partitions"].items()}
        info = TopicInfo(name, topic_id, assignment)
        for partition in assignment:
            state = await self.zk.get_json(zk.partition_state_path(name, partition))
            if state is not None:
                info.states[partition] = PartitionState.from_json(state[0], state[1])
        config = await self.zk.get_json(zk.topic_config_path(name))
        if config is not None:
            info.configs = {k: str(v) for k, v in (config[0].get("config") or {}).items()}
        previous = self.topics.get(name)
        if previous is not None:
            info.marked_for_deletion = previous.marked_for_deletion
        self.topics[name] = info
        return info

    def _spawn(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        task.add_done_callback(_log_failure)

    # Queries ----------------------------------------------------------------------------
    def topic(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

    def topic_by_id(self, topic_id: str) -> TopicInfo | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        info = self.topics.get(topic)
        return info.states.get(partition) if info else None


def _log_failure(task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("metadata refresh failed: %s", task.exception())
