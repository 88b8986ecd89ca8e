"""The controller role: topic creation, partition states, leader election, deletion.

The broker holding the ephemeral /controller znode (with a bumped /controller_epoch) is the
controller. It watches /brokers/ids; when a broker goes it elects new leaders from the ISR
(out of the ISR only with unclean.leader.election.enable), bumps the leader epoch, writes
the state znodes conditionally on their versions, and tells the brokers with LeaderAndIsr,
UpdateMetadata and StopReplica over the Kafka protocol (channel.py). Failover rebuilds
everything from ZooKeeper; brokers refuse requests carrying an older controller epoch.

A topic's life: created (config, assignment, then states, written only while the topic
znode exists), marked for deletion (/admin/delete_topics/<t>: no new states, no creation
of that name), deleted (replicas stopped and removed, then the znodes, the marker last).
Each step is one controller event; a deletion asked twice is carried out once.

This class is the election and the event loop (one event at a time, only while in office);
the work is done by its parts, which share the ControllerContext: PartitionStateMachine
(elections and the requests announcing them), PartitionStateWriter (the fenced state
writes), TopicDeletionManager, Reassigner, and the ControllerChannel to brokers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

from kazoo.exceptions import NodeExistsError, NoNodeError

from brokerd.config import BrokerConfig
from brokerd.protocol.errors import ErrorCode, KafkaError
from brokerd.util.background import BackgroundTasks

from . import election, zk_data
from .channel import ControllerChannel, EndpointFor
from .controller_context import ControllerContext
from .log_dir_failures import LogDirFailures
from .metadata import MetadataCache, TopicInfo
from .partition_state_machine import PartitionStateMachine
from .partition_states import PartitionStateWriter
from .reassignment import Reassigner
from .replica_assignment import assign_replicas
from .topic_deletion import TopicDeletionManager
from .zk_client import ControllerMovedError, ZkClient
from .zk_data import PartitionState

log = logging.getLogger(__name__)

# How long a broker that is not the controller waits for a new topic's partition states.
STATES_WAIT_S = 10.0


class FailureProbes(Protocol):
    """The broker's failure probes (failure.probes): tests hold the controller at points."""

    async def reached(self, module: str, point: str) -> None: ...


