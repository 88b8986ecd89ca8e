"""The group coordinator: Kafka's classic group protocol (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, and the checks of the offset and group admin requests).

The rules follow Kafka's GroupCoordinator: who may join, when a rebalance starts and
completes, which generation and member fencing errors each request gets. What must survive
a failover (generations, assignments, commits, deletions) is written by the
GroupMetadataManager, which also loads and drops groups as this broker gains and loses
leadership of `__consumer_offsets` partitions. Everything runs on the event loop; timers are
loop timers (heartbeat expiry, join completion, initial delay, pending sync).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from brokerd.config import GroupCoordinatorConfig
from brokerd.coordinator_partitions import TopicView
from brokerd.protocol.errors import ErrorCode
from brokerd.util.background import BackgroundTasks

from . import consumer_group_records, offsets_topic
from .consumer_group_coordinator import CONSUMER_PROTOCOL_TYPE, ConsumerGroups
from .group import Group, GroupState, JoinResult, Member
from .heartbeats import NEW_MEMBER_JOIN_TIMEOUT_MS, HeartbeatTimers
from .metadata_manager import (
    GroupMetadataManager,
    OffsetCommit,
    TopicPartition,
    now_ms,
)
from .offsets_topic import OffsetValue

log = logging.getLogger(__name__)

UNKNOWN_MEMBER_ID = ""

E = ErrorCode


# OffsetFetch with require_stable: this partition's offset awaits a transaction's marker
# (answered UNSTABLE_OFFSET_COMMIT, compared by identity).
UNSTABLE_OFFSET = OffsetValue(-1, "", -1)


@dataclass(frozen=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"  # or "consumer" (KIP-848)


class GroupCoordinator:
    def __init__(self, manager: GroupMetadataManager, config: GroupCoordinatorConfig):
        self.manager = manager
        self.config = config
        self.active = False
        self._tasks = BackgroundTasks(log, "group coordinator task failed")
        self.heartbeats = HeartbeatTimers(
            manager.is_current,
            on_member_expired=self._remove_member_and_update_group,
            on_pending_member_expired=self._remove_pending_member,
        )
        # The consumer group protocol (KIP-848) on the same groups and offsets.
        self.consumer = ConsumerGroups(
            manager, config, self.check_group, on_downgraded=self._on_downgraded
        )

    # Lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        self.active = True
        self.manager.start()
        # The listeners open before the broker registers, and a controller still counting
        # its previous registration may already have made it a leader: changes before now
        # were not acted on, so load what it leads (later changes at a new epoch are not
        # gains, and would never load it).
        led = [(offsets_topic.TOPIC, p) for p in self.manager.led_partitions()]
        self.on_leadership_change(led, ())

    async def shutdown(self) -> None:
        self.active = False
        self.manager.shutdown(self._on_group_unloaded)
        self._tasks.cancel_all()

    # The offsets topic ----------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        return self.manager.partition_for(group_id)

    async def ensure_offsets_topic(self) -> TopicView | None:
        return await self.manager.ensure_offsets_topic()

    def coordinator_for(self, group_id: str) -> int | None:
        return self.manager.coordinator_for(group_id)

    # Leadership of offsets partitions ---------------------------------------------------
    def on_leadership_change(self, gained: Iterable[tuple[str, int]], lost: Iterable) -> None:
        for topic, partition in lost:
            if topic == offsets_topic.TOPIC:
                self.manager.remove_groups_for_partition(partition, self._on_group_unloaded)
        for topic, partition in gained:
            if topic == offsets_topic.TOPIC and self.active:
                self.manager.schedule_load(partition, self._on_group_loaded)

    def _on_downgraded(self, group: Group) -> None:
        """A consumer group turned classic: time its members, then rebalance (they rejoin
        with JoinGroup and the leader assigns, as after Kafka's convertToClassicGroup)."""
        for member in group.members.values():
            self.heartbeats.schedule(group, member)
        self._prepare_rebalance(group, f"downgrade of group {group.group_id} from consumer")

    def _on_group_loaded(self, group: Group) -> None:
        for member in group.members.values():
            self.heartbeats.schedule(group, member)
        self.consumer.on_loaded(group)

    def _on_group_unloaded(self, group: Group) -> None:
        # Members parked in JoinGroup/SyncGroup look for the new coordinator.
        for member in group.members.values():
            member.complete_join(JoinResult(E.not_coordinator, member.member_id))
            member.complete_sync(E.not_coordinator)

    # Validation -----------------------------------------------------------------------
    def check_group(self, group_id: str | None, allow_empty_id: bool = False) -> int:
        """NONE, or why this broker cannot answer for the group now."""
        if group_id is None or (not group_id and not allow_empty_id):
            return E.invalid_group_id
        if not self.active:
            return E.coordinator_not_available
        if self.manager.is_group_loading(group_id):
            return E.coordinator_load_in_progress
        if not self.manager.is_group_local(group_id):
            return E.not_coordinator
        return E.none

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
        config = self.config
        if not (
            config.group_min_session_timeout_ms
            <= session_timeout_ms
            <= config.group_max_session_timeout_ms
        ):
            return JoinResult(E.invalid_session_timeout, member_id)
        group = self.manager.get_group(group_id)
        if group is None:
            if member_id != UNKNOWN_MEMBER_ID:
                return JoinResult(E.unknown_member_id, member_id)
            group = self.manager.add_group(Group(group_id, state_timestamp_ms=now_ms()))
        if group.consumer is not None:
            if group.consumer.members:
                # A classic member joins a consumer group with members as one of them
                # (Kafka 4's mixed groups): assigned server-side, generation = its epoch.
                return await self.consumer.classic_join(
                    group,
                    member_id,
                    group_instance_id,
                    client_id,
                    client_host,
                    session_timeout_ms,
                    rebalance_timeout_ms,
                    protocol_type,
                    protocols,
                    require_known_member_id,
                )
            # An empty consumer group becomes a classic group again, as in Kafka: its
            # records are tombstoned (maybeDeleteEmptyConsumerGroup).
            self.manager.append_now(
                group.group_id, consumer_group_records.group_tombstones(group.consumer)
            )
            group.consumer = None
            group.protocol_type = None
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
            ) or group.num_awaiting_join() < self.config.group_max_size
        return group.has(member_id) or len(group.members) < self.config.group_max_size

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
            self.heartbeats.schedule_pending(group, new_member_id, details.session_timeout_ms)
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
        self.heartbeats.schedule(group, member)
        if group.is_in(GroupState.STABLE):
            if group.select_protocol() != group.protocol_name:
                future = self._await_join(member)
                self._maybe_prepare_rebalance(group, "static member changed protocols")
                return future
            error = await self.manager.store_group(
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
            self.heartbeats.cancel_pending(group, member_id)
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
        future = member.join_future
        if future is None or future.done():  # a duplicate JoinGroup shares the pending answer
            future = member.join_future = asyncio.get_running_loop().create_future()
        return future

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
        self.heartbeats.schedule(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
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
        group.clear_pending_sync()
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
            delay = self.config.group_initial_rebalance_delay_ms
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
            delay = min(self.config.group_initial_rebalance_delay_ms, remaining_ms)
            group.join_timer = asyncio.get_running_loop().call_later(
                delay / 1000,
                self._initial_join_timer,
                group,
                max(remaining_ms - self.config.group_initial_rebalance_delay_ms, 0),
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
        if not group.is_in(GroupState.PREPARING_REBALANCE) or not self.manager.is_current(group):
            return
        for member in group.not_yet_rejoined():
            if not member.is_static:  # static members get their session timeout to return
                self.heartbeats.cancel(member)
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
            self._tasks.spawn(self.manager.store_group(group, {}))
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
            self.heartbeats.schedule(group, member)
            member.is_new = False
        self._schedule_pending_sync(group)

    # Members that joined but never sync (Kafka's pending-sync expiry, KAFKA-13102) -----------
    def _schedule_pending_sync(self, group: Group) -> None:
        """Every member of the new generation owes a SyncGroup; those that still owe it after
        the rebalance timeout are removed, or a member that heartbeats but never syncs would
        hold the group (or its assigned partitions) forever."""
        group.clear_pending_sync()
        group.pending_sync = set(group.members)
        group.sync_timer = asyncio.get_running_loop().call_later(
            group.rebalance_timeout_ms() / 1000,
            self._pending_sync_expired,
            group,
            group.generation_id,
        )

    def _synced(self, group: Group, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            group.clear_pending_sync()

    def _pending_sync_expired(self, group: Group, generation_id: int) -> None:
        group.sync_timer = None
        if (
            not self.manager.is_current(group)
            or generation_id != group.generation_id
            or not group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
            or not group.pending_sync
        ):
            return
        missing = sorted(group.pending_sync)
        for member_id in missing:
            if group.has(member_id):
                self.heartbeats.cancel(group.get(member_id))
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

    def _remove_pending_member(self, group: Group, member_id: str) -> None:
        """A member id handed out with MEMBER_ID_REQUIRED is no longer waited for."""
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            if group.is_in(GroupState.PREPARING_REBALANCE):
                self._maybe_complete_join(group)

    def _remove_member_and_update_group(self, group: Group, member: Member) -> None:
        self.heartbeats.cancel(member)
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
        group = self.manager.get_group(group_id)
        if group is None:
            return E.unknown_member_id, b"", None
        if group.consumer is not None:
            error, assignment = self.consumer.classic_sync(
                group, member_id, group_instance_id, generation_id, protocol_type, protocol_name
            )
            return error, assignment, group
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
            self.heartbeats.schedule(group, member)
            return E.none, member.assignment, group
        # CompletingRebalance: wait for the leader's assignment.
        future = member.sync_future
        if future is None or future.done():
            future = member.sync_future = asyncio.get_running_loop().create_future()
        self._synced(group, member_id)
        if group.is_leader(member_id):
            complete = {m: assignments.get(m, b"") for m in group.members}
            generation = group.generation_id
            error = await self.manager.store_group(group, complete)
            if group.is_in(GroupState.COMPLETING_REBALANCE) and generation == group.generation_id:
                if error:
                    self._reset_and_propagate_assignment_error(group, error)
                    self._maybe_prepare_rebalance(group, "storing the assignment failed")
                else:
                    for other in group.members.values():
                        other.assignment = complete[other.member_id]
                        other.complete_sync(E.none, other.assignment)
                        self.heartbeats.schedule(group, other)
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
        group = self.manager.get_group(group_id)
        if group is None:
            return E.unknown_member_id
        if group.consumer is not None:
            return self.consumer.classic_heartbeat(
                group, member_id, group_instance_id, generation_id
            )
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
        self.heartbeats.schedule(group, group.get(member_id))
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
        group = self.manager.get_group(group_id)
        if group is None:
            return E.none, [(m, i, E.unknown_member_id) for m, i in leaving]
        if group.is_in(GroupState.DEAD):
            return E.coordinator_not_available, []
        results = []
        for member_id, instance_id in leaving:
            if group.consumer is not None:
                error = self.consumer.classic_leave(group, member_id, instance_id)
            else:
                error = self._leave(group, member_id, instance_id)
            results.append((member_id, instance_id, error))
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
            self.heartbeats.cancel_pending(group, member_id)
            self._remove_pending_member(group, member_id)
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
        offsets: dict[TopicPartition, OffsetCommit],
    ) -> dict[TopicPartition, int]:
        """Per partition error for (offset, leader epoch, metadata) commits."""

        def every(code: int) -> dict[TopicPartition, int]:
            return dict.fromkeys(offsets, code)

        error = self.check_group(group_id, allow_empty_id=True)
        if error:
            return every(error)
        group = self.manager.get_group(group_id)
        if group is None:
            if generation_id >= 0:
                return every(E.illegal_generation)
            group = self.manager.add_group(Group(group_id, state_timestamp_ms=now_ms()))
        if group.is_in(GroupState.DEAD):
            return every(E.coordinator_not_available)
        if group.consumer is not None:
            # A consumer group: generation_id is the member epoch (KIP-848).
            error = self.consumer.validate_commit(group, member_id, generation_id)
            if error:
                return every(error)
            return await self.manager.store_offsets(group, retention_ms, offsets)
        if group.is_static_member_fenced(member_id, group_instance_id):
            return every(E.fenced_instance_id)
        if not (generation_id < 0 and group.is_in(GroupState.EMPTY)):
            if not group.has(member_id):
                return every(E.unknown_member_id)
            if generation_id != group.generation_id:
                return every(E.illegal_generation)
            if group.is_in(GroupState.COMPLETING_REBALANCE):
                return every(E.rebalance_in_progress)
            self.heartbeats.schedule(group, group.get(member_id))
        return await self.manager.store_offsets(group, retention_ms, offsets)

    # TxnOffsetCommit ------------------------------------------------------------------
    async def commit_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: dict[TopicPartition, OffsetCommit],
    ) -> dict[TopicPartition, int]:
        """Kafka's handleTxnCommitOffsets: the member checks of a commit (a producer that is
        no member commits with the unknown member id and generation -1), then the offsets
        are written in the producer's transaction and held until its marker."""

        def every(code: int) -> dict[TopicPartition, int]:
            return dict.fromkeys(offsets, code)

        error = self.check_group(group_id)
        if error:
            return every(error)
        group = self.manager.get_group(group_id)
        if group is None:
            group = self.manager.add_group(Group(group_id, state_timestamp_ms=now_ms()))
        if group.is_in(GroupState.DEAD):
            return every(E.coordinator_not_available)
        if group.consumer is not None:
            error = (
                self.consumer.validate_commit(group, member_id, generation_id)
                if member_id != UNKNOWN_MEMBER_ID
                else E.none
            )
            if error:
                return every(error)
            return await self.manager.store_txn_offsets(group, producer_id, producer_epoch, offsets)
        if group.is_static_member_fenced(member_id, group_instance_id):
            return every(E.fenced_instance_id)
        if member_id != UNKNOWN_MEMBER_ID and not group.has(member_id):
            return every(E.unknown_member_id)
        if generation_id >= 0 and generation_id != group.generation_id:
            return every(E.illegal_generation)
        return await self.manager.store_txn_offsets(group, producer_id, producer_epoch, offsets)

    def on_txn_completion(
        self, producer_id: int, offsets_partitions: Iterable[int], commit: bool
    ) -> None:
        """The hook for the WriteTxnMarkers handler (Kafka's scheduleHandleTxnCompletion):
        once a marker of `producer_id` is written on these `__consumer_offsets` partitions,
        its transactional offset commits there become visible (COMMIT) or are dropped."""
        self.manager.complete_txn(producer_id, offsets_partitions, commit)

    def has_pending_txn_offsets(self, group_id: str, partition: TopicPartition) -> bool:
        """A transaction's offset for the partition awaits its marker (OffsetFetch with
        require_stable answers UNSTABLE_OFFSET_COMMIT then)."""
        return self.manager.has_pending_txn_offsets(group_id, partition)

    # OffsetFetch ----------------------------------------------------------------------
    def fetch_offsets(
        self,
        group_id: str,
        partitions: list[TopicPartition] | None,
        require_stable: bool = False,
    ) -> tuple[int, dict[TopicPartition, OffsetValue | None]]:
        """The group's commits; with require_stable (KIP-447), a partition whose offset a
        transaction still holds pending maps to UNSTABLE_OFFSET (the client retries)."""
        error = self.check_group(group_id, allow_empty_id=True)
        if error:
            return error, {}
        offsets = self.manager.get_offsets(group_id, partitions)
        if require_stable:
            for tp in offsets:
                if self.manager.has_pending_txn_offsets(group_id, tp):
                    offsets[tp] = UNSTABLE_OFFSET
        return E.none, offsets

    # ListGroups / DescribeGroups ------------------------------------------------------
    def list_groups(self) -> tuple[int, list[GroupOverview]]:
        error = E.coordinator_load_in_progress if self.manager.is_loading else E.none
        return error, [_overview(g) for g in self.manager.current_groups()]

    def describe_group(self, group_id: str) -> tuple[int, Group | None]:
        error = self.check_group(group_id, allow_empty_id=True)
        if error:
            return error, None
        return E.none, self.manager.get_group(group_id)

    # DeleteGroups / OffsetDelete ------------------------------------------------------
    async def delete_group(self, group_id: str) -> int:
        error = self.check_group(group_id, allow_empty_id=True)
        if error:
            return error
        group = self.manager.get_group(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return E.group_id_not_found
        if not group.is_in(GroupState.EMPTY) or group.has_active_members():
            return E.non_empty_group
        return await self.manager.delete_group(group)

    async def delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, int]]:
        error = self.check_group(group_id)
        if error:
            return error, {}
        group = self.manager.get_group(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return E.group_id_not_found, {}
        results: dict[TopicPartition, int] = {}
        if group.is_in(GroupState.EMPTY) and not group.has_active_members():
            doomed = list(partitions)
        else:
            subscribed = (
                group.consumer.subscribed_topics()
                if group.consumer is not None
                else group.subscribed_topics()
            )
            if subscribed is None:
                return E.non_empty_group, {}
            doomed = [tp for tp in partitions if tp[0] not in subscribed]
            for tp in partitions:
                if tp[0] in subscribed:
                    results[tp] = E.group_subscribed_to_topic
        error = await self.manager.remove_offsets(
            group, [tp for tp in doomed if tp in group.offsets]
        )
        for tp in doomed:
            results[tp] = error
        return E.none, results


def _overview(group: Group) -> GroupOverview:
    if group.consumer is not None:
        return GroupOverview(
            group.group_id, CONSUMER_PROTOCOL_TYPE, group.consumer.state.value, "consumer"
        )
    return GroupOverview(group.group_id, group.protocol_type or "", group.state.value)


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
