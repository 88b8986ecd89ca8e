"""The replicas this broker holds, over the log manager: leaders, followers, the ISR.

Roles come from the controller (LeaderAndIsr); a partition that is brand new (epoch 0, no
local log yet) is also taken straight from its state znode so a topic is usable as soon as
it is created. Leaders shrink the ISR after replica.lag.time.max.ms and grow it when a
follower catches up, with conditional writes of the state znode (a leader the controller has
replaced fails that write and cannot shrink the ISR to itself) and an
/isr_change_notification for the controller; the changes gathered meanwhile go together, one
pipelined batch of writes and one notification, whatever their number. acks=all produces wait in the produce
purgatory until the high watermark covers them.

A partition's directory is created only while ZooKeeper holds its topic with no deletion
pending (topic_liveness), and creation and deletion are serialised, so a stale event never
re-creates a deleted partition. Deletion renames the directory `-delete` and removes it in
the background after file.delete.delay.ms; stray directories found at start-up go the same
way (strays.py).

As Kafka's ReplicaManager, it is given its peers (the log manager, the metadata cache, the
ZooKeeper client) and plain settings, and never reaches back into the broker.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import BadVersionError

from brokerd.config import LogConfig, ReplicationConfig
from brokerd.coordination import zk_data
from brokerd.coordination.topic_liveness import topic_is_live
from brokerd.coordination.zk_data import PartitionState
from brokerd.log.checkpoints import sync_filesystems
from brokerd.log.errors import LogError
from brokerd.protocol.errors import ErrorCode, KafkaError
from brokerd.util.background import BackgroundTasks

from .fetcher import ReplicaFetcherManager, SecurityFor
from .partition import NO_LEADER, Partition, isr_check_delay_ms, now_ms
from .purgatory import FetchPurgatory, ProducePurgatory
from .stats import NoStats, ReplicationStats
from .strays import find_strays

if TYPE_CHECKING:
    from brokerd.config import Endpoint
    from brokerd.coordination.metadata import MetadataCache
    from brokerd.coordination.zk_client import ZkClient
    from brokerd.coordination.zk_data import BrokerInfo
    from brokerd.log.log import AppendInfo, Log
    from brokerd.log.manager import LogManager

log = logging.getLogger(__name__)


class ReplicaManager:
    def __init__(
        self,
        local_id: int,
        log_manager: LogManager,
        metadata: MetadataCache,
        zk: ZkClient,
        settings: ReplicationConfig,
        *,
        inter_broker_listener_name: str,
        retention_check_interval_ms: int,
        offset_checkpoint_interval_ms: int,
        topic_log_config: Callable[[str], LogConfig],
        default_log_config: Callable[[], LogConfig],
        security_for: SecurityFor,
        spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task],
        stats: ReplicationStats | None = None,
    ):
        """The intervals are log.retention.check.interval.ms and
        log.flush.offset.checkpoint.interval.ms. `topic_log_config` resolves a topic's
        LogConfig from its current overrides and `default_log_config` the broker's (both
        change at run time); `security_for` says how to connect to a peer's endpoint;
        `spawn` runs the broker's background work (ISR writes to ZooKeeper); `stats` counts
        appends and replicated bytes (Kafka's BrokerTopicStats)."""
        self.local_id = local_id
        self.log_manager = log_manager
        self.metadata = metadata
        self.zk = zk
        self.settings = settings
        self.inter_broker_listener_name = inter_broker_listener_name
        self._retention_check_interval_ms = retention_check_interval_ms
        self._offset_checkpoint_interval_ms = offset_checkpoint_interval_ms
        self.topic_log_config = topic_log_config
        self._default_log_config = default_log_config
        self._spawn = spawn
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.leaders: dict[tuple[str, int], Partition] = {}
        # callables(gained, lost) with (topic, partition) keys: the group coordinator loads
        # and unloads __consumer_offsets partitions as leadership moves.
        self.leadership_listeners: list = []
        self.purgatory = FetchPurgatory()
        self.produce_purgatory = ProducePurgatory()
        self.stats: ReplicationStats = stats if stats is not None else NoStats()
        # A follower's failed write takes its log dir offline at once (fail_dir, on the
        # fetcher's worker thread), as a leader's failed append does.
        self.fetchers = ReplicaFetcherManager(
            local_id,
            settings,
            self._peer_endpoint,
            security_for,
            log_manager.fail_dir,
            replicated_in=self.stats.replicated_in,
        )
        self.controller_epoch = 0  # the highest seen; older controllers are refused
        # callables(expand: bool) after this broker changed a led partition's ISR.
        self.isr_change_listeners: list[Callable[[bool], None]] = []
        # ISR changes waiting for the next batch write, and the task writing them.
        self._isr_queue: dict[tuple[str, int], _IsrChange] = {}
        self._isr_writer: asyncio.Task | None = None
        self._maintenance: list[asyncio.Task] = []
        # Role changes and deletions are serialized: two at once would each load the same
        # new partition directory (two Log objects, two writers on one segment), or delete
        # a directory while it is being made.
        self._sync_lock = asyncio.Lock()
        # Partitions (with a state) sync_leadership has looked at; None before its first look.
        self._looked_at: set[tuple[str, int]] | None = None
        self._removals = BackgroundTasks(log, "removing a deleted partition directory failed")
        # Called once every log dir has failed (Kafka halts the broker: it serves nothing).
        self.halt: Callable[[], object] = lambda: os._exit(1)

    # Lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        """After the log manager has loaded the logs: leftover deletions, then the periodic
        retention, checkpoints and ISR checks."""
        loop = asyncio.get_running_loop()
        self.log_manager.dir_failure_listeners.append(
            lambda directory, reason: loop.call_soon_threadsafe(
                self._spawn, self._on_log_dir_failure(directory)
            )
        )
        await self._delete_leftovers()
        self._maintenance = [
            asyncio.create_task(self._every(self._retention_check_interval_ms, self._retention)),
            asyncio.create_task(
                self._every(self._offset_checkpoint_interval_ms, self.log_manager.checkpoint)
            ),
            # replica.high.watermark.checkpoint.interval.ms (Kafka's 5 s): a partition the
            # checkpoint lacks restarts at high watermark 0 (LogManager startup).
            asyncio.create_task(
                self._every(
                    self.settings.replica_high_watermark_checkpoint_interval_ms,
                    self.log_manager.checkpoint_high_watermarks,
                )
            ),
            asyncio.create_task(self._isr_maintenance()),
        ]

    async def _delete_leftovers(self) -> None:
        """`-delete` directories of unfinished deletions, and stray partitions."""
        manager = self.log_manager
        for doomed in manager.dirs_to_delete:
            self._remove_later(doomed)
        manager.dirs_to_delete.clear()
        strays = find_strays(
            [*manager.logs, *manager.offline_partitions], self.metadata.topics, self.local_id
        )
        for (topic, index), reason in sorted(strays.items()):
            directory = manager.partition_dir(topic, index)
            if directory is None or directory.parent not in manager.cluster_confirmed:
                log.warning(
                    "stray partition %s-%d kept (%s): its log dir's meta.properties did not "
                    "name this cluster before",
                    topic,
                    index,
                    reason,
                )
                continue
            log.warning("deleting stray partition %s-%d: %s", topic, index, reason)
            self._remove_later(await asyncio.to_thread(manager.begin_delete, topic, index))

    def _remove_later(self, doomed: Path | None) -> None:
        """Remove a renamed directory after file.delete.delay.ms (readers may still hold its
        files), off the event loop; a shutdown first leaves it to the next start-up."""
        if doomed is None:
            return
        delay_ms = self._default_log_config().file_delete_delay_ms
        self._removals.spawn(self._remove_after(doomed, min(delay_ms, 1 << 31) / 1000))

    async def _remove_after(self, doomed: Path, delay: float) -> None:
        await asyncio.sleep(delay)
        await asyncio.to_thread(self.log_manager.remove_dir, doomed)

    async def shutdown(self) -> None:
        """Stop fetching and the periodic work; the log manager, not ours, closes after."""
        self._removals.cancel_all()
        for task in self._maintenance:
            task.cancel()
        await self.fetchers.shutdown()
        self.wake_all_waiters()

    async def _every(self, interval_ms: int, work) -> None:
        interval = min(interval_ms, 1 << 31) / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await asyncio.to_thread(work)
            except Exception:
                log.exception("periodic log maintenance failed")

    def _retention(self) -> None:
        self.log_manager.run_retention()
        self.log_manager.remove_deleted_segments()

    def wake_all_waiters(self) -> None:
        self.purgatory.wake_all()
        self.produce_purgatory.wake_all()

    # Configs --------------------------------------------------------------------------
    def refresh_topic_config(self, topic: str) -> None:
        self.log_manager.update_config(topic, self.topic_log_config(topic))

    def refresh_all_configs(self) -> None:
        for topic in {t for t, _ in self.partitions}:
            self.refresh_topic_config(topic)

    def inter_broker_endpoint(self, info: BrokerInfo) -> Endpoint | None:
        """The peer's endpoint on the inter-broker listener (None without one, as Kafka):
        any other listener refuses inter-broker requests."""
        return info.endpoint(self.inter_broker_listener_name)

    def _peer_endpoint(self, broker_id: int) -> Endpoint | None:
        info = self.metadata.brokers.get(broker_id)
        if info is None or not info.endpoints:
            return None
        return self.inter_broker_endpoint(info)

    # Roles from the controller --------------------------------------------------------
    async def become_leader_or_follower(
        self,
        controller_id: int,
        controller_epoch: int,
        states: Sequence[tuple[str, int, PartitionState, list[int]]],
    ) -> dict[tuple[str, int], ErrorCode]:
        """Apply LeaderAndIsr: per partition, the error code of its answer."""
        async with self._sync_lock:
            if controller_epoch < self.controller_epoch:
                raise KafkaError(
                    ErrorCode.stale_controller_epoch,
                    f"controller {controller_id} epoch {controller_epoch} is older than "
                    f"{self.controller_epoch}",
                )
            self.controller_epoch = controller_epoch
            gained: set = set()
            lost: set = set()
            results = await self._apply_many(states, gained, lost, {})
            self._notify_leadership(gained, lost)
            return results

    async def _apply_many(
        self,
        entries: Sequence[tuple[str, int, PartitionState, list[int]]],
        gained: set,
        lost: set,
        live: dict[str, bool],
        topic_ids: dict[str, str] | None = None,
    ) -> dict[tuple[str, int], ErrorCode]:
        """New roles for many partitions (one LeaderAndIsr, or the partitions of new
        topics): per partition, the error code of its answer. The checks run on the loop;
        the file work (logs to create, leader epochs to record with their fsync) runs as
        one worker-thread step per kind over a bounded pool, never one thread hop per
        partition in series. `live` caches, per topic, whether ZooKeeper lets a new
        directory be made (asked only when this broker has none for a partition)."""
        results: dict[tuple[str, int], ErrorCode] = {}
        admitted: list[tuple[str, int, PartitionState, list[int]]] = []
        for topic, index, state, replicas in entries:
            try:
                refused = await self._refusal(
                    topic, index, state, replicas, live, (topic_ids or {}).get(topic)
                )
            except Exception as exc:  # noqa: BLE001 - this partition's answer
                results[(topic, index)] = self._failed(topic, index, exc)
                continue
            if refused is not None:
                results[(topic, index)] = refused
            else:
                self.cache_partition_state(topic, index, state)
                admitted.append((topic, index, state, replicas))
        # The logs this broker does not hold yet.
        new = list(dict.fromkeys((t, i) for t, i, *_ in admitted if (t, i) not in self.partitions))
        configs = {t: self.topic_log_config(t) for t in {t for t, _ in new}}  # once a topic
        made = await _each_off_loop(
            lambda t, i: self.log_manager.get_or_create_log(t, i, configs[t]), new
        )
        for (topic, index), outcome in zip(new, made, strict=True):
            if isinstance(outcome, Exception):
                results[(topic, index)] = self._failed(topic, index, outcome)
            else:
                self.partitions[(topic, index)] = Partition(topic, index, outcome, self.local_id)
        admitted = [a for a in admitted if (a[0], a[1]) not in results]
        # New leaders: no fetcher writes their logs any more, then each new epoch's start
        # goes to the fsynced leader-epoch checkpoint, on worker threads, so the first
        # append of the epoch finds it recorded. A new leader takes no appends yet (no
        # fetcher writes the log any more and no client can); a leader re-elected at a
        # higher epoch may still append at its old epoch meanwhile, and the log then
        # records where each really starts.
        starts = []
        for topic, index, state, _replicas in admitted:
            key = (topic, index)
            if state.leader == self.local_id:
                await self.fetchers.remove_partition(key)
                current = self.partitions[key]
                if state.leader_epoch >= 0 and (
                    key not in self.leaders or state.leader_epoch != current.leader_epoch
                ):
                    starts.append((current, state.leader_epoch))
        recorded = await self._record_epoch_starts(starts)
        for (partition, _epoch), outcome in zip(starts, recorded, strict=True):
            if isinstance(outcome, Exception):
                results[partition.key] = self._failed(partition.topic, partition.partition, outcome)
        for topic, index, state, replicas in admitted:
            key = (topic, index)
            if key in results:
                continue
            try:
                await self._take_role(self.partitions[key], state, replicas, gained, lost)
                results[key] = ErrorCode.none
            except Exception as exc:  # noqa: BLE001 - this partition's answer
                results[key] = self._failed(topic, index, exc)
        return results

    async def _record_epoch_starts(self, starts: list[tuple[Partition, int]]) -> list[Any]:
        """Each new leader's epoch start in its leader-epoch checkpoint, durable before any
        partition takes the role: written on worker threads without fsyncs, then one sync
        of each filesystem holding them (a failover makes thousands of leaders at once: two
        fsyncs each took seconds). A sync that fails fails every partition of the batch."""
        each_fsynced = len(starts) <= 1  # one leader (a client's election): as it is written
        recorded = await _each_off_loop(
            lambda p, epoch: p.log.assign_epoch_start(epoch, sync=each_fsynced), starts
        )
        if each_fsynced:
            return recorded
        log_dirs = {
            partition.log.dir.parent
            for (partition, _epoch), outcome in zip(starts, recorded, strict=True)
            if outcome is True
        }
        if log_dirs:
            try:
                await asyncio.to_thread(sync_filesystems, log_dirs)
            except OSError as exc:
                return [exc for _ in starts]
        return recorded

    @staticmethod
    def _failed(topic: str, index: int, exc: Exception) -> ErrorCode:
        code = ErrorCode(getattr(exc, "error_code", ErrorCode.kafka_storage_error))
        if code == ErrorCode.kafka_storage_error and isinstance(exc, LogError):
            # A replica on a failed log dir: the controller hears it from this answer.
            log.warning("LeaderAndIsr for %s-%d: %s", topic, index, exc)
        else:
            log.error("LeaderAndIsr for %s-%d failed", topic, index, exc_info=exc)
        return code

    async def _refusal(
        self,
        topic: str,
        index: int,
        state: PartitionState,
        replicas: list[int],
        live: dict[str, bool],
        topic_id: str | None,
    ) -> ErrorCode | None:
        """Why a partition's new state is not taken up (its answer), or None to take it."""
        current = self.partitions.get((topic, index))
        if current is not None and state.leader_epoch <= current.leader_epoch:
            if state.leader_epoch == current.leader_epoch and state.zk_version > current.zk_version:
                current.zk_version = state.zk_version  # the controller saw our ISR write
            return (
                ErrorCode.stale_controller_epoch
                if state.leader_epoch < current.leader_epoch
                else ErrorCode.none
            )
        if self.local_id not in replicas:
            return ErrorCode.unknown_topic_or_partition
        if current is None and self.log_manager.get_log(topic, index) is None:
            if topic not in live:
                live[topic] = await topic_is_live(self.zk, topic, topic_id)
                if not live[topic]:
                    log.info("no log made for %s: deleted or being deleted in ZooKeeper", topic)
            if not live[topic]:
                return ErrorCode.unknown_topic_or_partition
        return None

    async def _take_role(
        self,
        current: Partition,
        state: PartitionState,
        replicas: list[int],
        gained: set,
        lost: set,
    ) -> None:
        """Leader or follower at the new state (its log exists; a new leader's epoch start
        is recorded)."""
        key = current.key
        was_leader = current.is_leader
        if state.leader == self.local_id:
            current.make_leader(
                state.leader_epoch, state.isr, replicas, state.zk_version, state.controller_epoch
            )
            self.leaders[key] = current
            if not was_leader:
                gained.add(key)
            self._high_watermark_moved(current)
            log.info("leading %s at epoch %d, isr %s", key, state.leader_epoch, state.isr)
        else:
            self.leaders.pop(key, None)
            current.make_follower(
                state.leader,
                state.leader_epoch,
                state.isr,
                replicas,
                state.zk_version,
                state.controller_epoch,
            )
            if was_leader:
                lost.add(key)
            self.produce_purgatory.leadership_lost(key)
            self.purgatory.notify(key)
            if state.leader == NO_LEADER:
                await self.fetchers.remove_partition(key)
            else:
                await self.fetchers.add_partition(current, state.leader, state.leader_epoch)
            log.info("following %d for %s at epoch %d", state.leader, key, state.leader_epoch)

    def cache_partition_state(self, topic: str, index: int, state: PartitionState) -> None:
        """Put `state` in the metadata cache unless the cache holds a newer one (UpdateMetadata
        and LeaderAndIsr may arrive after this broker's own ISR write)."""
        info = self.metadata.topic(topic)
        if info is None:
            return
        cached = info.states.get(index)
        if cached is None or (state.leader_epoch, state.zk_version) >= (
            cached.leader_epoch,
            cached.zk_version,
        ):
            info.states[index] = state

    async def stop_replicas(
        self, controller_epoch: int, partitions: Sequence[tuple[str, int, bool]]
    ) -> None:
        async with self._sync_lock:
            if controller_epoch < self.controller_epoch:
                raise KafkaError(ErrorCode.stale_controller_epoch)
            self.controller_epoch = controller_epoch
            lost = set()
            doomed = []
            for topic, index, delete in partitions:
                key = (topic, index)
                await self.fetchers.remove_partition(key)
                if self.leaders.pop(key, None) is not None:
                    lost.add(key)
                self.produce_purgatory.leadership_lost(key)
                self.partitions.pop(key, None)
                if delete:
                    doomed.append((topic, index))
            self._begin_deletes(await _each_off_loop(self.log_manager.begin_delete, doomed))
            self._notify_leadership(set(), lost)

    # New partitions straight from ZooKeeper -------------------------------------------
    async def sync_leadership(self) -> None:
        """Take up partitions created since the last look (epoch 0, no local log yet).

        Anything else waits for the controller: a restarted broker must not lead from a
        state znode the controller is about to replace. So the first look (at start-up)
        takes up nothing: a partition already there with no local log may be one whose log
        this broker lost, and leading it at epoch 0 would hand its empty log to followers
        that truncate to it."""
        async with self._sync_lock:
            gained: set = set()
            lost: set = set()
            live: dict[str, bool] = {}
            looked_at = self._looked_at
            self._looked_at = seen = set()  # deleted topics drop out of it
            fresh: list[tuple[str, int, PartitionState, list[int]]] = []
            topic_ids: dict[str, str] = {}
            for info in list(self.metadata.topics.values()):
                if info.marked_for_deletion:
                    continue
                for index, state in list(info.states.items()):
                    replicas = info.assignment.get(index, [])
                    key = (info.name, index)
                    seen.add(key)
                    if (
                        looked_at is None
                        or key in looked_at
                        or key in self.partitions
                        or self.local_id not in replicas
                        or state.leader_epoch != 0
                        or self.log_manager.get_log(info.name, index) is not None
                    ):
                        continue
                    fresh.append((info.name, index, state, replicas))
                    topic_ids[info.name] = info.topic_id
            await self._apply_many(fresh, gained, lost, live, topic_ids)
            self._notify_leadership(gained, lost)

    def _notify_leadership(self, gained: set, lost: set) -> None:
        if not gained and not lost:
            return
        for listener in self.leadership_listeners:
            try:
                listener(gained, lost)
            except Exception:
                log.exception("leadership listener failed")

    async def delete_partitions(self, topic: str, partitions: Sequence[int]) -> None:
        """The controller's own replicas of a deleted topic (others get StopReplica)."""
        async with self._sync_lock:
            lost = set()
            for partition in partitions:
                key = (topic, partition)
                await self.fetchers.remove_partition(key)
                self.partitions.pop(key, None)
                if self.leaders.pop(key, None) is not None:
                    self.produce_purgatory.leadership_lost(key)
                    lost.add(key)
            self._notify_leadership(set(), lost)
            self._begin_deletes(
                await _each_off_loop(
                    self.log_manager.begin_delete, [(topic, p) for p in partitions]
                )
            )

    def _begin_deletes(self, outcomes: list) -> None:
        """Directories renamed for deletion (begin_delete's answers): removed later."""
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                log.error("renaming a deleted partition's directory failed", exc_info=outcome)
            else:
                self._remove_later(outcome)

    # A failed log dir ---------------------------------------------------------------------
    async def _on_log_dir_failure(self, directory: Path) -> None:
        """Kafka's ReplicaManager.handleLogDirFailure: the partitions on the dir the log
        manager took offline stop (fetchers, leadership: clients get KAFKA_STORAGE_ERROR,
        the replicas of other dirs go on), then the controller hears of it through
        /log_dir_event_notification and moves their leadership."""
        offline = self.log_manager.offline_partitions
        async with self._sync_lock:
            lost = set()
            stopped = [k for k in self.partitions if k in offline]
            for key in stopped:
                await self.fetchers.remove_partition(key)
                self.partitions.pop(key, None)
                if self.leaders.pop(key, None) is not None:
                    self.produce_purgatory.leadership_lost(key)
                    lost.add(key)
            self._notify_leadership(set(), lost)
        log.error("log dir %s is offline: partitions %s stopped", directory, sorted(stopped))
        if not self.log_manager.live_log_dirs():
            # Kafka's handleLogDirFailure: "Shutdown broker because all log dirs have failed"
            # (Exit.halt): its ZooKeeper session ends and the controller moves everything.
            log.critical("every log dir has failed (%s): halting the broker", directory)
            logging.shutdown()
            self.halt()
            return
        try:
            await self.zk.create_json(
                zk_data.LOG_DIR_EVENT_PREFIX,
                zk_data.log_dir_event_notification(self.local_id),
                sequence=True,
            )
        except Exception:
            log.warning("writing the log dir event notification failed", exc_info=True)

    # Lookups --------------------------------------------------------------------------
    def leader(self, topic: str, partition: int) -> Partition:
        """The led partition, or the error a client gets for it."""
        found = self.leaders.get((topic, partition))
        if found is not None:
            return found
        info = self.metadata.topic(topic)
        if info is None or partition not in info.assignment:
            raise KafkaError(ErrorCode.unknown_topic_or_partition)
        if (topic, partition) in self.log_manager.offline_partitions:
            raise KafkaError(ErrorCode.kafka_storage_error)
        raise KafkaError(ErrorCode.not_leader_or_follower)

    def local_log(self, topic: str, partition: int) -> Log | None:
        return self.log_manager.get_log(topic, partition)

    # Appends --------------------------------------------------------------------------
    def append(
        self, partition: Partition, records: bytes, acks: int, defer_flush: bool = False
    ) -> AppendInfo:
        """Append on the event loop. With defer_flush, a due fsync (flush.messages/flush.ms)
        is the caller's (`info.flush_needed`: run log.flush off the loop before acking).
        acks=all callers then wait with `wait_for_replication`."""
        if acks == -1:
            min_isr = partition.log.config.min_insync_replicas
            if len(partition.isr) < min_isr:
                raise KafkaError(
                    ErrorCode.not_enough_replicas,
                    f"ISR {partition.isr} is smaller than min.insync.replicas {min_isr}",
                )
        try:
            info = partition.log.append_as_leader(
                records, partition.leader_epoch, defer_flush=defer_flush
            )
        except OSError as exc:
            # The disk failed (Kafka's LogDirFailureChannel): the dir goes offline alone.
            directory = partition.log.dir.parent
            self._spawn(asyncio.to_thread(self.log_manager.fail_dir, directory, str(exc)))
            raise KafkaError(ErrorCode.kafka_storage_error, f"{directory}: {exc}") from exc
        # Kafka's BytesInPerSec and MessagesInPerSec, for appends of every origin.
        self.stats.appended(partition.topic, len(records), info.last_offset - info.first_offset + 1)
        self.purgatory.notify(partition.key)  # followers long-polling for data
        if partition.maybe_increment_high_watermark():
            self._high_watermark_moved(partition)
        return info

    def append_txn_marker(
        self,
        partition: Partition,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        transaction_version: int = 0,
    ) -> AppendInfo:
        """WriteTxnMarkers: a COMMIT or ABORT marker appended as leader with acks=all
        (Kafka's appendRecords with requiredAcks -1 from the coordinator): refused under
        min.insync.replicas; the caller flushes when due (`info.flush_needed`) and waits
        with `wait_for_replication`."""
        min_isr = partition.log.config.min_insync_replicas
        if len(partition.isr) < min_isr:
            raise KafkaError(
                ErrorCode.not_enough_replicas,
                f"ISR {partition.isr} is smaller than min.insync.replicas {min_isr}",
            )
        info = partition.log.append_end_txn_marker(
            producer_id,
            producer_epoch,
            coordinator_epoch,
            commit,
            partition.leader_epoch,
            defer_flush=True,
            transaction_version=transaction_version,
        )
        self.stats.appended(partition.topic, info.valid_bytes, 1)
        self.purgatory.notify(partition.key)
        if partition.maybe_increment_high_watermark():
            self._high_watermark_moved(partition)
        return info

    async def wait_for_replication(
        self, partition: Partition, required_offset: int, timeout: float
    ) -> ErrorCode:
        """acks=all: NONE once the HW reaches `required_offset` with the ISR still at
        min.insync.replicas; NOT_ENOUGH_REPLICAS_AFTER_APPEND if it shrank below it."""
        if partition.log.high_watermark < required_offset:
            code = await self.produce_purgatory.wait(partition.key, required_offset, timeout)
            if code != ErrorCode.none:
                return code
        if self.leaders.get(partition.key) is not partition:
            return ErrorCode.not_leader_or_follower
        if len(partition.isr) < partition.log.config.min_insync_replicas:
            return ErrorCode.not_enough_replicas_after_append
        return ErrorCode.none

    def _high_watermark_moved(self, partition: Partition) -> None:
        self.produce_purgatory.high_watermark_moved(partition.key, partition.log.high_watermark)
        self.purgatory.notify(partition.key)  # consumers waiting for data below the HW

    # Follower fetches (on the leader) -------------------------------------------------
    def record_follower_fetch(self, replica_id: int, partition: Partition, offset: int) -> None:
        if partition.update_follower_fetch(replica_id, offset, now_ms()):
            self._high_watermark_moved(partition)
        if replica_id not in partition.isr and replica_id in partition.catching_up_replicas():
            self._spawn_isr_change(partition, sorted({*partition.isr, replica_id}), expand=True)

    # ISR changes ----------------------------------------------------------------------
    async def _isr_maintenance(self) -> None:
        """Kafka's isr-expiration task (every half lag), also woken when the first ISR
        follower's lag runs out sooner: the same pass over the leaders finds that time."""
        delay_ms = isr_check_delay_ms(0, self.settings.replica_lag_time_max_ms, None)
        while True:
            await asyncio.sleep(delay_ms / 1000)
            lag_ms = self.settings.replica_lag_time_max_ms
            now = now_ms()
            next_expiry: int | None = None
            for partition in list(self.leaders.values()):
                try:
                    expiry = partition.next_isr_expiry_ms(now, lag_ms)
                    if expiry is not None and (next_expiry is None or expiry < next_expiry):
                        next_expiry = expiry
                    stale = partition.out_of_sync_replicas(now, lag_ms)
                    if stale:
                        shrunk = [r for r in partition.isr if r not in stale]
                        log.info(
                            "shrinking ISR of %s from %s to %s",
                            partition.key,
                            partition.isr,
                            shrunk,
                        )
                        self._spawn_isr_change(partition, shrunk, expand=False)
                except Exception:
                    log.exception("ISR check of %s failed", partition.key)
            delay_ms = isr_check_delay_ms(now, lag_ms, next_expiry)

    def _spawn_isr_change(self, partition: Partition, new_isr: list[int], expand: bool) -> None:
        """Queue an ISR change; the changes queued meanwhile go to ZooKeeper together (as
        Kafka's AlterIsrManager gathers them while a request is in flight): one pipelined
        batch of conditional writes and one /isr_change_notification for the lot, never a
        round trip per partition in series."""
        if partition.isr_change_pending:
            return
        partition.isr_change_pending = True
        self._isr_queue[partition.key] = _IsrChange(
            partition, list(new_isr), expand, partition.leader_epoch
        )
        if self._isr_writer is None or self._isr_writer.done():
            self._isr_writer = self._spawn(self._write_isr_changes())

    async def _write_isr_changes(self) -> None:
        """Write the queued ISR changes a batch at a time until none is left."""
        while self._isr_queue:
            batch, self._isr_queue = self._isr_queue, {}
            try:
                await self._write_isr_batch(list(batch.values()))
            except Exception:
                log.warning("ISR change of %d partitions failed", len(batch), exc_info=True)
            finally:
                for change in batch.values():
                    if self._isr_queue.get(change.partition.key) is None:
                        change.partition.isr_change_pending = False

    async def _write_isr_batch(self, changes: list[_IsrChange]) -> None:
        """Each state written conditionally on the znode version we were given; a leader
        that was replaced (version moved on) fails there and keeps its ISR, so it cannot
        ack acks=all writes the ISR does not have. A version clash is re-read (one batch)
        and written again while this broker still leads at that epoch."""
        pending: list[tuple[_IsrChange, PartitionState, int]] = []
        for change in changes:
            partition = change.partition
            if (
                self.leaders.get(partition.key) is not partition
                or partition.leader_epoch != change.leader_epoch
            ):
                continue  # a LeaderAndIsr came in between: its ISR stands
            state = PartitionState(
                leader=self.local_id,
                leader_epoch=change.leader_epoch,
                isr=change.new_isr,
                controller_epoch=partition.controller_epoch,
            )
            pending.append((change, state, partition.zk_version))
        done: list[tuple[_IsrChange, PartitionState]] = []
        # What was written is applied and announced even when a later round fails (a lost
        # session): ZooKeeper holds those ISRs now, and the leader must act on the same.
        try:
            for _attempt in range(ISR_WRITE_ATTEMPTS):
                if not pending:
                    break
                results = await self.zk.set_many(
                    [
                        (
                            zk_data.partition_state_path(c.partition.topic, c.partition.partition),
                            zk_data.encode(state.to_json()),
                            version,
                        )
                        for c, state, version in pending
                    ]
                )
                clashed = []
                for (change, state, _version), result in zip(pending, results, strict=True):
                    if isinstance(result, BadVersionError):
                        clashed.append((change, state))
                    elif not isinstance(result, Exception):  # NoNodeError: deleted meanwhile
                        state.zk_version = result
                        done.append((change, state))
                if not clashed:
                    break
                found = await self.zk.get_json_many(
                    [
                        zk_data.partition_state_path(c.partition.topic, c.partition.partition)
                        for c, _state in clashed
                    ]
                )
                pending = []
                for (change, state), current in zip(clashed, found, strict=True):
                    if current is None:
                        continue
                    now = PartitionState.from_json(*current)
                    # Against the epoch this ISR was computed at, not the partition's now: a
                    # LeaderAndIsr applied meanwhile must not let an ISR of its previous epoch
                    # (and that epoch number) overwrite the controller's newer state.
                    if now.leader != self.local_id or now.leader_epoch != state.leader_epoch:
                        log.info("ISR change of %s refused: the controller moved on", change.key)
                        continue
                    pending.append((change, state, now.zk_version))
        finally:
            await self._apply_written_isrs(done)

    async def _apply_written_isrs(self, done: list[tuple[_IsrChange, PartitionState]]) -> None:
        # Every state written is announced, applied here or not: one written just before a
        # LeaderAndIsr replaced this leader is ZooKeeper's state now, and the controller
        # acts on ISR changes it hears of (a reassignment completes when its targets join).
        changed: list[tuple[str, int]] = [change.partition.key for change, _state in done]
        for change, state in done:
            partition = change.partition
            if self.leaders.get(partition.key) is not partition:
                continue
            if partition.leader_epoch != state.leader_epoch:
                continue
            partition.isr = list(state.isr)
            partition.zk_version = state.zk_version
            self.cache_partition_state(partition.topic, partition.partition, state)
            for listener in self.isr_change_listeners:
                listener(change.expand)
            if partition.maybe_increment_high_watermark():
                self._high_watermark_moved(partition)
        if changed:
            # One notification per batch (Kafka's propagateIsrChanges writes every changed
            # partition into one sequential znode), split to stay far below jute.maxbuffer.
            await self.zk.create_sequential_many(
                zk_data.ISR_CHANGE_PREFIX,
                [
                    zk_data.encode(zk_data.isr_change_notification(changed[i : i + step]))
                    for step in (ISR_NOTIFICATION_PARTITIONS,)
                    for i in range(0, len(changed), step)
                ],
            )


# Rounds of an ISR batch's conditional writes (a clash is re-read and written again).
ISR_WRITE_ATTEMPTS = 5
# Partitions named by one /isr_change_notification znode (about 50 bytes each).
ISR_NOTIFICATION_PARTITIONS = 2000


@dataclass
class _IsrChange:
    """An ISR change queued for the next batch, computed at `leader_epoch`."""

    partition: Partition
    new_isr: list[int]
    expand: bool
    leader_epoch: int

    @property
    def key(self) -> tuple[str, int]:
        return self.partition.key


# Worker threads for one batch of file work from the controller (logs to create, leader
# epochs to record, directories to rename): fsync-bound, so a few run at once.
BATCH_THREADS = 4


async def _each_off_loop(work: Callable[..., Any], items: Sequence[tuple]) -> list[Any]:
    """`work(*item)` for every item, on a bounded pool of worker threads reached with one
    thread hop; per item its result or the Exception it raised."""
    if not items:
        return []

    def one(item: tuple) -> Any:
        try:
            return work(*item)
        except Exception as exc:  # noqa: BLE001 - the item's outcome
            return exc

    def run_all() -> list[Any]:
        if len(items) == 1:
            return [one(items[0])]
        workers = min(BATCH_THREADS, len(items))
        with ThreadPoolExecutor(workers, thread_name_prefix="replica-batch") as pool:
            return list(pool.map(one, items))

    return await asyncio.to_thread(run_all)
