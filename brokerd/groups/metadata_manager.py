"""Groups and committed offsets in `__consumer_offsets`: load, store, expire.

As Kafka's GroupMetadataManager: a broker holds the groups of the `__consumer_offsets`
partitions it leads. Gaining a partition loads its groups and offsets from the log (the
coordinator answers COORDINATOR_LOAD_IN_PROGRESS meanwhile); losing it drops them. Every
change a client must find again after a failover (offset commits, group generations and
assignments, deletions, expiries) is appended to the partition and replicated to its ISR
before the caller hears success. The membership protocol is the coordinator's; this class
knows groups only as records to keep.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from brokerd.config import GroupCoordinatorConfig
from brokerd.coordinator_partitions import (
    CoordinatorMetadata,
    CoordinatorReplicas,
    CreateTopic,
    PartitionLog,
    TopicView,
)
from brokerd.protocol.errors import ErrorCode, KafkaError, error_code_of
from brokerd.records import control
from brokerd.records.batch import CorruptRecordError, SimpleRecord, build_batch
from brokerd.util.background import BackgroundTasks

from . import consumer_group_records, offsets_topic
from .collaborators import FailurePoint
from .group import Group, GroupState
from .offsets_topic import GroupValue, OffsetKey, OffsetValue

log = logging.getLogger(__name__)

CONSUMER_PROTOCOL_TYPE = "consumer"
ConsumerRecordKey = offsets_topic.ConsumerGroupKey | offsets_topic.ConsumerMemberKey

E = ErrorCode

TopicPartition = tuple[str, int]
# (offset, leader epoch, metadata) as an OffsetCommit request carries them.
OffsetCommit = tuple[int, int | None, str | None]


def now_ms() -> int:
    return int(time.time() * 1000)


class GroupMetadataManager:
    def __init__(
        self,
        replicas: CoordinatorReplicas,
        metadata: CoordinatorMetadata,
        config: GroupCoordinatorConfig,
        create_topic: CreateTopic,
        probes: FailurePoint,
    ):
        self.replicas = replicas
        self.metadata = metadata
        self.config = config
        self.create_topic = create_topic
        self.probes = probes
        self._groups: dict[str, Group] = {}
        self._owned: set[int] = set()  # loaded __consumer_offsets partitions
        self._loading: set[int] = set()
        # Transaction markers written on a partition while it loads: (producer id, commit),
        # applied once the load is done (Kafka runs scheduleHandleTxnCompletion after it).
        self._completed_while_loading: dict[int, list[tuple[int, bool]]] = {}
        self._tasks = BackgroundTasks(log, "group metadata task failed")
        self._expiry_task: asyncio.Task | None = None
        self._topic_lock = asyncio.Lock()

    # Lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        self._expiry_task = asyncio.get_running_loop().create_task(self._expire_periodically())

    def shutdown(self, on_unloaded: Callable[[Group], None]) -> None:
        if self._expiry_task is not None:
            self._expiry_task.cancel()
        for partition in list(self._owned | self._loading):
            self.remove_groups_for_partition(partition, on_unloaded)
        self._tasks.cancel_all()

    # The offsets topic ----------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        info = self.metadata.topic(offsets_topic.TOPIC)
        if info is not None and info.partition_count:
            return info.partition_count
        return self.config.offsets_topic_num_partitions

    def partition_for(self, group_id: str) -> int:
        return offsets_topic.partition_for(group_id, self.num_partitions)

    def led_partitions(self) -> list[int]:
        """The `__consumer_offsets` partitions this broker leads now."""
        return [p for topic, p in self.replicas.leaders if topic == offsets_topic.TOPIC]

    async def ensure_offsets_topic(self) -> TopicView | None:
        """The topic's metadata, creating it on first use (replication capped at live brokers)."""
        info = self.metadata.topic(offsets_topic.TOPIC)
        if info is not None:
            return info
        async with self._topic_lock:
            info = self.metadata.topic(offsets_topic.TOPIC)
            if info is not None:
                return info
            replication = min(
                self.config.offsets_topic_replication_factor, max(len(self.metadata.brokers), 1)
            )
            try:
                _, _, info = await self.create_topic(
                    offsets_topic.TOPIC,
                    self.config.offsets_topic_num_partitions,
                    replication,
                    offsets_topic.topic_configs(self.config.offsets_topic_segment_bytes),
                )
            except KafkaError as exc:
                if exc.error_code != E.topic_already_exists:
                    raise
                info = self.metadata.topic(offsets_topic.TOPIC)
            return info

    def coordinator_for(self, group_id: str) -> int | None:
        """The broker id leading the group's partition, if the topic and a leader exist."""
        state = self.metadata.partition_state(offsets_topic.TOPIC, self.partition_for(group_id))
        if state is None or state.leader not in self.metadata.brokers:
            return None
        return state.leader

    # The groups held here -------------------------------------------------------------
    def is_group_local(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self._owned

    def is_group_loading(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self._loading

    @property
    def is_loading(self) -> bool:
        """Some partition's groups are still being read: a listing would be incomplete."""
        return bool(self._loading)

    def get_group(self, group_id: str) -> Group | None:
        return self._groups.get(group_id)

    def add_group(self, group: Group) -> Group:
        """Hold `group`, or the one already held under its id."""
        return self._groups.setdefault(group.group_id, group)

    def is_current(self, group: Group) -> bool:
        """Whether `group` is still the one held under its id (not unloaded or deleted):
        a timer or write that outlived it must not act on it."""
        return self._groups.get(group.group_id) is group

    def current_groups(self) -> list[Group]:
        return [
            g
            for g in self._groups.values()
            if not g.is_in(GroupState.DEAD) and self.is_group_local(g.group_id)
        ]

    # Topic ids of consumer group records ----------------------------------------------
    def topic_id_of(self, name: str) -> bytes | None:
        """The topic's id as the 16 bytes consumer group records hold, None if unknown."""
        view = self.metadata.topic(name)
        if view is None or not view.topic_id:
            return None
        return offsets_topic.topic_id_bytes(view.topic_id)

    def _topic_names(self) -> Callable[[bytes], str | None]:
        """A lookup of topic names by the ids of consumer group records (for one load)."""
        known: dict[bytes, str | None] = {}

        def name_of(raw: bytes) -> str | None:
            if raw not in known:
                view = self.metadata.topic_by_id(offsets_topic.topic_id_text(raw))
                known[raw] = view.name if view is not None else None
            return known[raw]

        return name_of

    # Loading and unloading partitions -------------------------------------------------
    def schedule_load(self, partition: int, on_loaded: Callable[[Group], None]) -> None:
        """Read the partition's groups in the background; `on_loaded` gets each group read
        from a group record (so the coordinator can time its members' sessions)."""
        if partition in self._loading or partition in self._owned:
            return
        self._loading.add(partition)
        self._completed_while_loading.pop(partition, None)
        self._tasks.spawn(self._load(partition, on_loaded))

    async def _load(self, partition: int, on_loaded: Callable[[Group], None]) -> None:
        await self.probes.reached("group_coordinator", "load")
        leader = self.replicas.leaders.get((offsets_topic.TOPIC, partition))
        if leader is None:
            self._loading.discard(partition)
            return
        started = time.monotonic()
        records = await asyncio.to_thread(read_partition, leader.log)
        if partition not in self._loading:
            return  # lost while loading
        # The last record of each key wins; None is a tombstone. Offsets of a transaction
        # (TxnOffsetCommit) count once its COMMIT marker is read; those of a transaction
        # still open stay pending for the marker to come.
        offsets: dict[OffsetKey, OffsetValue | None] = {}
        groups: dict[str, GroupValue | None] = {}
        pending: dict[int, dict[OffsetKey, OffsetValue]] = {}
        consumer_records: dict[ConsumerRecordKey, offsets_topic.ConsumerGroupValue] = {}
        for key, value, producer_id in records:
            if isinstance(key, (offsets_topic.ConsumerGroupKey, offsets_topic.ConsumerMemberKey)):
                if value is None:
                    consumer_records.pop(key, None)
                else:
                    consumer_records[key] = value  # type: ignore[assignment]
            elif isinstance(key, TxnMarker):
                ended = pending.pop(key.producer_id, {})
                if key.commit:
                    offsets.update(ended)
            elif isinstance(key, OffsetKey):
                if producer_id is not None:
                    if isinstance(value, OffsetValue):
                        pending.setdefault(producer_id, {})[key] = value
                else:
                    offsets[key] = value if isinstance(value, OffsetValue) else None
            else:
                groups[key.group] = value if isinstance(value, GroupValue) else None
        now = now_ms()
        for group_id, group_value in groups.items():
            if group_value is None:
                continue
            loaded_group = Group.from_record(group_id, group_value, now)
            self._groups[group_id] = loaded_group
            on_loaded(loaded_group)
        if consumer_records:
            # Consumer groups (KIP-848): members, epochs and assignments as written.
            built = consumer_group_records.build_groups(
                consumer_records, self._topic_names(), self.topic_id_of
            )
            for group_id, cg in built.items():
                loaded_group = Group(group_id, state_timestamp_ms=now)
                loaded_group.protocol_type = CONSUMER_PROTOCOL_TYPE
                loaded_group.consumer = cg
                self._groups[group_id] = loaded_group
                on_loaded(loaded_group)
        for key, offset in offsets.items():
            if offset is None:
                continue
            group = self._groups.get(key.group)
            if group is None:
                group = self._groups[key.group] = Group(key.group, state_timestamp_ms=now)
            group.offsets[(key.topic, key.partition)] = offset
        for producer_id, open_offsets in pending.items():
            for key, offset in open_offsets.items():
                group = self._groups.get(key.group)
                if group is None:
                    group = self._groups[key.group] = Group(key.group, state_timestamp_ms=now)
                group.pending_txn_offsets.setdefault(producer_id, {})[
                    (key.topic, key.partition)
                ] = offset
        self._loading.discard(partition)
        self._owned.add(partition)
        # A marker written meanwhile may lie past what was read: its completion applies now.
        for producer_id, commit in self._completed_while_loading.pop(partition, []):
            self.complete_txn(producer_id, [partition], commit)
        loaded = sum(1 for g in self._groups if self.partition_for(g) == partition)
        log.log(
            logging.INFO if loaded else logging.DEBUG,
            "loaded %d groups of %s-%d in %.0f ms",
            loaded,
            offsets_topic.TOPIC,
            partition,
            (time.monotonic() - started) * 1000,
        )

    def remove_groups_for_partition(
        self, partition: int, on_unloaded: Callable[[Group], None]
    ) -> None:
        """Drop the partition's groups (a load under way is abandoned); `on_unloaded` gets
        each, after its timers are cancelled, to answer the members still waiting."""
        self._loading.discard(partition)
        self._owned.discard(partition)
        self._completed_while_loading.pop(partition, None)
        for group_id in [g for g in self._groups if self.partition_for(g) == partition]:
            group = self._groups.pop(group_id)
            group.cancel_timers()
            on_unloaded(group)

    # Writing to __consumer_offsets ----------------------------------------------------
    async def _append(
        self,
        group_id: str,
        records: list[tuple[bytes, bytes | None]],
        group_write: bool = False,
        producer: tuple[int, int] | None = None,
    ) -> int:
        """Append records to the group's partition and wait until its ISR has them (acks=all,
        up to offsets.commit.timeout.ms): a commit acknowledged here survives a coordinator
        failover. NONE or the error the client gets, mapped as Kafka's GroupMetadataManager
        does; `group_write` (group metadata rather than offsets) answers a timeout with
        REBALANCE_IN_PROGRESS so members rejoin."""
        partition = self.partition_for(group_id)
        replicas = self.replicas
        try:
            leader = replicas.leader(offsets_topic.TOPIC, partition)
            timestamp = now_ms()
            simple = [SimpleRecord(value, key, (), timestamp) for key, value in records]
            if producer is None:
                batch = build_batch(simple)
            else:
                # A transactional batch of the producer (TxnOffsetCommit), sequenced after
                # its last batch on this partition, so the log's producer checks pass.
                producer_id, epoch = producer
                entry = leader.log.producer_state.last_entry(producer_id)
                sequence = 0
                if entry is not None and entry.producer_epoch == epoch:
                    sequence = (entry.last_seq + 1) & 0x7FFFFFFF
                batch = build_batch(
                    simple,
                    producer_id=producer_id,
                    producer_epoch=epoch,
                    base_sequence=sequence,
                    is_transactional=True,
                )
            info = replicas.append(leader, bytes(batch), acks=-1)
        except KafkaError as exc:
            return self._append_error(group_id, error_code_of(exc), group_write)
        except Exception:  # noqa: BLE001 - the client gets UNKNOWN_SERVER_ERROR
            log.exception("appending to %s-%d failed", offsets_topic.TOPIC, partition)
            return E.unknown_server_error
        return await self._replicated(group_id, leader, info.last_offset + 1, group_write)

    async def _replicated(self, group_id: str, leader, end: int, group_write: bool) -> int:
        """Wait until the ISR has the group's partition up to `end`; NONE or the error."""
        try:
            code = await self.replicas.wait_for_replication(
                leader, end, self.config.offsets_commit_timeout_ms / 1000
            )
        except KafkaError as exc:
            code = error_code_of(exc)
        except Exception:  # noqa: BLE001 - the client gets UNKNOWN_SERVER_ERROR
            log.exception("waiting for the ISR of group %s's partition failed", group_id)
            return E.unknown_server_error
        return self._append_error(group_id, code, group_write)

    def append_now(
        self, group_id: str, records: list[tuple[bytes, bytes | None]]
    ) -> asyncio.Future[int]:
        """Append `records` to the group's partition at once, so records of successive
        calls land in call order, and return a future of the outcome once the ISR has them
        (NONE or the error, mapped as for offset commits). Consumer group (KIP-848) records
        are written so: their state changes on the loop and each change is logged before
        the next one can start."""
        partition = self.partition_for(group_id)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        try:
            leader = self.replicas.leader(offsets_topic.TOPIC, partition)
            timestamp = now_ms()
            batch = build_batch([SimpleRecord(v, k, (), timestamp) for k, v in records])
            info = self.replicas.append(leader, bytes(batch), acks=-1)
        except KafkaError as exc:
            future.set_result(self._append_error(group_id, error_code_of(exc), False))
            return future
        except Exception:  # noqa: BLE001 - the client gets UNKNOWN_SERVER_ERROR
            log.exception("appending to %s-%d failed", offsets_topic.TOPIC, partition)
            future.set_result(E.unknown_server_error)
            return future

        async def wait() -> None:
            code: int = E.not_coordinator  # cancelled: the partition is being given up
            try:
                code = await self._replicated(group_id, leader, info.last_offset + 1, False)
            finally:
                if not future.done():
                    future.set_result(code)

        self._tasks.spawn(wait())
        return future

    def _append_error(self, group_id: str, code: int, group_write: bool) -> int:
        partition = self.partition_for(group_id)
        if code == E.none:
            return E.none
        log.info(
            "write for group %s to %s-%d failed: %s",
            group_id,
            offsets_topic.TOPIC,
            partition,
            ErrorCode(code).name,
        )
        if code in (E.not_leader_or_follower, E.kafka_storage_error):
            return E.not_coordinator
        if code in (
            E.unknown_topic_or_partition,
            E.not_enough_replicas,
            E.not_enough_replicas_after_append,
        ):
            return E.coordinator_not_available
        if code == E.request_timed_out:
            return E.rebalance_in_progress if group_write else E.request_timed_out
        if code in (E.message_too_large, E.record_list_too_large, E.invalid_fetch_size):
            return E.unknown_server_error if group_write else E.invalid_commit_offset_size
        return code

    async def store_group(self, group: Group, assignments: Mapping[str, bytes] | None = None):
        """Persist the group's generation, members and (if given) their assignments."""
        value = group.to_record()
        if assignments is not None:
            for member in value.members:
                member.assignment = assignments.get(member.member_id, b"")
        tombstones = group.unwritten_tombstones
        records: list[tuple[bytes, bytes | None]] = [*tombstones]
        records.append((offsets_topic.group_key(group.group_id), offsets_topic.group_value(value)))
        error = await self._append(group.group_id, records, group_write=True)
        if error == E.none and tombstones and group.unwritten_tombstones is tombstones:
            group.unwritten_tombstones = []
        return error

    async def store_offsets(
        self, group: Group, retention_ms: int, offsets: Mapping[TopicPartition, OffsetCommit]
    ) -> dict[TopicPartition, int]:
        """Persist commits (metadata longer than offset.metadata.max.bytes is refused per
        partition); the group sees them once the ISR has them. Per partition error."""
        results: dict[TopicPartition, int] = {}
        values: dict[TopicPartition, OffsetValue] = {}
        timestamp = now_ms()
        for (topic, partition), (offset, leader_epoch, metadata) in offsets.items():
            metadata = metadata or ""
            if len(metadata.encode("utf-8")) > self.config.offset_metadata_max_bytes:
                results[(topic, partition)] = E.offset_metadata_too_large
                continue
            values[(topic, partition)] = OffsetValue(
                offset,
                metadata,
                timestamp,
                leader_epoch if leader_epoch is not None else -1,
                timestamp + retention_ms if retention_ms >= 0 else -1,
            )
        if values:
            error = await self._append(
                group.group_id,
                [
                    (
                        offsets_topic.offset_key(group.group_id, topic, partition),
                        offsets_topic.offset_value(value),
                    )
                    for (topic, partition), value in values.items()
                ],
            )
            if not error and self.is_current(group):
                group.offsets.update(values)
            for key in values:
                results[key] = error
        return results

    async def store_txn_offsets(
        self,
        group: Group,
        producer_id: int,
        producer_epoch: int,
        offsets: Mapping[TopicPartition, OffsetCommit],
    ) -> dict[TopicPartition, int]:
        """TxnOffsetCommit: the commits are written in the producer's transaction and held
        pending until its marker on this partition commits (or aborts) them."""
        results: dict[TopicPartition, int] = {}
        values: dict[TopicPartition, OffsetValue] = {}
        timestamp = now_ms()
        for (topic, partition), (offset, leader_epoch, metadata) in offsets.items():
            metadata = metadata or ""
            if len(metadata.encode("utf-8")) > self.config.offset_metadata_max_bytes:
                results[(topic, partition)] = E.offset_metadata_too_large
                continue
            values[(topic, partition)] = OffsetValue(
                offset, metadata, timestamp, leader_epoch if leader_epoch is not None else -1
            )
        if values:
            error = await self._append(
                group.group_id,
                [
                    (
                        offsets_topic.offset_key(group.group_id, topic, partition),
                        offsets_topic.offset_value(value),
                    )
                    for (topic, partition), value in values.items()
                ],
                producer=(producer_id, producer_epoch),
            )
            if not error and self.is_current(group):
                group.pending_txn_offsets.setdefault(producer_id, {}).update(values)
            for key in values:
                results[key] = error
        return results

    def complete_txn(self, producer_id: int, partitions: Iterable[int], commit: bool) -> None:
        """The producer's transaction marker was written on these `__consumer_offsets`
        partitions: its pending offsets there become the groups' commits, or are dropped."""
        partitions = set(partitions)
        for partition in partitions & self._loading:
            self._completed_while_loading.setdefault(partition, []).append((producer_id, commit))
        for group in list(self._groups.values()):
            if self.partition_for(group.group_id) not in partitions:
                continue
            ended = group.pending_txn_offsets.pop(producer_id, None)
            if ended and commit:
                group.offsets.update(ended)

    def has_pending_txn_offsets(self, group_id: str, partition: TopicPartition) -> bool:
        group = self._groups.get(group_id)
        return group is not None and any(
            partition in offsets for offsets in group.pending_txn_offsets.values()
        )

    def get_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetValue | None]:
        """The group's commits, all of them or for `partitions` (None where none is held)."""
        group = self._groups.get(group_id)
        stored = group.offsets if group is not None else {}
        if partitions is None:
            return dict(stored)
        return {tp: stored.get(tp) for tp in partitions}

    # Deleting -------------------------------------------------------------------------
    async def delete_group(self, group: Group) -> int:
        """Tombstone an empty group and all its offsets; it is dropped once they are
        replicated, unless it changed (someone joined) meanwhile."""
        group_id = group.group_id
        tombstones: list[tuple[bytes, bytes | None]] = [
            (offsets_topic.offset_key(group_id, topic, partition), None)
            for topic, partition in group.offsets
        ]
        tombstones.append((offsets_topic.group_key(group_id), None))
        if group.consumer is not None:
            tombstones += consumer_group_records.group_tombstones(group.consumer)
        error = await self._append(group_id, tombstones)
        if error:
            return error
        if self.is_current(group) and _is_empty(group):
            self._drop(group)
        return E.none

    async def remove_offsets(self, group: Group, doomed: list[TopicPartition]) -> int:
        """Tombstone offsets; an empty group left without offsets dies with them."""
        records: list[tuple[bytes, bytes | None]] = [
            (offsets_topic.offset_key(group.group_id, topic, partition), None)
            for topic, partition in doomed
        ]
        dies = _is_empty(group) and not (set(group.offsets) - set(doomed))
        if dies:
            records.append((offsets_topic.group_key(group.group_id), None))
            if group.consumer is not None:
                records += consumer_group_records.group_tombstones(group.consumer)
        if not records:
            return E.none
        error = await self._append(group.group_id, records)
        if error:
            return error
        for tp in doomed:
            group.offsets.pop(tp, None)
        if dies and _is_empty(group) and not group.offsets:
            self._drop(group)
        return E.none

    def _drop(self, group: Group) -> None:
        group.transition_to(GroupState.DEAD, now_ms())
        group.cancel_timers()
        if self.is_current(group):
            del self._groups[group.group_id]

    # Offset expiry --------------------------------------------------------------------
    async def _expire_periodically(self) -> None:
        while True:
            await asyncio.sleep(
                min(self.config.offsets_retention_check_interval_ms, 1 << 31) / 1000
            )
            try:
                await self.expire_offsets()
            except Exception:
                log.exception("expiring committed offsets failed")

    async def expire_offsets(self, now: int | None = None) -> int:
        """Tombstone expired offsets (KIP-211 rules); returns how many expired."""
        now = now_ms() if now is None else now
        expired_total = 0
        for group in list(self._groups.values()):
            if not self.is_group_local(group.group_id):
                continue
            expired = self.expired_offsets(group, now)
            if expired or (_is_empty(group) and not group.offsets):
                if not await self.remove_offsets(group, expired):
                    expired_total += len(expired)
        return expired_total

    def expired_offsets(self, group: Group, now: int) -> list[TopicPartition]:
        def expired(value: OffsetValue, base: int) -> bool:
            if value.expire_timestamp >= 0:
                return now >= value.expire_timestamp
            return now >= base + self.config.offsets_retention_ms

        if group.protocol_type is None and group.is_in(GroupState.EMPTY):
            # Offsets-only group: each offset ages from its own commit.
            return [tp for tp, v in group.offsets.items() if expired(v, v.commit_timestamp)]
        if group.consumer is not None and group.consumer.members:
            # A consumer group (KIP-848) with members: as a Stable classic group.
            subscribed_topics = group.consumer.subscribed_topics()
            return [
                tp
                for tp, v in group.offsets.items()
                if tp[0] not in subscribed_topics and expired(v, v.commit_timestamp)
            ]
        if group.is_in(GroupState.EMPTY):
            # A consumer group's offsets age from the moment it became empty.
            return [tp for tp, v in group.offsets.items() if expired(v, group.state_timestamp_ms)]
        if group.is_in(GroupState.STABLE):
            subscribed = group.subscribed_topics()
            if subscribed is not None:
                return [
                    tp
                    for tp, v in group.offsets.items()
                    if tp[0] not in subscribed and expired(v, v.commit_timestamp)
                ]
        return []


def _is_empty(group: Group) -> bool:
    """No member of either protocol (a consumer group's classic part is always Empty)."""
    return group.is_in(GroupState.EMPTY) and not group.has_active_members()


@dataclass(frozen=True)
class TxnMarker:
    """A transaction marker read while loading: the producer's pending offsets end."""

    producer_id: int
    commit: bool


LoadedRecord = tuple[offsets_topic.AnyKey | TxnMarker, offsets_topic.AnyValue | None, int | None]


def read_partition(partition_log: PartitionLog) -> list[LoadedRecord]:
    """Every decodable record up to the log end, in log order (off the loop).

    To the LEO, not the HW, as Kafka loads: a new leader's HW trails the old leader's until
    its followers fetch again, yet everything in its log is kept (followers truncate to
    it), including commits the old leader acknowledged."""
    out: list[LoadedRecord] = []
    end = partition_log.log_end_offset
    for entry in partition_log.read_batches(partition_log.log_start_offset, end):
        producer_id = entry.producer_id if getattr(entry, "is_transactional", False) else None
        if getattr(entry, "is_control", False):
            for record in entry:
                if record.offset >= end or producer_id is None:
                    break
                try:
                    marker = control.decode_key(record.key)
                except CorruptRecordError:
                    continue
                if marker.type in (control.ABORT, control.COMMIT):
                    commit = marker.type == control.COMMIT
                    out.append((TxnMarker(producer_id, commit), None, producer_id))
            continue
        for record in entry:
            if record.offset >= end:
                break
            try:
                key, value = offsets_topic.decode_record(record.key, record.value)
                out.append((key, value, producer_id))
            except offsets_topic.RecordFormatError as exc:
                log.warning(
                    "skipping unreadable record at offset %d of %s: %s",
                    record.offset,
                    offsets_topic.TOPIC,
                    exc,
                )
    return out
