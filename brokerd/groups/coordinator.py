"""The group coordinator: Kafka's classic group protocol over `__consumer_offsets`.

A broker coordinates the groups whose `__consumer_offsets` partition it leads. Gaining a
partition loads its groups and offsets from the log (requests get COORDINATOR_LOAD_IN_PROGRESS
meanwhile); losing it drops them (NOT_COORDINATOR). Every change a client must find again
after a failover (offset commits, group generations and assignments, deletions) is appended
to the partition before the client hears success.

The rules follow Kafka's GroupCoordinator: who may join, when a rebalance starts and
completes, which generation and member fencing errors each request gets. Everything runs on
the event loop; timers are loop timers (heartbeat expiry, join completion, initial delay).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from brokerd.protocol.errors import ErrorCode, KafkaError, error_code_of
from brokerd.records.batch import SimpleRecord, build_batch
from brokerd.util.background import BackgroundTasks

from . import offsets_topic
from .group import Group, GroupState, JoinResult, Member
from .offsets_topic import GroupKey, OffsetKey, OffsetValue

if TYPE_CHECKING:
    from brokerd.server.broker import Broker

log = logging.getLogger(__name__)

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs
UNKNOWN_MEMBER_ID = ""

E = ErrorCode


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str


class GroupCoordinator:
    def __init__(self, broker: Broker):
        self.broker = broker
        config = broker.config
        self.min_session_timeout_ms = config.get("group.min.session.timeout.ms")
        self.max_session_timeout_ms = config.get("group.max.session.timeout.ms")
        self.initial_rebalance_delay_ms = config.get("group.initial.rebalance.delay.ms")
        self.max_group_size = config.get("group.max.size")
        self.retention_ms = config.get("offsets.retention.minutes") * 60_000
        self.retention_check_ms = config.get("offsets.retention.check.interval.ms")
        self.metadata_max_bytes = config.get("offset.metadata.max.bytes")
        self.commit_timeout_ms = config.get("offsets.commit.timeout.ms")
        self.groups: dict[str, Group] = {}
        self.owned: set[int] = set()  # loaded __consumer_offsets partitions
        self.loading: set[int] = set()
        self.active = False
        self._tasks = BackgroundTasks(log, "group coordinator task failed")
        self._expiry_task: asyncio.Task | None = None
        self._topic_lock = asyncio.Lock()

    # Lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        self.active = True
        self._expiry_task = asyncio.get_running_loop().create_task(self._expire_periodically())
        # The listeners open before the broker registers, and a controller still counting
        # its previous registration may already have made it a leader: changes before now
        # were not acted on, so load what it leads (later changes at a new epoch are not
        # gains, and would never load it).
        led = [key for key in self.broker.replicas.leaders if key[0] == offsets_topic.TOPIC]
        self.on_leadership_change(led, ())

    async def shutdown(self) -> None:
        self.active = False
        if self._expiry_task is not None:
            self._expiry_task.cancel()
        for partition in list(self.owned | self.loading):
            self._unload(partition)
        self._tasks.cancel_all()

    def _spawn(self, coroutine) -> None:
        self._tasks.spawn(coroutine)

    # The offsets topic ----------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        info = self.broker.metadata.topic(offsets_topic.TOPIC)
        if info is not None and info.partition_count:
            return info.partition_count
        return self.broker.config.get("offsets.topic.num.partitions")

    def partition_for(self, group_id: str) -> int:
        return offsets_topic.partition_for(group_id, self.num_partitions)

    async def ensure_offsets_topic(self):
        """The topic's metadata, creating it on first use (replication capped at live brokers)."""
        info = self.broker.metadata.topic(offsets_topic.TOPIC)
        if info is not None:
            return info
        from brokerd.server.topic_admin import create_topic

        config = self.broker.config
        async with self._topic_lock:
            info = self.broker.metadata.topic(offsets_topic.TOPIC)
            if info is not None:
                return info
            replication = min(
                config.get("offsets.topic.replication.factor"),
                max(len(self.broker.metadata.brokers), 1),
            )
            try:
                _, _, info = await create_topic(
                    self.broker,
                    offsets_topic.TOPIC,
                    config.get("offsets.topic.num.partitions"),
                    replication,
                    offsets_topic.topic_configs(config.get("offsets.topic.segment.bytes")),
                )
            except KafkaError as exc:
                if exc.error_code != E.topic_already_exists:
                    raise
                info = self.broker.metadata.topic(offsets_topic.TOPIC)
            return info

    def coordinator_for(self, group_id: str) -> int | None:
        """The broker id leading the group's partition, if the topic and a leader exist."""
        state = self.broker.metadata.partition_state(
            offsets_topic.TOPIC, self.partition_for(group_id)
        )
        if state is None or state.leader not in self.broker.metadata.brokers:
            return None
        return state.leader

    # Leadership of offsets partitions: load and unload ------------------------------------
    def on_leadership_change(self, gained: Iterable[tuple[str, int]], lost: Iterable) -> None:
        for topic, partition in lost:
            if topic == offsets_topic.TOPIC:
                self._unload(partition)
        for topic, partition in gained:
            already = partition in self.loading or partition in self.owned
            if topic == offsets_topic.TOPIC and self.active and not already:
                self.loading.add(partition)
                self._spawn(self._load(partition))

    async def _load(self, partition: int) -> None:
        await self.broker.failure_probes.reached("group_coordinator", "load")
        leader = self.broker.replicas.leaders.get((offsets_topic.TOPIC, partition))
        if leader is None:
            self.loading.discard(partition)
            return
        started = time.monotonic()
        partition_log = leader.log
        records = await asyncio.to_thread(_read_partition, partition_log)
        if partition not in self.loading:
            return  # lost while loading
        offsets: dict[OffsetKey, OffsetValue | None] = {}
        groups: dict[str, object] = {}
        for key, value in records:
            if isinstance(key, OffsetKey):
                offsets[key] = value
            else:
                groups[key.group] = value
        now = now_ms()
        for group_id, value in groups.items():
            if value is None:
                continue
            group = Group.from_record(group_id, value, now)
            self.groups[group_id] = group
            for member in group.members.values():
                self._schedule_heartbeat(group, member)
        for key, value in offsets.items():
            if value is None:
                continue
            group = self.groups.get(key.group)
            if group is None:
                group = self.groups[key.group] = Group(key.group, state_timestamp_ms=now)
            group.offsets[(key.topic, key.partition)] = value
        self.loading.discard(partition)
        self.owned.add(partition)
        loaded = sum(1 for g in self.groups if self.partition_for(g) == partition)
        log.log(
            logging.INFO if loaded else logging.DEBUG,
            "loaded %d groups of %s-%d in %.0f ms",
            loaded,
            offsets_topic.TOPIC,
            partition,
            (time.monotonic() - started) * 1000,
        )

    def _unload(self, partition: int) -> None:
        self.loading.discard(partition)
        self.owned.discard(partition)
        for group_id in [g for g in self.groups if self.partition_for(g) == partition]:
            group = self.groups.pop(group_id)
            self._cancel_group_timers(group)
            for member in group.members.values():
                member.complete_join(JoinResult(E.not_coordinator, member.member_id))
                member.complete_sync(E.not_coordinator)

    def _cancel_group_timers(self, group: Group) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        self._clear_pending_sync(group)
        for member in group.members.values():
            if member.heartbeat_timer is not None:
                member.heartbeat_timer.cancel()
        for timer in group.pending_timers.values():
            timer.cancel()
        group.pending_timers.clear()

    # Validation -----------------------------------------------------------------------
    def check_group(self, group_id: str | None, allow_empty_id: bool = False) -> int:
        """NONE, or why this broker cannot answer for the group now."""
        if group_id is None or (not group_id and not allow_empty_id):
            return E.invalid_group_id
        if not self.active:
            return E.coordinator_not_available
        partition = self.partition_for(group_id)
        if partition in self.loading:
            return E.coordinator_load_in_progress
        if partition not in self.owned:
            return E.not_coordinator
        return E.none

    # Writing to __consumer_offsets ------------------------------------------------------------
    async def _append(
        self, group_id: str, records: list[tuple[bytes, bytes | None]], group_write: bool = False
    ) -> int:
        """Append records to the group's partition and wait until its ISR has them (acks=all,
        up to offsets.commit.timeout.ms): a commit acknowledged here survives a coordinator
        failover. NONE or the error the client gets, mapped as Kafka's GroupMetadataManager
        does; `group_write` (group metadata rather than offsets) answers a timeout with
        REBALANCE_IN_PROGRESS so members rejoin."""
        partition = self.partition_for(group_id)
        replicas = self.broker.replicas
        try:
            leader = replicas.leader(offsets_topic.TOPIC, partition)
            timestamp = now_ms()
            batch = build_batch([SimpleRecord(value, key, (), timestamp) for key, value in records])
            info = replicas.append(leader, bytes(batch), acks=-1)
            code = await replicas.wait_for_replication(
                leader, info.last_offset + 1, self.commit_timeout_ms / 1000
            )
        except KafkaError as exc:
            code = error_code_of(exc)
        except Exception:  # noqa: BLE001 - the client gets UNKNOWN_SERVER_ERROR
            log.exception("appending to %s-%d failed", offsets_topic.TOPIC, partition)
            return E.unknown_server_error
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

    async def _store_group(self, group: Group, assignments: dict[str, bytes] | None = None):
        value = group.to_record()
        if assignments is not None:
            for member in value.members:
                member.assignment = assignments.get(member.member_id, b"")
        return await self._append(
            group.group_id,
            [(offsets_topic.group_key(group.group_id), offsets_topic.group_value(value))],
            group_write=True,
        )

    # Heartbeat timers -----------------------------------------------------------------
    def _schedule_heartbeat(self, group: Group, member: Member, timeout_ms: int | None = None):
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
        delay = (member.session_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        member.heartbeat_timer = asyncio.get_running_loop().call_later(
            delay, self._heartbeat_expired, group, member.member_id, time.monotonic()
        )

    def _heartbeat_expired(self, group: Group, member_id: str, scheduled_at: float) -> None:
        if self.groups.get(group.group_id) is not group or not group.has(member_id):
            return
        member = group.get(member_id)
        member.heartbeat_timer = None
        new_and_stuck = (
            member.is_new and (time.monotonic() - scheduled_at) * 1000 >= NEW_MEMBER_JOIN_TIMEOUT_MS
        )
        if (member.is_awaiting_join or member.is_awaiting_sync) and not new_and_stuck:
            self._schedule_heartbeat(group, member)  # waiting on us is not being dead
            return
        log.info(
            "member %s of group %s failed to heartbeat; removing it", member_id, group.group_id
        )
        self._remove_member_and_update_group(group, member)

    def _schedule_pending_expiry(self, group: Group, member_id: str, timeout_ms: int) -> None:
        group.pending_timers[member_id] = asyncio.get_running_loop().call_later(
            timeout_ms / 1000, self._pending_expired, group, member_id
        )

    def _pending_expired(self, group: Group, member_id: str) -> None:
        group.pending_timers.pop(member_id, None)
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            if group.is_in(GroupState.PREPARING_REBALANCE):
                self._maybe_complete_join(group)

    # JoinGroup ------------------------------------------------------------------------
    async def join_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        require_known_member_id: bool,
        supports_skip_assignment: bool,
    ) -> JoinResult:
        error = self.check_group(group_id)
        if error:
            return JoinResult(error, member_id)
        if not self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms:
            return JoinResult(E.invalid_session_timeout, member_id)
        group = self.groups.get(group_id)
        if group is None:
            if member_id != UNKNOWN_MEMBER_ID:
                return JoinResult(E.unknown_member_id, member_id)
            group = self.groups[group_id] = Group(group_id, state_timestamp_ms=now_ms())
        if not self._accept_joining_member(group, member_id):
            member = group.members.get(member_id)
            if member is not None:
                self._remove_member_and_update_group(group, member)
            return JoinResult(E.group_max_size_reached, UNKNOWN_MEMBER_ID)
        details = _JoinDetails(
            group_instance_id,
            client_id,
            client_host,
            session_timeout_ms,
            rebalance_timeout_ms,
            protocol_type,
            protocols,
            supports_skip_assignment,
        )
        if member_id == UNKNOWN_MEMBER_ID:
            outcome = await self._join_new_member(group, details, require_known_member_id)
        else:
            outcome = self._join_existing_member(group, member_id, details)
        if isinstance(outcome, JoinResult):
            return outcome
        return await outcome

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        if group.is_in(GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return (
                group.has(member_id) and group.get(member_id).is_awaiting_join
            ) or group.num_awaiting_join() < self.max_group_size
        return group.has(member_id) or len(group.members) < self.max_group_size

    async def _join_new_member(self, group: Group, details, require_known_member_id: bool):
        if group.is_in(GroupState.DEAD):
            return JoinResult(E.coordinator_not_available, UNKNOWN_MEMBER_ID)
        if not group.supports_protocols(details.protocol_type, details.protocols):
            return JoinResult(E.inconsistent_group_protocol, UNKNOWN_MEMBER_ID)
        prefix = details.group_instance_id or details.client_id
        new_member_id = f"{prefix}-{uuid.uuid4()}"
        if details.group_instance_id is not None:
            return await self._join_static_member(group, new_member_id, details)
        if require_known_member_id:
            # KIP-394: hand out the id first, so a client that times out can rejoin as itself.
            group.pending_members.add(new_member_id)
            self._schedule_pending_expiry(group, new_member_id, details.session_timeout_ms)
            return JoinResult(E.member_id_required, new_member_id)
        return self._add_member_and_rebalance(group, new_member_id, details)

    async def _join_static_member(self, group: Group, new_member_id: str, details):
        instance_id = details.group_instance_id
        old_member_id = group.static_member_id(instance_id)
        if old_member_id is None:
            return self._add_member_and_rebalance(group, new_member_id, details)
        # A restarted static member takes over its old identity (and assignment).
        old = group.get(old_member_id)
        old.complete_join(JoinResult(E.fenced_instance_id, old_member_id))
        old.complete_sync(E.fenced_instance_id)
        previous_leader = group.leader_id
        saved = (old.protocols, old.rebalance_timeout_ms, old.session_timeout_ms)
        member = group.replace_static_member(instance_id, old_member_id, new_member_id)
        member.protocols = details.protocols
        member.rebalance_timeout_ms = details.rebalance_timeout_ms
        member.session_timeout_ms = details.session_timeout_ms
        member.client_id = details.client_id
        member.client_host = details.client_host
        self._schedule_heartbeat(group, member)
        if group.is_in(GroupState.STABLE):
            if group.select_protocol() != group.protocol_name:
                future = self._await_join(member)
                self._maybe_prepare_rebalance(group, "static member changed protocols")
                return future
            error = await self._store_group(
                group, {m.member_id: m.assignment for m in group.members.values()}
            )
            if error:
                if group.has(new_member_id):
                    group.replace_static_member(instance_id, new_member_id, old_member_id)
                    member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms = saved
                return JoinResult(error, UNKNOWN_MEMBER_ID)
            if group.is_leader(new_member_id) and details.supports_skip_assignment:
                return self._current_generation(group, new_member_id, skip_assignment=True)
            # The old leader id is returned so the restarted member does not run an
            # assignment a Stable group would never distribute.
            return JoinResult(
                E.none,
                new_member_id,
                group.generation_id,
                group.protocol_type,
                group.protocol_name,
                previous_leader or "",
            )
        future = self._await_join(member)
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, "static member rejoined during sync")
        else:
            self._maybe_complete_join(group)
        return future

    def _join_existing_member(self, group: Group, member_id: str, details):
        if group.is_in(GroupState.DEAD):
            return JoinResult(E.coordinator_not_available, member_id)
        if not group.supports_protocols(details.protocol_type, details.protocols):
            return JoinResult(E.inconsistent_group_protocol, member_id)
        if member_id in group.pending_members:
            timer = group.pending_timers.pop(member_id, None)
            if timer is not None:
                timer.cancel()
            return self._add_member_and_rebalance(group, member_id, details)
        if group.is_static_member_fenced(member_id, details.group_instance_id):
            return JoinResult(E.fenced_instance_id, member_id)
        if not group.has(member_id):
            return JoinResult(E.unknown_member_id, member_id)
        member = group.get(member_id)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return self._update_member_and_rebalance(group, member, details)
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            if member.matches(details.protocols):
                return self._current_generation(group, member_id)
            return self._update_member_and_rebalance(group, member, details)
        if group.is_in(GroupState.STABLE):
            if group.is_leader(member_id) or not member.matches(details.protocols):
                return self._update_member_and_rebalance(group, member, details)
            return self._current_generation(group, member_id, include_members=False)
        return JoinResult(E.unknown_member_id, member_id)

    def _current_generation(
        self,
        group: Group,
        member_id: str,
        include_members: bool = True,
        skip_assignment: bool = False,
    ) -> JoinResult:
        leader = group.is_leader(member_id)
        return JoinResult(
            E.none,
            member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            group.current_member_metadata() if leader and include_members else (),
            skip_assignment,
        )

    def _await_join(self, member: Member) -> asyncio.Future:
        if not member.is_awaiting_join:  # a duplicate JoinGroup shares the pending answer
            member.join_future = asyncio.get_running_loop().create_future()
        return member.join_future

    def _add_member_and_rebalance(self, group: Group, member_id: str, details) -> asyncio.Future:
        member = Member(
            member_id=member_id,
            group_instance_id=details.group_instance_id,
            client_id=details.client_id,
            client_host=details.client_host,
            rebalance_timeout_ms=details.rebalance_timeout_ms,
            session_timeout_ms=details.session_timeout_ms,
            protocol_type=details.protocol_type,
            protocols=details.protocols,
            is_new=True,
        )
        future = self._await_join(member)
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"adding new member {member_id}")
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)
        return future

    def _update_member_and_rebalance(self, group: Group, member: Member, details):
        member.protocols = details.protocols
        member.rebalance_timeout_ms = details.rebalance_timeout_ms
        member.session_timeout_ms = details.session_timeout_ms
        member.client_id = details.client_id
        member.client_host = details.client_host
        future = self._await_join(member)
        self._maybe_prepare_rebalance(group, f"updating metadata of member {member.member_id}")
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)
        return future

    # Rebalance machinery --------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, E.rebalance_in_progress)
        if group.join_timer is not None:
            group.join_timer.cancel()
        self._clear_pending_sync(group)
        loop = asyncio.get_running_loop()
        initial = group.is_in(GroupState.EMPTY)
        group.transition_to(GroupState.PREPARING_REBALANCE, now_ms())
        log.info(
            "preparing to rebalance group %s (generation %d): %s",
            group.group_id,
            group.generation_id,
            reason,
        )
        if initial:
            # A new group waits a little so that members starting together join one generation.
            delay = self.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            group.initial_join = True
            group.join_timer = loop.call_later(
                delay / 1000, self._initial_join_timer, group, remaining
            )
        else:
            group.initial_join = False
            group.join_timer = loop.call_later(
                group.rebalance_timeout_ms() / 1000, self._complete_join, group
            )

    def _initial_join_timer(self, group: Group, remaining_ms: int) -> None:
        group.join_timer = None
        if group.new_member_added and remaining_ms > 0:
            group.new_member_added = False
            delay = min(self.initial_rebalance_delay_ms, remaining_ms)
            group.join_timer = asyncio.get_running_loop().call_later(
                delay / 1000,
                self._initial_join_timer,
                group,
                max(remaining_ms - self.initial_rebalance_delay_ms, 0),
            )
            return
        self._complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if (
            group.is_in(GroupState.PREPARING_REBALANCE)
            and not group.initial_join
            and group.has_all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        group.initial_join = False
        if (
            not group.is_in(GroupState.PREPARING_REBALANCE)
            or self.groups.get(group.group_id) is not group
        ):
            return
        for member in group.not_yet_rejoined():
            if not member.is_static:  # static members get their session timeout to return
                self._cancel_heartbeat(member)
                group.remove(member.member_id)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait until session timeouts clear the silent members.
            group.join_timer = asyncio.get_running_loop().call_later(
                max(group.rebalance_timeout_ms(), 1) / 1000, self._complete_join, group
            )
            return
        group.init_next_generation(now_ms())
        if group.is_in(GroupState.EMPTY):
            log.info("group %s is empty at generation %d", group.group_id, group.generation_id)
            self._spawn(self._store_group(group, {}))
            return
        log.info(
            "group %s stabilizing generation %d (%s) with %d members",
            group.group_id,
            group.generation_id,
            group.protocol_name,
            len(group.members),
        )
        for member in group.members.values():
            member.complete_join(self._current_generation(group, member.member_id))
            self._schedule_heartbeat(group, member)
            member.is_new = False
        self._schedule_pending_sync(group)

    # Members that joined but never sync (Kafka's pending-sync expiry, KAFKA-13102) -----------
    def _schedule_pending_sync(self, group: Group) -> None:
        """Every member of the new generation owes a SyncGroup; those that still owe it after
        the rebalance timeout are removed, or a member that heartbeats but never syncs would
        hold the group (or its assigned partitions) forever."""
        self._clear_pending_sync(group)
        group.pending_sync = set(group.members)
        group.sync_timer = asyncio.get_running_loop().call_later(
            group.rebalance_timeout_ms() / 1000,
            self._pending_sync_expired,
            group,
            group.generation_id,
        )

    def _clear_pending_sync(self, group: Group) -> None:
        group.pending_sync.clear()
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    def _synced(self, group: Group, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            self._clear_pending_sync(group)

    def _pending_sync_expired(self, group: Group, generation_id: int) -> None:
        group.sync_timer = None
        if (
            self.groups.get(group.group_id) is not group
            or generation_id != group.generation_id
            or not group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
            or not group.pending_sync
        ):
            return
        missing = sorted(group.pending_sync)
        for member_id in missing:
            if group.has(member_id):
                self._cancel_heartbeat(group.get(member_id))
                group.remove(member_id)
        log.info(
            "group %s removed members that did not sync generation %d: %s",
            group.group_id,
            generation_id,
            ", ".join(missing),
        )
        self._prepare_rebalance(group, f"removing {len(missing)} members on pending sync expiry")

    def _reset_and_propagate_assignment_error(self, group: Group, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
            member.complete_sync(error)

    def _cancel_heartbeat(self, member: Member) -> None:
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
            member.heartbeat_timer = None

    def _remove_member_and_update_group(self, group: Group, member: Member) -> None:
        self._cancel_heartbeat(member)
        member.complete_join(JoinResult(E.unknown_member_id, member.member_id))
        member.complete_sync(E.unknown_member_id)
        group.remove(member.member_id)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"removing member {member.member_id}")
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)

    # SyncGroup ------------------------------------------------------------------------
    async def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> tuple[int, bytes, Group | None]:
        error = self.check_group(group_id)
        if error == E.coordinator_load_in_progress:
            # As Kafka: the rebalance's state is gone with the old coordinator, so the member
            # rejoins (older clients do not expect COORDINATOR_LOAD_IN_PROGRESS here).
            return E.rebalance_in_progress, b"", None
        if error:
            return error, b"", None
        group = self.groups.get(group_id)
        if group is None:
            return E.unknown_member_id, b"", None
        if group.is_in(GroupState.DEAD):
            return E.coordinator_not_available, b"", group
        if group.is_static_member_fenced(member_id, group_instance_id):
            return E.fenced_instance_id, b"", group
        if not group.has(member_id):
            return E.unknown_member_id, b"", group
        if generation_id != group.generation_id:
            return E.illegal_generation, b"", group
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return E.inconsistent_group_protocol, b"", group
        member = group.get(member_id)
        if group.is_in(GroupState.EMPTY):
            return E.unknown_member_id, b"", group
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return E.rebalance_in_progress, b"", group
        if group.is_in(GroupState.STABLE):
            self._synced(group, member_id)
            self._schedule_heartbeat(group, member)
            return E.none, member.assignment, group
        # CompletingRebalance: wait for the leader's assignment.
        if not member.is_awaiting_sync:
            member.sync_future = asyncio.get_running_loop().create_future()
        future = member.sync_future
        self._synced(group, member_id)
        if group.is_leader(member_id):
            complete = {m: assignments.get(m, b"") for m in group.members}
            generation = group.generation_id
            error = await self._store_group(group, complete)
            if group.is_in(GroupState.COMPLETING_REBALANCE) and generation == group.generation_id:
                if error:
                    self._reset_and_propagate_assignment_error(group, error)
                    self._maybe_prepare_rebalance(group, "storing the assignment failed")
                else:
                    for other in group.members.values():
                        other.assignment = complete[other.member_id]
                        other.complete_sync(E.none, other.assignment)
                        self._schedule_heartbeat(group, other)
                    group.transition_to(GroupState.STABLE, now_ms())
                    log.info(
                        "group %s is stable at generation %d",
                        group.group_id,
                        group.generation_id,
                    )
        error, assignment = await future
        return error, assignment, group

    # Heartbeat ------------------------------------------------------------------------
    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        error = self.check_group(group_id)
        if error == E.coordinator_load_in_progress:
            return E.none  # as Kafka: answered blindly until the group is loaded
        if error:
            return error
        group = self.groups.get(group_id)
        if group is None:
            return E.unknown_member_id
        if group.is_in(GroupState.DEAD):
            return E.coordinator_not_available
        if group.is_static_member_fenced(member_id, group_instance_id):
            return E.fenced_instance_id
        if not group.has(member_id):
            return E.unknown_member_id
        if generation_id != group.generation_id:
            return E.illegal_generation
        if group.is_in(GroupState.EMPTY):
            return E.unknown_member_id
        self._schedule_heartbeat(group, group.get(member_id))
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return E.rebalance_in_progress
        return E.none

    # LeaveGroup -----------------------------------------------------------------------
    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        error = self.check_group(group_id)
        if error:
            return error, []
        group = self.groups.get(group_id)
        if group is None:
            return E.none, [(m, i, E.unknown_member_id) for m, i in leaving]
        if group.is_in(GroupState.DEAD):
            return E.coordinator_not_available, []
        results = []
        for member_id, instance_id in leaving:
            results.append((member_id, instance_id, self._leave(group, member_id, instance_id)))
        return E.none, results

    def _leave(self, group: Group, member_id: str, instance_id: str | None) -> int:
        if instance_id is not None:
            registered = group.static_member_id(instance_id)
            if registered is None:
                return E.unknown_member_id
            if member_id != UNKNOWN_MEMBER_ID and member_id != registered:
                return E.fenced_instance_id
            self._remove_member_and_update_group(group, group.get(registered))
            return E.none
        if member_id in group.pending_members:
            timer = group.pending_timers.pop(member_id, None)
            if timer is not None:
                timer.cancel()
            group.pending_members.discard(member_id)
            if group.is_in(GroupState.PREPARING_REBALANCE):
                self._maybe_complete_join(group)
            return E.none
        if not group.has(member_id):
            return E.unknown_member_id
        self._remove_member_and_update_group(group, group.get(member_id))
        return E.none

    # OffsetCommit ---------------------------------------------------------------------
    async def commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        retention_ms: int,
        offsets: dict[tuple[str, int], tuple[int, int, str | None]],
    ) -> dict[tuple[str, int], int]:
        """Per partition error for (offset, leader epoch, metadata) commits."""

        def every(code: int) -> dict[tuple[str, int], int]:
            return dict.fromkeys(offsets, code)

        error = self.check_group(group_id, allow_empty_id=True)
        if error:
            return every(error)
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return every(E.illegal_generation)
            group = self.groups[group_id] = Group(group_id, state_timestamp_ms=now_ms())
        if group.is_in(GroupState.DEAD):
            return every(E.coordinator_not_available)
        if group.is_static_member_fenced(member_id, group_instance_id):
            return every(E.fenced_instance_id)
        if not (generation_id < 0 and group.is_in(GroupState.EMPTY)):
            if not group.has(member_id):
                return every(E.unknown_member_id)
            if generation_id != group.generation_id:
                return every(E.illegal_generation)
            if group.is_in(GroupState.COMPLETING_REBALANCE):
                return every(E.rebalance_in_progress)
            self._schedule_heartbeat(group, group.get(member_id))
        return await self._store_offsets(group, retention_ms, offsets)

    async def _store_offsets(self, group: Group, retention_ms: int, offsets) -> dict:
        results: dict[tuple[str, int], int] = {}
        values: dict[tuple[str, int], OffsetValue] = {}
        timestamp = now_ms()
        for (topic, partition), (offset, leader_epoch, metadata) in offsets.items():
            metadata = metadata or ""
            if len(metadata.encode("utf-8")) > self.metadata_max_bytes:
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
            if not error and self.groups.get(group.group_id) is group:
                group.offsets.update(values)
            for key in values:
                results[key] = error
        return results

    # OffsetFetch ----------------------------------------------------------------------
    def fetch_offsets(
        self, group_id: str, partitions: list[tuple[str, int]] | None
    ) -> tuple[int, dict[tuple[str, int], OffsetValue | None]]:
        error = self.check_group(group_id, allow_empty_id=True)
        if error:
            return error, {}
        group = self.groups.get(group_id)
        stored = group.offsets if group is not None else {}
        if partitions is None:
            return E.none, dict(stored)
        return E.none, {tp: stored.get(tp) for tp in partitions}

    # ListGroups / DescribeGroups --------------------------------------------------------------
    def list_groups(self) -> tuple[int, list[GroupOverview]]:
        error = E.coordinator_load_in_progress if self.loading else E.none
        return error, [
            GroupOverview(g.group_id, g.protocol_type or "", g.state.value)
            for g in self.groups.values()
            if not g.is_in(GroupState.DEAD) and self.partition_for(g.group_id) in self.owned
        ]

    def describe_group(self, group_id: str) -> tuple[int, Group | None]:
        error = self.check_group(group_id, allow_empty_id=True)
        if error:
            return error, None
        return E.none, self.groups.get(group_id)

    # DeleteGroups / OffsetDelete ----------------------------------------------------------
    async def delete_group(self, group_id: str) -> int:
        error = self.check_group(group_id, allow_empty_id=True)
        if error:
            return error
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return E.group_id_not_found
        if not group.is_in(GroupState.EMPTY):
            return E.non_empty_group
        tombstones = [
            (offsets_topic.offset_key(group_id, topic, partition), None)
            for topic, partition in group.offsets
        ]
        tombstones.append((offsets_topic.group_key(group_id), None))
        error = await self._append(group_id, tombstones)
        if error:
            return error
        if self.groups.get(group_id) is group and group.is_in(GroupState.EMPTY):
            group.transition_to(GroupState.DEAD, now_ms())
            self._cancel_group_timers(group)
            del self.groups[group_id]
        return E.none

    async def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> tuple[int, dict[tuple[str, int], int]]:
        error = self.check_group(group_id)
        if error:
            return error, {}
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return E.group_id_not_found, {}
        results: dict[tuple[str, int], int] = {}
        if group.is_in(GroupState.EMPTY):
            doomed = list(partitions)
        else:
            subscribed = group.subscribed_topics()
            if subscribed is None:
                return E.non_empty_group, {}
            doomed = [tp for tp in partitions if tp[0] not in subscribed]
            for tp in partitions:
                if tp[0] in subscribed:
                    results[tp] = E.group_subscribed_to_topic
        error = await self._remove_offsets(group, [tp for tp in doomed if tp in group.offsets])
        for tp in doomed:
            results[tp] = error
        return E.none, results

    async def _remove_offsets(self, group: Group, doomed: list[tuple[str, int]]) -> int:
        """Tombstone offsets; an empty group left without offsets dies with them."""
        records: list[tuple[bytes, bytes | None]] = [
            (offsets_topic.offset_key(group.group_id, topic, partition), None)
            for topic, partition in doomed
        ]
        dies = group.is_in(GroupState.EMPTY) and not (set(group.offsets) - set(doomed))
        if dies:
            records.append((offsets_topic.group_key(group.group_id), None))
        if not records:
            return E.none
        error = await self._append(group.group_id, records)
        if error:
            return error
        for tp in doomed:
            group.offsets.pop(tp, None)
        if dies and group.is_in(GroupState.EMPTY) and not group.offsets:
            group.transition_to(GroupState.DEAD, now_ms())
            self._cancel_group_timers(group)
            if self.groups.get(group.group_id) is group:
                del self.groups[group.group_id]
        return E.none

    # Offset expiry --------------------------------------------------------------------
    async def _expire_periodically(self) -> None:
        while True:
            await asyncio.sleep(min(self.retention_check_ms, 1 << 31) / 1000)
            try:
                await self.expire_offsets()
            except Exception:
                log.exception("expiring committed offsets failed")

    async def expire_offsets(self, now: int | None = None) -> int:
        """Tombstone expired offsets (KIP-211 rules); returns how many expired."""
        now = now_ms() if now is None else now
        expired_total = 0
        for group in list(self.groups.values()):
            if self.partition_for(group.group_id) not in self.owned:
                continue
            expired = self._expired_offsets(group, now)
            if expired or (group.is_in(GroupState.EMPTY) and not group.offsets):
                if not await self._remove_offsets(group, expired):
                    expired_total += len(expired)
        return expired_total

    def _expired_offsets(self, group: Group, now: int) -> list[tuple[str, int]]:
        def expired(value: OffsetValue, base: int) -> bool:
            if value.expire_timestamp >= 0:
                return now >= value.expire_timestamp
            return now >= base + self.retention_ms

        if group.protocol_type is None and group.is_in(GroupState.EMPTY):
            # Offsets-only group: each offset ages from its own commit.
            return [tp for tp, v in group.offsets.items() if expired(v, v.commit_timestamp)]
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


@dataclass(frozen=True)
class _JoinDetails:
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    supports_skip_assignment: bool


def _read_partition(partition_log) -> list[tuple[OffsetKey | GroupKey, object]]:
    """Every decodable record up to the log end, in log order (off the loop).

    To the LEO, not the HW, as Kafka loads: a new leader's HW trails the old leader's until
    its followers fetch again, yet everything in its log is kept (followers truncate to
    it), including commits the old leader acknowledged."""
    out = []
    end = partition_log.log_end_offset
    for entry in partition_log.read_batches(partition_log.log_start_offset, end):
        if getattr(entry, "is_control", False):
            continue
        for record in entry:
            if record.offset >= end:
                break
            try:
                out.append(offsets_topic.decode_record(record.key, record.value))
            except offsets_topic.RecordFormatError as exc:
                log.warning(
                    "skipping unreadable record at offset %d of %s: %s",
                    record.offset,
                    offsets_topic.TOPIC,
                    exc,
                )
    return out
