"""The partitions this broker leads, over the log manager (single-broker increment).

A partition is served when its state znode names this broker leader; the leader epoch
from that znode stamps produced batches. With the ISR being the leader alone, the high
watermark follows the log end offset. The replication issue moves this into
brokerd/replication/ (followers, ISR changes, acks=all waits); handlers keep this API.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from brokerd.config import LogConfig
from brokerd.protocol.errors import ErrorCode, KafkaError

from .purgatory import FetchPurgatory

if TYPE_CHECKING:
    from brokerd.log.log import AppendInfo, Log

    from .broker import Broker

log = logging.getLogger(__name__)


@dataclass
class LeaderPartition:
    topic: str
    partition: int
    log: Log
    leader_epoch: int
    isr: list[int]


class ReplicaManager:
    def __init__(self, broker: Broker):
        self.broker = broker
        self.leaders: dict[tuple[str, int], LeaderPartition] = {}
        # callables(gained, lost) with (topic, partition) keys: the group coordinator loads
        # and unloads __consumer_offsets partitions as leadership moves.
        self.leadership_listeners: list = []
        self.purgatory = FetchPurgatory()
        self.log_manager = None
        self.cleaner = None  # LogCleanerManager, when log.cleaner.enable
        self._cleaner_thread = None
        self._maintenance: list[asyncio.Task] = []
        # Topic creation and ZooKeeper watches both sync; two at once would each load the
        # same new partition directory (two Log objects, two writers on one segment).
        self._sync_lock = asyncio.Lock()

    # Lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        from brokerd.log.manager import LogManager

        config = self.broker.config
        self.log_manager = LogManager(
            config.log_dirs,
            config.log_config(),
            config.explicit,
            topic_config=self.topic_log_config,
        )
        await asyncio.to_thread(self.log_manager.startup)
        await asyncio.to_thread(
            self.log_manager.ensure_meta_properties,
            self.broker.broker_id,
            self.broker.metadata.cluster_id,
        )
        if config.get("log.cleaner.enable"):
            from brokerd.log.cleaner_manager import CleanerThread, LogCleanerManager

            self.cleaner = LogCleanerManager(
                dedupe_buffer_size=config.get("log.cleaner.dedupe.buffer.size")
            )
            # Compaction runs on its own thread, off the event loop.
            self._cleaner_thread = CleanerThread(
                self.cleaner,
                self.log_manager.all_logs,
                backoff_ms=config.get("log.cleaner.backoff.ms"),
            )
            self._cleaner_thread.start()
        self._maintenance = [
            asyncio.create_task(
                self._every(config.get("log.retention.check.interval.ms"), self._retention)
            ),
            asyncio.create_task(
                self._every(
                    config.get("log.flush.offset.checkpoint.interval.ms"),
                    self.log_manager.checkpoint,
                )
            ),
        ]

    async def shutdown(self) -> None:
        for task in self._maintenance:
            task.cancel()
        if self._cleaner_thread is not None:
            await asyncio.to_thread(self._cleaner_thread.stop)
        self.wake_all_waiters()
        if self.log_manager is not None:
            await asyncio.to_thread(self.log_manager.shutdown)

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

    # Configs --------------------------------------------------------------------------
    def topic_log_config(self, topic: str) -> LogConfig:
        info = self.broker.metadata.topic(topic)
        return self.broker.config.log_config(info.configs if info else {})

    def refresh_topic_config(self, topic: str) -> None:
        if self.log_manager is not None:
            self.log_manager.update_config(topic, self.topic_log_config(topic))

    def refresh_all_configs(self) -> None:
        for topic in {t for t, _ in self.leaders}:
            self.refresh_topic_config(topic)

    # Leadership -----------------------------------------------------------------------
    async def sync_leadership(self) -> None:
        """Lead exactly the partitions whose state znode names this broker."""
        async with self._sync_lock:
            await self._sync_leadership()

    async def _sync_leadership(self) -> None:
        me = self.broker.broker_id
        wanted = {}
        for info in self.broker.metadata.topics.values():
            for partition, state in info.states.items():
                if state.leader == me:
                    wanted[(info.name, partition)] = state
        lost = set(self.leaders) - set(wanted)
        gained = set()
        for key in lost:
            del self.leaders[key]
        for (topic, partition), state in wanted.items():
            current = self.leaders.get((topic, partition))
            if current is not None:
                current.leader_epoch = state.leader_epoch
                current.isr = list(state.isr)
                continue
            partition_log = await asyncio.to_thread(
                self.log_manager.get_or_create_log, topic, partition, self.topic_log_config(topic)
            )
            self.leaders[(topic, partition)] = LeaderPartition(
                topic, partition, partition_log, state.leader_epoch, list(state.isr)
            )
            gained.add((topic, partition))
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
        for partition in partitions:
            if self.leaders.pop((topic, partition), None) is not None:
                self._notify_leadership(set(), {(topic, partition)})
            await asyncio.to_thread(self.log_manager.delete_log, topic, partition)

    def leader(self, topic: str, partition: int) -> LeaderPartition:
        """The led partition, or the error a client gets for it."""
        found = self.leaders.get((topic, partition))
        if found is not None:
            return found
        info = self.broker.metadata.topic(topic)
        if info is None or partition not in info.assignment:
            raise KafkaError(ErrorCode.unknown_topic_or_partition)
        if (topic, partition) in self.log_manager.offline_partitions:
            raise KafkaError(ErrorCode.kafka_storage_error)
        raise KafkaError(ErrorCode.not_leader_or_follower)

    def local_log(self, topic: str, partition: int) -> Log | None:
        return self.log_manager.get_log(topic, partition) if self.log_manager else None

    # Appends --------------------------------------------------------------------------
    def append(
        self, partition: LeaderPartition, records: bytes, acks: int, defer_flush: bool = False
    ) -> AppendInfo:
        """Append on the event loop. With defer_flush, a due fsync (flush.messages/flush.ms)
        is the caller's (`info.flush_needed`: run log.flush off the loop before acking)."""
        if acks == -1:
            min_isr = partition.log.config.min_insync_replicas
            if len(partition.isr) < min_isr:
                raise KafkaError(
                    ErrorCode.not_enough_replicas,
                    f"ISR {partition.isr} is smaller than min.insync.replicas {min_isr}",
                )
        info = partition.log.append_as_leader(
            records, partition.leader_epoch, defer_flush=defer_flush
        )
        if partition.isr == [self.broker.broker_id]:
            partition.log.update_high_watermark(partition.log.log_end_offset)
        self.purgatory.notify((partition.topic, partition.partition))
        return info
