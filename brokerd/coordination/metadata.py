"""The broker's view of the cluster, read from ZooKeeper: brokers, topics, partition states.

Partition states are kept current by the controller (LeaderAndIsr, UpdateMetadata); the
znodes are read when a topic is first seen, and again only for that topic. A change of
/brokers/topics reads just the added topics (and drops the removed ones), so the cost of a
change follows what changed, never the number of topics. Per-topic watches cover what the
controller does not push: a topic's assignment (CreatePartitions), its config
(/config/topics/<t>), and partition states not yet written when the topic was first read.
Handlers read this cache only.

A deleted topic stays deleted: its id is remembered, and a refresh that read its znodes
before the deletion cannot publish it again afterwards.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from brokerd.util.background import BackgroundTasks

from . import zk_client, zk_data
from .zk_client import ZkClient
from .zk_data import BrokerInfo, PartitionState

log = logging.getLogger(__name__)

# Ids of deleted topics remembered (a stale read is at most a few watch rounds old).
DELETED_IDS_KEPT = 10_000


@dataclass
class TopicInfo:
    name: str
    topic_id: str  # Kafka's base64 form
    assignment: dict[int, list[int]]
    states: dict[int, PartitionState] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)
    marked_for_deletion: bool = False
    # Ongoing reassignments (KIP-455), from the topic znode: partition -> replica ids.
    adding: dict[int, list[int]] = field(default_factory=dict)
    removing: dict[int, list[int]] = field(default_factory=dict)

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
        # Moves on whenever a topic name appears or goes: what was computed over the names
        # (a regex subscription's matches) stays valid while it is unchanged.
        self.topic_names_version = 0
        # Moves on whenever a topic appears, goes or is read again (its assignment, hence
        # its partition count, may have changed); leadership moves do not count.
        self.topics_version = 0
        # Replicas the controller's UpdateMetadata named offline although their broker is
        # live (on a failed log dir, KIP-112): (topic, partition) -> broker ids.
        self.offline_replicas_on_live: dict[tuple[str, int], tuple[int, ...]] = {}
        self._deleted_ids: OrderedDict[str, None] = OrderedDict()
        self.listeners: list = []  # callables() after topics, partitions or states appeared
        self.controller_listeners: list = []  # callables() after /controller was re-read
        self.config_listeners: list = []  # callables(topic) after a topic's config changed
        self._refresh_lock = asyncio.Lock()
        self._armed: set[str] = set()  # paths with a pending watch of ours
        self._names_running = False
        self._names_dirty = False
        self._states_created: set[str] = set()  # state znodes that appeared, to read
        self._states_running = False
        self._session_lost = False
        self._refreshes = BackgroundTasks(log, "metadata refresh failed", logging.WARNING)
        zk_client.callbacks.on_lost.append(self._on_session_lost)
        zk_client.callbacks.on_connected.append(self._on_connected)

    # Loading ----------------------------------------------------------------------------
    async def load(self) -> None:
        self.cluster_id = await zk_client.get_or_create_cluster_id(self.zk)
        await self.refresh_brokers()
        await self.refresh_controller()
        await self.refresh_topics()

    async def refresh_brokers(self, *_: object) -> None:
        ids = [
            int(child)
            for child in await self.zk.children(zk_data.BROKER_IDS, watch=self._brokers_changed)
        ]
        found = await self.zk.get_json_many([zk_data.broker_path(b) for b in ids])
        self.brokers = {
            b: BrokerInfo.from_json(b, f[0]) for b, f in zip(ids, found, strict=True) if f
        }

    def _brokers_changed(self, *_: object) -> None:
        self._spawn(self.refresh_brokers())

    async def refresh_controller(self, *_: object) -> None:
        found = await self.zk.get_json(zk_data.CONTROLLER, watch=self._controller_changed)
        self.controller_id = zk_data.controller_id_of(found[0]) if found else -1
        for listener in self.controller_listeners:
            listener()

    def _controller_changed(self, *_: object) -> None:
        self._spawn(self.refresh_controller())

    async def refresh_topics(self) -> None:
        """Everything from ZooKeeper again: start-up, controller failover, a new session."""
        names = await self._topic_names()
        await self._mark_deletions()
        for gone in set(self.topics) - set(names):
            await self._drop_if_gone(gone)
        async with self._refresh_lock:
            await self._refresh_many(names)
        self._notify()

    async def _topic_names(self) -> list[str]:
        return await self._children_watched(zk_data.BROKER_TOPICS)

    def _on_topic_names_changed(self) -> None:
        if self._names_running:
            self._names_dirty = True  # the running pass lists the names once more
            return
        self._spawn(self._sync_topic_names())

    async def _sync_topic_names(self) -> None:
        """Read the topics added since the last look and drop the removed ones."""
        self._names_running = True
        try:
            while True:
                self._names_dirty = False
                names = await self._topic_names()
                added = [n for n in names if n not in self.topics]
                for gone in set(self.topics) - set(names):
                    await self._drop_if_gone(gone)
                async with self._refresh_lock:
                    # CreateTopics may have read some meanwhile.
                    await self._refresh_many([n for n in added if n not in self.topics])
                await self._mark_deletions()
                self._notify()
                if not self._names_dirty:
                    return
        finally:
            self._names_running = False

    async def _drop_if_gone(self, name: str) -> None:
        # The listing may predate a topic CreateTopics read since: only a missing znode
        # drops. After any refresh of it in flight, which would otherwise publish it again.
        async with self._refresh_lock:
            if not await self.zk.exists(zk_data.topic_path(name)):
                self.forget_topic(name)

    def forget_topic(self, name: str) -> None:
        """Drop a deleted topic, for good: its id is never published again."""
        info = self.topics.pop(name, None)
        if info is not None:
            self.topic_names_version += 1
            self.topics_version += 1
            for partition in info.assignment:
                self.offline_replicas_on_live.pop((name, partition), None)
            self._deleted_ids[info.topic_id] = None
            while len(self._deleted_ids) > DELETED_IDS_KEPT:
                self._deleted_ids.popitem(last=False)

    def is_deleted(self, topic_id: str) -> bool:
        return topic_id in self._deleted_ids

    async def _mark_deletions(self) -> None:
        deleting = set(await self._children_watched(zk_data.DELETE_TOPICS))
        for info in self.topics.values():
            info.marked_for_deletion = info.name in deleting

    def _on_deletions_changed(self) -> None:
        self._spawn(self._deletions_changed())

    async def _deletions_changed(self) -> None:
        await self._mark_deletions()
        self._notify()  # the controller carries out deletions asked of other brokers

    async def refresh_topic(self, name: str) -> TopicInfo | None:
        """One topic's znodes, read again (its assignment, partition states and config)."""
        # Serialised: a refresh that read older znodes must not land after (and overwrite)
        # one that read newer ones.
        async with self._refresh_lock:
            return await self._refresh_topic(name)

    async def _refresh_topic(self, name: str, new_states_only: bool = False) -> TopicInfo | None:
        return (await self._refresh_many([name], new_states_only))[name]

    async def _refresh_many(
        self, names: list[str], new_states_only: bool = False
    ) -> dict[str, TopicInfo | None]:
        """Topics' znodes read again, all of them in a few pipelined batches (assignments,
        partition states, configs), never a round trip per partition or per topic. With
        `new_states_only`, the states of partitions the cache already holds are kept (the
        controller keeps them current): an assignment change reads only the new ones."""
        if not names:
            return {}
        found_topics = await self._get_many_watched([zk_data.topic_path(n) for n in names])
        infos: dict[str, TopicInfo] = {}
        out: dict[str, TopicInfo | None] = {}
        for name, found in zip(names, found_topics, strict=True):
            if found is None or not isinstance(found[0], dict) or "partitions" not in found[0]:
                self.forget_topic(name)  # gone (or a bare node a deletion is removing)
                out[name] = None
                continue
            data = found[0]
            previous = self.topics.get(name)
            # Pre-2.8 topics have no id in ZooKeeper: theirs is made up once and kept.
            topic_id = data.get("topic_id") or (previous.topic_id if previous else None)
            info = TopicInfo(
                name,
                topic_id or zk_data.new_kafka_uuid(),
                {int(p): [int(r) for r in rs] for p, rs in data["partitions"].items()},
                adding=_replica_map(data.get("adding_replicas")),
                removing=_replica_map(data.get("removing_replicas")),
            )
            if previous is not None and previous.topic_id == info.topic_id:
                info.marked_for_deletion = previous.marked_for_deletion
                info.configs = previous.configs
            infos[name] = info
        await self._read_states(infos, new_states_only)
        configs = await self._get_many_watched(
            [zk_data.topic_config_path(n) for n in infos], watch_creation=True
        )
        for (name, info), config in zip(infos.items(), configs, strict=True):
            if config is not None:
                info.configs = _configs_of(config[0])
            previous = self.topics.get(name)
            if previous is not None and previous.topic_id == info.topic_id:
                for partition, state in previous.states.items():  # UpdateMetadata meanwhile
                    if partition in info.assignment:
                        _merge(info, partition, state)
            if info.topic_id in self._deleted_ids:
                out[name] = None  # deleted while we read it
                continue
            if name not in self.topics:
                self.topic_names_version += 1
            self.topics_version += 1
            self.topics[name] = info  # published whole: no half-read topic is ever seen
            out[name] = info
        return out

    async def _read_states(self, infos: dict[str, TopicInfo], new_states_only: bool) -> None:
        """The partition states of `infos` in one batch; a state not written yet is watched
        for its creation (and read, in one more batch, if it appeared in between)."""
        keys: list[tuple[str, int]] = []
        for name, info in infos.items():
            previous = self.topics.get(name) if new_states_only else None
            known = previous.states if previous and previous.topic_id == info.topic_id else {}
            keys.extend((name, p) for p in info.assignment if p not in known)
        paths = [zk_data.partition_state_path(n, p) for n, p in keys]
        found = await self.zk.get_json_many(paths)
        missing = [i for i, state in enumerate(found) if state is None]
        if missing:
            exist = await self._exists_many_watched([paths[i] for i in missing])
            appeared = [i for i, there in zip(missing, exist, strict=True) if there]
            if appeared:  # written in between
                for i, state in zip(
                    appeared, await self.zk.get_json_many([paths[i] for i in appeared]), strict=True
                ):
                    found[i] = state
        for (name, partition), state in zip(keys, found, strict=True):
            if state is not None:
                _merge(infos[name], partition, PartitionState.from_json(*state))

    # Per-topic watches --------------------------------------------------------------------
    def _arm(self, path: str) -> Callable | None:
        """Our watch for `path`, or None when one is already pending (a watch fires once,
        and one firing is all a change needs)."""
        if path in self._armed:
            return None
        self._armed.add(path)

        def fired(*_: object) -> None:
            self._armed.discard(path)
            self._spawn(self._watched_change(path))

        return fired

    async def _get_watched(self, path: str, watch_creation: bool = False):
        """get_json with our watch; a missing node holds no data watch, so it is either
        disarmed or (`watch_creation`) watched for its creation instead."""
        watch = self._arm(path)
        try:
            found = await self.zk.get_json(path, watch=watch)
            if found is None and watch is not None:
                if watch_creation:
                    if await self.zk.exists(path, watch=watch):  # created in between
                        found = await self.zk.get_json(path)
                else:
                    self._armed.discard(path)
        except BaseException:
            self._armed.discard(path)
            raise
        return found

    async def _children_watched(self, path: str) -> list[str]:
        watch = self._arm(path)
        try:
            return await self.zk.children(path, watch=watch)
        except BaseException:
            self._armed.discard(path)
            raise

    async def _get_many_watched(self, paths: list[str], watch_creation: bool = False):
        """_get_watched for many paths in one batch (and one more for creation watches)."""
        armed = {p: self._arm(p) for p in paths}
        try:
            found = await self.zk.get_json_many(paths, watch=armed.get)
            missing = [i for i, f in enumerate(found) if f is None and armed[paths[i]]]
            if missing and watch_creation:
                exist = await self.zk.exists_many([paths[i] for i in missing], watch=armed.get)
                appeared = [i for i, there in zip(missing, exist, strict=True) if there]
                if appeared:  # created in between
                    again = await self.zk.get_json_many([paths[i] for i in appeared])
                    for i, state in zip(appeared, again, strict=True):
                        found[i] = state
            elif missing:
                for i in missing:
                    self._armed.discard(paths[i])
        except BaseException:
            for path, watch in armed.items():
                if watch is not None:
                    self._armed.discard(path)
            raise
        return found

    async def _exists_many_watched(self, paths: list[str]) -> list[bool]:
        """Whether each path exists, watched for its creation (a state the controller has
        not written yet when the assignment was read), in one batch."""
        armed = {p: self._arm(p) for p in paths}
        try:
            return [s is not None for s in await self.zk.exists_many(paths, watch=armed.get)]
        except BaseException:
            for path, watch in armed.items():
                if watch is not None:
                    self._armed.discard(path)
            raise

    async def _watched_change(self, path: str) -> None:
        if path == zk_data.BROKER_TOPICS:
            self._on_topic_names_changed()
        elif path == zk_data.DELETE_TOPICS:
            self._on_deletions_changed()
        elif path.startswith("/config/topics/"):
            await self._config_changed(path.rsplit("/", 1)[1])
        elif path.endswith("/state"):
            await self._state_created(path)
        else:
            await self._assignment_changed(path.rsplit("/", 1)[1])

    async def _assignment_changed(self, name: str) -> None:
        """/brokers/topics/<t> changed (new partitions) or went (the names watch drops it)."""
        if name in self.topics:
            async with self._refresh_lock:
                await self._refresh_topic(name, new_states_only=True)
            self._notify()

    async def _config_changed(self, name: str) -> None:
        if name not in self.topics:
            return  # deleted: nothing to watch any more
        found = await self._get_watched(zk_data.topic_config_path(name), watch_creation=True)
        info = self.topics.get(name)
        if info is None or found is None:
            return
        info.configs = _configs_of(found[0])
        for listener in self.config_listeners:
            listener(name)

    async def _state_created(self, path: str) -> None:
        """A state znode watched for its creation appeared. The controller writes a new
        topic's states in one burst, so the watches that fire together are read together:
        one batch for the burst, and one notification, never a read per partition."""
        self._states_created.add(path)
        if self._states_running:
            return
        self._states_running = True
        try:
            while self._states_created:
                await asyncio.sleep(0)  # the rest of the burst's watches come in first
                paths = sorted(self._states_created)
                self._states_created.clear()
                found = await self.zk.get_json_many(paths)
                for state_path, state in zip(paths, found, strict=True):
                    parts = state_path.split("/")  # /brokers/topics/<t>/partitions/<p>/state
                    if state is not None:
                        self.merge_state(parts[3], int(parts[5]), PartitionState.from_json(*state))
                self._notify()
        finally:
            self._states_running = False

    def merge_state(self, topic: str, partition: int, state: PartitionState) -> None:
        info = self.topics.get(topic)
        if info is not None:
            _merge(info, partition, state)

    # A new ZooKeeper session has none of the old session's watches --------------------
    def _on_session_lost(self) -> None:
        self._session_lost = True

    def _on_connected(self) -> None:
        if self._session_lost:
            self._session_lost = False
            self._armed.clear()
            self._spawn(self.load())

    # Helpers ------------------------------------------------------------------------------
    def _notify(self) -> None:
        for listener in self.listeners:
            listener()

    def _spawn(self, coroutine) -> None:
        self._refreshes.spawn(coroutine)

    # Queries ----------------------------------------------------------------------------
    def topic(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

    def topic_by_id(self, topic_id: str) -> TopicInfo | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def set_offline_replicas(self, topic: str, partition: int, offline: Iterable[int]) -> None:
        """The offline_replicas of the controller's latest UpdateMetadata for a partition."""
        live = self.brokers
        on_live = tuple(r for r in offline if r in live)
        if on_live:
            self.offline_replicas_on_live[(topic, partition)] = on_live
        else:
            self.offline_replicas_on_live.pop((topic, partition), None)

    def offline_replicas(self, topic: str, partition: int, replicas: Iterable[int]) -> tuple:
        """Metadata's offline_replicas: replicas of brokers not live, and those the
        controller said are on a failed log dir."""
        on_failed_dirs = self.offline_replicas_on_live.get((topic, partition), ())
        live = self.brokers
        return tuple(r for r in replicas if r not in live or r in on_failed_dirs)

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        info = self.topics.get(topic)
        return info.states.get(partition) if info else None


def _merge(info: TopicInfo, partition: int, state: PartitionState) -> None:
    """Keep the newer of the cached and the given state (leader epoch, znode version)."""
    cached = info.states.get(partition)
    if cached is None or (state.leader_epoch, state.zk_version) >= (
        cached.leader_epoch,
        cached.zk_version,
    ):
        info.states[partition] = state


def _replica_map(found: dict | None) -> dict[int, list[int]]:
    return {int(p): [int(r) for r in rs] for p, rs in (found or {}).items() if rs}


def _configs_of(data: dict) -> dict[str, str]:
    return {k: str(v) for k, v in (data.get("config") or {}).items()}