class Controller:
    def __init__(
        self,
        zk_client: ZkClient,
        broker_id: int,
        cache: MetadataCache,
        config: BrokerConfig | None = None,
        endpoint_for: EndpointFor | None = None,
        probes: FailureProbes | None = None,
    ):
        self.zk = zk_client
        self.broker_id = broker_id
        self.cache = cache
        self.config = config
        self.probes = probes  # the broker's FailureProbes (tests hold points with them)
        self.context = ControllerContext(broker_id, lambda: cache.controller_id)
        self.channel = ControllerChannel(self.context, cache, config, endpoint_for)
        self.partition_states = PartitionStateWriter(
            zk_client, cache, self.context, self.resign_superseded
        )
        self.partitions = PartitionStateMachine(
            cache, self.context, self.partition_states, self.channel, config
        )
        self.announced: set[tuple[str, int]] = set()  # partitions sent LeaderAndIsr
        self._creating: set[str] = set()  # topics whose states create_topic is writing
        self._events = asyncio.Lock()  # controller work runs one event at a time
        self._tasks = BackgroundTasks(log, "controller event failed")
        self.stopped = False
        self.registered = False  # elections only once the broker is in /brokers/ids
        self._rebalancer: asyncio.Task | None = None
        self.reassignments = Reassigner(
            zk_client,
            cache,
            self.context,
            self.channel,
            self.partition_states,
            on_superseded=self.resign_superseded,
            schedule_event=self.schedule_event,
        )
        self.deletions = TopicDeletionManager(
            zk_client, cache, self.context, self.channel, forget=self._forget_topic
        )
        # Callbacks (topic, partitions) that remove this broker's replicas of a deleted topic.
        self.on_topic_deleted = self.deletions.on_topic_deleted
        # Failed log dirs (KIP-112): notifications in, replicas answered offline out.
        self.log_dir_failures = LogDirFailures(zk_client, cache, self.context, self.partitions)
        self.channel.on_offline_replicas = self._replicas_offline
        cache.controller_listeners.append(self._controller_changed)

    @property
    def is_active(self) -> bool:
        return self.context.is_active

    @property
    def epoch(self) -> int:
        return self.context.epoch

    @property
    def highest_seen_epoch(self) -> int:
        return self.context.highest_seen_epoch

    def observe_epoch(self, epoch: int) -> None:
        self.context.observe_epoch(epoch)

    async def resign_superseded(self) -> None:
        """A fenced write failed: a newer controller exists. Learn its epoch, stop acting."""
        found = await self.zk.get(zk_data.CONTROLLER_EPOCH)
        if found is not None:
            self.context.observe_epoch(zk_data.decode_controller_epoch(found[0]))
        log.warning(
            "controller: epoch %d was superseded (now %d); resigning",
            self.context.epoch,
            self.context.highest_seen_epoch,
        )
        await self.cache.refresh_controller()

    def _spawn(self, coroutine) -> None:
        self._tasks.spawn(coroutine)

    def schedule_event(self, work: Callable[[], Awaitable]) -> None:
        """Run `work()` later as one controller event, if this broker still controls then;
        for watches, which fire on ZooKeeper's schedule."""
        if not self.stopped and self.is_active:
            self._spawn(self.run_event(work))

    async def _probe(self, point: str) -> None:
        if self.probes is not None:
            await self.probes.reached("controller", point)

    async def stop(self) -> None:
        self.stopped = True
        if self._rebalancer is not None:
            self._rebalancer.cancel()
        self._tasks.cancel_all()
        await self.channel.stop()

    def _controller_changed(self) -> None:
        """/controller was re-read: vacant means an election; another id means we resigned."""
        if self.stopped or not self.registered:
            return
        if self.cache.controller_id == -1:
            self._spawn(self.elect())
        elif self.cache.controller_id != self.broker_id:
            self.channel.clear()

    async def elect(self) -> bool:
        """Try to become controller: /controller (ephemeral) and a bumped /controller_epoch."""
        self.registered = True
        payload = zk_data.controller_registration(self.broker_id, _now_ms())
        try:
            await self.zk.create_json(zk_data.CONTROLLER, payload, ephemeral=True)
        except NodeExistsError:
            await self.cache.refresh_controller()
            return self.is_active
        found = await self.zk.get(zk_data.CONTROLLER_EPOCH)
        context = self.context
        if found is None:
            context.epoch = 1
            await self.zk.create_raw(zk_data.CONTROLLER_EPOCH, zk_data.encode_controller_epoch(1))
            context.epoch_zk_version = 0
        else:
            context.epoch = zk_data.decode_controller_epoch(found[0]) + 1
            context.epoch_zk_version = await self.zk.set_raw(
                zk_data.CONTROLLER_EPOCH, zk_data.encode_controller_epoch(context.epoch), found[1]
            )
        context.observe_epoch(context.epoch)
        await self.cache.refresh_controller()
        log.info("broker %d is the controller, epoch %d", self.broker_id, context.epoch)
        if (
            self.config is not None
            and self.config.replication.auto_leader_rebalance_enable
            and self._rebalancer is None
        ):
            self._rebalancer = asyncio.get_running_loop().create_task(
                self._rebalance_periodically(
                    self.config.replication.leader_imbalance_check_interval_seconds
                )
            )
        await self.elect_missing_leaders()
        await self.process_pending_deletions()
        await self.on_failover()
        try:
            await self.run_event(self.reassignments.resume)
        except Exception:  # noqa: BLE001 - resumed again by the next controller event
            log.exception("controller: resuming partition reassignments failed")
        return self.is_active

    async def run_event(self, work: Callable[[], Awaitable]):
        """`work()` as one controller event (NOT_CONTROLLER unless this broker is it)."""
        async with self._events:
            if not self.is_active:
                raise KafkaError(ErrorCode.not_controller)
            return await work()

    # Assignment -------------------------------------------------------------------------
    def assign_replicas(
        self, partitions: int, replication_factor: int, first_partition: int = 0
    ) -> dict[int, list[int]]:
        """Replicas for new partitions, spread over the live brokers (and their racks)."""
        racks = {b: info.rack for b, info in self.cache.brokers.items()} or {self.broker_id: None}
        return assign_replicas(racks, partitions, replication_factor, first_partition)

    # Topics -----------------------------------------------------------------------------
    async def create_topic(
        self, name: str, assignment: Mapping[int, Sequence[int]], configs: Mapping[str, str]
    ) -> TopicInfo | None:
        """Config first, then the assignment (what other brokers watch), then the states;
        the topic as cached (None if it was deleted meanwhile)."""
        if await self.zk.exists(zk_data.topic_path(name)):
            raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        if await self.zk.exists(zk_data.delete_topic_path(name)):
            # Its deletion is not finished: a topic made now would be taken by it.
            raise KafkaError(
                ErrorCode.topic_already_exists, f'Topic "{name}" is marked for deletion.'
            )
        topic_id = zk_data.new_kafka_uuid()
        await self.zk.upsert_json(zk_data.topic_config_path(name), zk_data.entity_config(configs))
        # Its states are written just below: the watch on /brokers/topics that sees the new
        # topic first must not have them written a second time (elect_missing_leaders).
        self._creating.add(name)
        try:
            try:
                await self.zk.create_json(
                    zk_data.topic_path(name), zk_data.topic_assignment(topic_id, assignment)
                )
            except NodeExistsError:
                raise KafkaError(
                    ErrorCode.topic_already_exists, f"Topic '{name}' already exists."
                ) from None
            await self._create_states(name, assignment)
        finally:
            self._creating.discard(name)
        return await self._await_states(name, assignment, topic_id=topic_id)

    async def create_partitions(self, info: TopicInfo, assignment: Mapping[int, Sequence[int]]):
        combined = {**info.assignment, **{p: list(r) for p, r in assignment.items()}}
        found = await self.zk.get_json(zk_data.topic_path(info.name))
        if found is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition)
        data, version = found
        data["partitions"] = {str(p): list(r) for p, r in sorted(combined.items())}
        await self.zk.set_json(zk_data.topic_path(info.name), data, version)
        await self._create_states(info.name, assignment)
        return await self._await_states(info.name, assignment, topic_id=info.topic_id)

    async def _await_states(
        self,
        name: str,
        partitions: Mapping[int, object],
        timeout: float = STATES_WAIT_S,
        topic_id: str | None = None,
    ) -> TopicInfo | None:
        """The topic as this broker's cache sees it once the controller has written the new
        partitions' states (at once when this broker is the controller), or at the bound:
        clients then see LEADER_NOT_AVAILABLE for a moment and retry, as with Kafka. None
        when it was deleted meanwhile (its creation did happen)."""

        def incomplete(info: TopicInfo) -> bool:
            # Both the assignment (Metadata lists partitions from it) and the states.
            return any(p not in info.states or p not in info.assignment for p in partitions)

        info = self.cache.topic(name)
        if info is None or (topic_id is not None and info.topic_id != topic_id) or incomplete(info):
            info = await self.cache.refresh_topic(name)  # else the controller's own writes
        deadline = time.monotonic() + timeout
        while info is not None and incomplete(info):
            if time.monotonic() >= deadline:
                log.warning("no partition states for %s after %.0f s", name, timeout)
                break
            await asyncio.sleep(0.02)
            info = self.cache.topic(name) or await self.cache.refresh_topic(name)
        return info

    async def _create_states(self, name: str, assignment: Mapping[int, Sequence[int]]) -> None:
        """First states of new partitions; the controller's job (the others wait for it).
        One event, written under the topic znode only while it exists: a deletion that got
        there first must not find a half-recreated topic left behind. Pipelined as Kafka's
        controller does: the partition znodes in one batch, the fenced states in another,
        whatever the number of partitions."""
        async with self._events:
            if not self.is_active:
                return
            live = set(self.cache.brokers) | {self.broker_id}
            if not await self._create_child(zk_data.partitions_path(name)):
                return
            partitions = sorted(assignment)
            parents = await self.zk.create_many(
                [(f"{zk_data.partitions_path(name)}/{p}", b"") for p in partitions]
            )
            if any(isinstance(error, NoNodeError) for error in parents):
                log.info("controller: topic %s was deleted meanwhile", name)
                return
            states = []
            for partition in partitions:
                isr = [r for r in assignment[partition] if r in live]
                state = PartitionState(
                    leader=isr[0] if isr else -1,
                    leader_epoch=0,
                    isr=isr,
                    controller_epoch=self.context.epoch,
                    zk_version=0,
                )
                states.append((zk_data.partition_state_path(name, partition), state))
            try:
                created = await self.zk.fenced_create_many(
                    [(path, zk_data.encode(state.to_json())) for path, state in states],
                    self.context.fence,
                )
            except ControllerMovedError:
                await self.resign_superseded()
                return
            # What was written is known: the cache takes it without reading it back.
            for partition, (_path, state), error in zip(partitions, states, created, strict=True):
                if error is None:
                    self.cache.merge_state(name, partition, state)

    async def _create_child(self, path: str) -> bool:
        """Create `path` if missing; False when its parent is gone (the topic was deleted)."""
        try:
            await self.zk.transaction([("create", path, None)])
        except NodeExistsError:
            pass
        except NoNodeError:
            log.info("controller: %s was deleted meanwhile", path.rsplit("/", 1)[0])
            return False
        return True

    async def elect_missing_leaders(self) -> None:
        """Topics written by other tools (only /brokers/topics/<t>) get partition states."""
        for info in list(self.cache.topics.values()):
            if info.name in self._creating:
                continue  # create_topic writes them
            missing = {p: r for p, r in info.assignment.items() if p not in info.states}
            if missing and not info.marked_for_deletion:
                await self._create_states(info.name, missing)
                await self.cache.refresh_topic(info.name)

    async def alter_topic_config(self, name: str, configs: Mapping[str, str]) -> None:
        await self.zk.upsert_json(zk_data.topic_config_path(name), zk_data.entity_config(configs))
        await self._notify_config_change(f"topics/{name}")
        await self.cache.refresh_topic(name)

    async def alter_broker_config(self, entity: str, configs: Mapping[str, str]) -> None:
        await self.zk.upsert_json(
            zk_data.broker_config_path(entity), zk_data.entity_config(configs)
        )
        await self._notify_config_change(f"brokers/{entity}")

    async def _notify_config_change(self, entity_path: str) -> None:
        await self.zk.create_json(
            f"{zk_data.CONFIG_CHANGES}/{zk_data.CONFIG_CHANGE_PREFIX}",
            zk_data.config_change_notification(entity_path),
            sequence=True,
        )

    # Deletion ---------------------------------------------------------------------------
    async def delete_topic(self, name: str) -> None:
        """Mark for deletion (/admin/delete_topics/<t>), then carry it out as controller."""
        try:
            await self.zk.create_json(zk_data.delete_topic_path(name), {})
        except NodeExistsError:
            pass
        if self.is_active:
            await self._delete_marked(name)

    async def process_pending_deletions(self) -> None:
        for name in await self.zk.children(zk_data.DELETE_TOPICS):
            await self._delete_marked(name)

    async def _delete_marked(self, name: str) -> None:
        """One deletion event; the marker's absence means another event carried it out."""
        async with self._events:
            if self.is_active and await self.zk.exists(zk_data.delete_topic_path(name)):
                await self.deletions.delete(name)

    def _forget_topic(self, name: str) -> None:
        self.announced = {(t, p) for t, p in self.announced if t != name}
        self.reassignments.forget_topic(name)

    # Failover and broker changes ----------------------------------------------------------
    async def on_failover(self) -> None:
        """A new controller: rebuild from ZooKeeper, elect leaders for partitions whose
        leader is gone, and tell every live broker the state of its partitions."""
        async with self._events:
            # As Kafka's onControllerFailover: the ISR notifications watched and those already
            # there deleted before the states are read, so a leader's ISR change is either in
            # that read or fires the watch (watched after the read, one written in between
            # was never announced: brokers' Metadata kept the old ISR).
            pending = await self.zk.children(
                zk_data.ISR_CHANGE_NOTIFICATION, watch=self._isr_changed
            )
            await self.zk.delete_many(
                [f"{zk_data.ISR_CHANGE_NOTIFICATION}/{child}" for child in pending]
            )
            await self.cache.refresh_topics()
            self.context.live = await self._read_live_brokers()
            await self._probe("failover")
            await self.partitions.elect_offline(set(self.context.live))
            everything = self.partitions.all_partitions()
            self.partitions.send_leader_and_isr(set(self.context.live), everything)
            self.partitions.send_update_metadata(set(self.context.live), everything)
            self.announced = set(everything)
            await self.log_dir_failures.on_notifications(self._log_dir_event)

    async def _read_live_brokers(self) -> dict[int, int]:
        """Registered broker ids and their registrations' czxids. /brokers/ids is watched by
        the very read that lists it: a broker registering after the read fires the watch,
        even one registering while a new controller is still taking office."""
        ids = [
            int(child)
            for child in await self.zk.children(zk_data.BROKER_IDS, watch=self._brokers_changed)
        ]
        stats = await self.zk.exists_many([zk_data.broker_path(b) for b in ids])
        return {b: stat.czxid for b, stat in zip(ids, stats, strict=True) if stat is not None}

    def _brokers_changed(self, *_: object) -> None:
        if not self.stopped and self.is_active:
            self._spawn(self.on_brokers_changed())

    async def on_brokers_changed(self) -> None:
        async with self._events:
            if not self.is_active:
                return
            now = await self._read_live_brokers()
            dead = {b for b, z in self.context.live.items() if now.get(b) != z}
            new = {b for b, z in now.items() if self.context.live.get(b) != z}
            self.context.live = now
            self.context.shutting_down -= dead | new
            self.log_dir_failures.brokers_changed(dead | new)
            await self.cache.refresh_brokers()
            if dead:
                # A broker registered again under a new czxid (restarted before this
                # controller looked) has bounced: as Kafka does, it is handled as gone,
                # then as new. Its partitions get leaders from the rest of the ISR and it
                # leaves the ISRs, so it never leads again at the epoch it led before
                # (with whatever it lost meanwhile), and it returns as a follower.
                bounced = dead & new
                if bounced:
                    log.info("controller: brokers %s registered again", sorted(bounced))
                log.info("controller: brokers %s are gone", sorted(dead))
                self.channel.remove(dead)
                survivors = set(now) - bounced
                changed = await self.partitions.elect_offline(survivors, dead)
                self.partitions.send_leader_and_isr(survivors, changed)
                self.partitions.send_update_metadata(survivors, changed)
            if new:
                log.info("controller: brokers %s joined", sorted(new))
                changed = await self.partitions.elect_offline(set(now))
                self.partitions.send_leader_and_isr(set(now), changed)
                theirs = [
                    (t, p)
                    for t, p in self.partitions.all_partitions()
                    if any(b in new for b in self.cache.topics[t].assignment.get(p, []))
                ]
                self.partitions.send_leader_and_isr(new, theirs)
                self.partitions.send_update_metadata(set(now) - new, changed)
                self.partitions.send_update_metadata(new, self.partitions.all_partitions())
                self.reassignments.brokers_joined(new)

    # Failed log dirs ----------------------------------------------------------------------
    def _log_dir_event(self, *_: object) -> None:
        if not self.stopped and self.is_active:
            self._spawn(self.on_log_dir_event())

    async def on_log_dir_event(self) -> None:
        async with self._events:
            if self.is_active:
                await self.log_dir_failures.on_notifications(self._log_dir_event)

    def _replicas_offline(self, broker: int, keys: list[tuple[str, int]]) -> None:
        if not self.stopped and self.is_active:
            self._spawn(self._on_replicas_offline(broker, keys))

    async def _on_replicas_offline(self, broker: int, keys: list[tuple[str, int]]) -> None:
        async with self._events:
            if self.is_active:
                await self.log_dir_failures.replicas_offline(broker, keys)

    # ISR change notifications -----------------------------------------------------------
    def _isr_changed(self, *_: object) -> None:
        if not self.stopped and self.is_active:
            self._spawn(self.on_isr_changed())

    async def on_isr_changed(self) -> None:
        async with self._events:
            if not self.is_active:
                return
            children = await self.zk.children(
                zk_data.ISR_CHANGE_NOTIFICATION, watch=self._isr_changed
            )
            # Notifications and then the states they name, a batch each (Kafka's
            # processIsrChangeNotification reads them with the async API too).
            paths = [f"{zk_data.ISR_CHANGE_NOTIFICATION}/{child}" for child in children]
            changed = set()
            for found in await self.zk.get_json_many(paths):
                changed |= zk_data.parse_isr_change_notification(found[0] if found else None)
            await self.zk.delete_many(paths)
            keys = sorted(changed)
            states = await self.zk.get_json_many(
                [zk_data.partition_state_path(topic, index) for topic, index in keys]
            )
            for (topic, index), found in zip(keys, states, strict=True):
                info = self.cache.topic(topic)
                if found is not None and info is not None:
                    info.states[index] = PartitionState.from_json(*found)
            if changed:
                self.partitions.send_update_metadata(set(self.context.live), sorted(changed))
                await self.reassignments.isr_changed(sorted(changed))

    # New topics ---------------------------------------------------------------------------
    async def on_topics_changed(self) -> None:
        """Partitions not yet announced (new topics, new partitions): LeaderAndIsr to their
        replicas, UpdateMetadata to every broker (as Kafka's onNewPartitionCreation does)."""
        async with self._events:
            if not self.is_active:
                return
            fresh = [
                (t, p)
                for t, p in self.partitions.all_partitions()
                if (t, p) not in self.announced
                and p in self.cache.topics[t].states
                and not self.cache.topics[t].marked_for_deletion
            ]  # a partition whose state is still being written is announced next time
            self.announced.update(fresh)
            if fresh:
                self.partitions.send_leader_and_isr(set(self.context.live), fresh)
                self.partitions.send_update_metadata(set(self.context.live), fresh)

    # Controlled shutdown ------------------------------------------------------------------
    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[ErrorCode, list[tuple[str, int]]]:
        """Move leadership off a stopping broker and drop it from ISRs; the partitions it
        still leads (none once the new leaders are chosen) come back for a retry."""
        async with self._events:
            if not self.is_active:
                return ErrorCode.not_controller, []
            if broker_id not in self.context.live:
                return ErrorCode.broker_not_available, []
            if broker_epoch >= 0 and broker_epoch != self.context.live[broker_id]:
                return ErrorCode.stale_broker_epoch, []
            self.context.shutting_down.add(broker_id)
            return ErrorCode.none, await self.partitions.move_leadership_off(broker_id)

    # Leader elections on demand (ElectLeaders) and preferred-leader rebalancing ------------
    async def elect_leaders(
        self, election_type: int, partitions: list[tuple[str, int]] | None
    ) -> dict[tuple[str, int], ErrorCode]:
        """Per partition: NONE when a new leader was written, else why not."""
        async with self._events:
            if not self.is_active:
                raise KafkaError(ErrorCode.not_controller)
            return await self.partitions.elect_leaders(election_type, partitions)

    def imbalanced_partitions(self) -> list[tuple[str, int]]:
        """Partitions to hand back to their preferred leader (none while replicas move)."""
        threshold = (
            self.config.replication.leader_imbalance_per_broker_percentage if self.config else 10
        )
        if self.reassignments.ongoing:
            return []  # as Kafka: no automatic rebalance while replicas move
        return self.partitions.imbalanced_partitions(threshold)

    async def _rebalance_periodically(self, interval: float) -> None:
        while not self.stopped:
            await asyncio.sleep(min(interval, 1 << 31))
            if not self.is_active:
                continue
            try:
                imbalanced = self.imbalanced_partitions()
                if imbalanced:
                    log.info("controller: preferred leader election for %s", imbalanced)
                    await self.elect_leaders(election.PREFERRED, imbalanced)
            except Exception:
                log.exception("automatic preferred leader election failed")


def _now_ms() -> int:
    return int(time.time() * 1000)
