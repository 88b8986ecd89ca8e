"""ConsumerGroupHeartbeat (KIP-848): joining, leaving, fencing and reconciling the members of
consumer groups of the new protocol, as Kafka's GroupMetadataManager.consumerGroupHeartbeat.

A consumer group lives on the same `Group` object as a classic group would (its `consumer`
part), so the offsets, loading, unloading, expiry and deletion of GroupMetadataManager serve
both kinds. Every change of a group (members, subscriptions, epochs, target and current
assignments) is written to `__consumer_offsets` in Kafka's consumer group records
(consumer_group_records) before the heartbeat that made it is answered, appended in the
order the changes were made; a coordinator that takes the partition over rebuilds the group
from them, and the members go on with their epochs and partitions.

Timers are loop timers: a member's session (group.consumer.session.timeout.ms, renewed by
each heartbeat) and, while it is asked to revoke partitions, its rebalance timeout; either
expiring fences the member out and the group is assigned again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from brokerd.config import GroupCoordinatorConfig
from brokerd.protocol.errors import ErrorCode

from . import consumer_group_records, offsets_topic
from .assignors import Assignment, configured_assignors
from .consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from .consumer_group_classic import ClassicMetadata, encode_assignment, parse_subscription
from .group import Group, GroupState, JoinResult, Member, parse_assignment
from .metadata_manager import CONSUMER_PROTOCOL_TYPE, GroupMetadataManager, now_ms

log = logging.getLogger(__name__)

E = ErrorCode
__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "ConsumerGroups",
    "HeartbeatRequest",
    "HeartbeatResult",
    "heartbeat_write_error",
]


@dataclass(frozen=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed: tuple[str, ...] | None = None
    # None: unchanged; "": no regex (librdkafka sends it so); else the regex. A member's
    # regex is matched against the topics by `match_topics` (the caller sees the metadata).
    subscribed_regex: str | None = None
    match_topics: Callable[[str], Iterable[str]] | None = None
    server_assignor: str | None = None
    owned: Mapping[str, frozenset[int]] | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1
    # The group's own consumer.session.timeout.ms / consumer.heartbeat.interval.ms (the
    # GROUP config resource), None for the broker's group.consumer.* defaults.
    session_timeout_ms: int | None = None
    heartbeat_interval_ms: int | None = None


@dataclass(frozen=True)
class HeartbeatResult:
    error: int
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None
    # The outcome of writing what the heartbeat changed (NONE or the error), None when it
    # changed nothing: the answer waits for it.
    written: asyncio.Future[int] | None = None


def heartbeat_write_error(code: int) -> int:
    """Kafka's GroupCoordinatorService.handleOperationException for a failed write."""
    if code in (E.request_timed_out, E.not_enough_replicas, E.unknown_topic_or_partition):
        return E.coordinator_not_available
    if code in (E.invalid_commit_offset_size, E.message_too_large, E.record_list_too_large):
        return E.unknown_server_error
    return code


class ConsumerGroups:
    def __init__(
        self,
        manager: GroupMetadataManager,
        config: GroupCoordinatorConfig,
        check_group: Callable[[str], int],
        on_downgraded: Callable[[Group], None] = lambda group: None,
    ):
        self.manager = manager
        self.config = config
        self.check_group = check_group
        # Given a group just turned classic again: the classic coordinator times its
        # members and starts a rebalance (Kafka's convertToClassicGroup).
        self.on_downgraded = on_downgraded
        self.assignors = configured_assignors(config.group_consumer_assignors)

    # Settings: the group's configs if it has them, else the broker's ---------------------
    def session_timeout_ms(self, req: HeartbeatRequest) -> int:
        if req.session_timeout_ms is not None:
            return req.session_timeout_ms
        return self.config.group_consumer_session_timeout_ms

    def heartbeat_interval_ms(self, req: HeartbeatRequest) -> int:
        if req.heartbeat_interval_ms is not None:
            return req.heartbeat_interval_ms
        return self.config.group_consumer_heartbeat_interval_ms

    def _partition_counts(self, topics: set[str]) -> dict[str, int]:
        counts = {}
        for name in topics:
            view = self.manager.metadata.topic(name)
            if view is not None and view.partition_count > 0:
                counts[name] = view.partition_count
        return counts

    # Writing the groups' records --------------------------------------------------------
    def _store(self, group: Group, touched: Iterable[str] = ()) -> asyncio.Future[int] | None:
        """Append what changed in the group's consumer part since it was last written (at
        once: records land in the order of the changes); None when nothing did."""
        cg = group.consumer
        if cg is None or not self.manager.is_current(group):
            return None
        members_before = set(cg.persisted_members)
        records = consumer_group_records.records_to_store(cg, self.manager.topic_id_of, touched)
        if not records:
            return None
        return self._append(group, cg, records, members_before)

    def _append(
        self,
        group: Group,
        cg: ConsumerGroup,
        records: list[tuple[bytes, bytes | None]],
        members_before: set[str],
    ) -> asyncio.Future[int]:
        """Append the group's records, marked written by records_to_store: should the
        append fail, the group's next write is a full one (nothing lost is left unwritten
        behind later writes of differences)."""
        written = self.manager.append_now(group.group_id, records)

        def on_done(future: asyncio.Future[int]) -> None:
            if future.cancelled() or future.result() != E.none:
                if group.consumer is cg:
                    consumer_group_records.write_failed(cg, members_before, records)

        if written.done():  # refused at once: the next write (maybe soon) is a full one
            on_done(written)
        else:
            written.add_done_callback(on_done)
        return written

    def on_loaded(self, group: Group) -> None:
        """A consumer group read from `__consumer_offsets`: its members' timers start again
        (the broker's session timeout until their next heartbeat brings the group's own)."""
        cg = group.consumer
        if cg is None:
            return
        cg.default_assignor = self.assignors[0]
        for member in cg.members.values():
            self._schedule(group, member, self.config.group_consumer_session_timeout_ms)

    # ConsumerGroupHeartbeat -------------------------------------------------------------
    def heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        result = self._heartbeat(req)
        group = self.manager.get_group(req.group_id)
        if group is None or (result.error and result.member_id is None):
            return result
        written = self._store(group, [result.member_id or req.member_id])
        if written is None:
            return result
        return dataclasses.replace(result, written=written)

    def _heartbeat(self, req: HeartbeatRequest) -> HeartbeatResult:
        invalid = self._invalid(req)
        if invalid is not None:
            return HeartbeatResult(E.invalid_request, invalid)
        error = self.check_group(req.group_id)
        if error:
            return HeartbeatResult(error)
        if req.server_assignor is not None and req.server_assignor not in self.assignors:
            return HeartbeatResult(
                E.unsupported_assignor, f"Assignor {req.server_assignor} is not supported."
            )
        group = self.manager.get_group(req.group_id)
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(group, req)
        if group is None:
            if req.member_epoch != 0:
                return HeartbeatResult(
                    E.unknown_member_id, f"Group {req.group_id} has no member {req.member_id}."
                )
            group = self.manager.add_group(Group(req.group_id, state_timestamp_ms=now_ms()))
        if group.consumer is None and (group.members or group.pending_members):
            # A classic group with members: upgraded to a consumer group whose classic
            # members go on as such (Kafka's convertToConsumerGroup), where the migration
            # policy allows it; else Kafka's answer.
            if refused := self._upgrade_refused(group):
                return HeartbeatResult(E.group_id_not_found, refused)
            self._upgrade(group)
        if group.consumer is None:
            if group.protocol_type is not None:
                # An empty classic group with a record: deleted (a tombstone) as it becomes
                # a consumer group (Kafka's maybeDeleteEmptyClassicGroup).
                self.manager.append_now(
                    group.group_id, [(offsets_topic.group_key(group.group_id), None)]
                )
            group.consumer = ConsumerGroup(req.group_id, default_assignor=self.assignors[0])
            group.protocol_type = CONSUMER_PROTOCOL_TYPE
        cg = group.consumer
        member, error_result = self._member_for(cg, req)
        if error_result is not None:
            return error_result
        assert member is not None
        before = (member.member_epoch, member.assigned)
        self._assign_if_changed(cg, member, req)
        cg.reconcile(member, req.owned)
        self._schedule(group, member, self.session_timeout_ms(req))
        full = req.member_epoch == 0 or (
            req.rebalance_timeout_ms != -1
            and (req.subscribed is not None or bool(req.subscribed_regex))
            and req.owned is not None
        )
        changed = (member.member_epoch, member.assigned) != before
        return HeartbeatResult(
            E.none,
            None,
            member.member_id,
            member.member_epoch,
            self.heartbeat_interval_ms(req),
            member.assigned if full or changed else None,
        )

    # Upgrading a classic group (KIP-848 online migration) ------------------------------------
    def _upgrade_refused(self, group: Group) -> str | None:
        """Why the classic group cannot become a consumer group (validateOnlineUpgrade)."""
        if not self.config.consumer_group_upgrade_enabled:
            return f"Group {group.group_id} is not a consumer group (online upgrade disabled)."
        if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return (
                f"Group {group.group_id} is not a consumer group (it does not use the consumer "
                "embedded protocol)."
            )
        if len(group.members) > self.config.group_consumer_max_size:
            return f"Group {group.group_id} is not a consumer group (too many members)."
        return None

    def _upgrade(self, group: Group) -> None:
        """A live classic group becomes a consumer group (ConsumerGroup.fromClassicGroup):
        its members keep their last assignment as both current and target, at the classic
        generation as group, assignment and member epoch, and go on as classic members of
        it (JoinGroup/SyncGroup/Heartbeat answered by the mixed-group path). Members waiting
        in a join or sync are told REBALANCE_IN_PROGRESS and rejoin. The classic record is
        tombstoned and the consumer group's records written, in one append."""
        generation = group.generation_id
        cg = ConsumerGroup(group.group_id, default_assignor=self.assignors[0])
        cg.group_epoch = cg.assignment_epoch = generation
        for old in group.members.values():
            try:
                subscription = parse_subscription(old.metadata(group.protocol_name))
            except ValueError:
                subscription = None
            assigned: Assignment = {
                t: frozenset(p) for t, p in parse_assignment(old.assignment).items() if p
            }
            member = ConsumerMember(
                old.member_id,
                client_id=old.client_id,
                client_host=old.client_host,
                instance_id=old.group_instance_id,
                rack_id=subscription.rack_id if subscription is not None else None,
                rebalance_timeout_ms=old.rebalance_timeout_ms,
                subscribed=tuple(sorted(set(subscription.topics))) if subscription else (),
                member_epoch=generation,
                previous_member_epoch=generation,
                assigned=assigned,
                classic=ClassicMetadata(old.session_timeout_ms, list(old.protocols)),
            )
            cg.members[member.member_id] = member
            cg.target[member.member_id] = dict(assigned)
            old.complete_join(JoinResult(E.rebalance_in_progress, old.member_id))
            old.complete_sync(E.rebalance_in_progress)
        group.cancel_timers()
        group.members.clear()
        group.pending_members.clear()
        group.static_members.clear()
        group.leader_id = None
        group.state = GroupState.EMPTY
        group.consumer = cg
        group.protocol_type = CONSUMER_PROTOCOL_TYPE
        cg.topic_partitions = self._partition_counts(cg.subscribed_topics())
        cg.topics_checked_at = self.manager.metadata.topics_version
        for member in cg.members.values():
            assert member.classic is not None
            self._schedule(group, member, member.classic.session_timeout_ms)
        records: list[tuple[bytes, bytes | None]] = [
            (offsets_topic.group_key(group.group_id), None)
        ]
        records += consumer_group_records.records_to_store(cg, self.manager.topic_id_of)
        self._append(group, cg, records, set())
        log.info(
            "classic group %s upgraded to a consumer group at epoch %d (%d members)",
            group.group_id,
            generation,
            len(cg.members),
        )

    # Downgrading to a classic group ------------------------------------------------------
    def _downgrade_allowed(self, cg: ConsumerGroup) -> bool:
        """validateOnlineDowngradeWithFencedMember, the leaving member already gone: only
        classic members left (at least one), the policy allows it, within group.max.size."""
        return (
            bool(cg.members)
            and all(m.classic is not None for m in cg.members.values())
            and self.config.group_consumer_migration_policy.lower()
            in ("downgrade", "bidirectional")
            and len(cg.members) <= self.config.group_max_size
        )

    def _downgrade(self, group: Group) -> None:
        """The consumer group becomes a classic group (ClassicGroup.fromConsumerGroup): its
        classic members with their current assignments, at the group epoch as generation,
        the first member as leader; the consumer group's records are tombstoned and the
        classic record written in one append, then the classic coordinator rebalances it."""
        cg = group.consumer
        assert cg is not None
        first = next(iter(cg.members.values()))
        assert first.classic is not None
        protocol = first.classic.protocols[0][0]
        for member in cg.members.values():
            member.cancel_timers()
        records = consumer_group_records.group_tombstones(cg)
        group.consumer = None
        group.protocol_type = CONSUMER_PROTOCOL_TYPE
        group.protocol_name = protocol
        group.generation_id = cg.group_epoch
        for member in cg.members.values():
            assert member.classic is not None
            version = member.classic.protocols[0][1][:2]
            group.add(
                Member(
                    member.member_id,
                    member.instance_id,
                    member.client_id,
                    member.client_host,
                    member.rebalance_timeout_ms,
                    member.classic.session_timeout_ms,
                    CONSUMER_PROTOCOL_TYPE,
                    list(member.classic.protocols),
                    encode_assignment(
                        member.assigned,
                        int.from_bytes(version, "big", signed=True) if version else 0,
                    ),
                )
            )
        group.leader_id = first.member_id
        # As a classic group read from its record: Stable with its members.
        group.state = GroupState.STABLE
        group.state_timestamp_ms = now_ms()
        records.append(
            (
                offsets_topic.group_key(group.group_id),
                offsets_topic.group_value(group.to_record()),
            )
        )
        written = self.manager.append_now(group.group_id, records)
        tombstones = records[:-1]

        def on_done(future: asyncio.Future[int]) -> None:
            # Failed: the consumer group's tombstones go with the classic group's next
            # record (its rebalance writes it), unless it became a consumer group again.
            if future.cancelled() or future.result() != E.none:
                if group.consumer is None:
                    group.unwritten_tombstones = tombstones + group.unwritten_tombstones

        if written.done():
            on_done(written)
        else:
            written.add_done_callback(on_done)
        log.info(
            "consumer group %s downgraded to a classic group at generation %d (%d members)",
            group.group_id,
            group.generation_id,
            len(group.members),
        )
        self.on_downgraded(group)

    def _assign_if_changed(self, cg: ConsumerGroup, member: ConsumerMember, req) -> None:
        """Apply the member's request; a new group epoch and target when what the
        assignment depends on changed (the member, or the subscribed topics' partitions)."""
        topics_version = self.manager.metadata.topics_version
        if self._update_member(cg, member, req):
            cg.bump_and_assign(self._partition_counts(cg.subscribed_topics()))
            cg.topics_checked_at = topics_version
            log.info(
                "consumer group %s at epoch %d (%d members, assignor %s)",
                cg.group_id,
                cg.group_epoch,
                len(cg.members),
                cg.assignor_name(),
            )
        elif cg.topics_checked_at != topics_version:
            # The subscribed topics' partition counts are read again only after the topics
            # changed, not at every heartbeat (a union over every member's subscription).
            counts = self._partition_counts(cg.subscribed_topics())
            cg.topics_checked_at = topics_version
            if counts != cg.topic_partitions:
                cg.bump_and_assign(counts)

    def _invalid(self, req: HeartbeatRequest) -> str | None:
        """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""
        if not req.group_id:
            return "GroupId can't be empty."
        if req.version >= 1 and not req.member_id:
            return "MemberId can't be empty."
        if req.instance_id == "":
            return "InstanceId can't be empty."
        if req.rack_id == "":
            return "RackId can't be empty."
        if req.member_epoch == 0:
            if req.rebalance_timeout_ms == -1:
                return "RebalanceTimeoutMs must be provided in first request."
            if req.owned is None or any(req.owned.values()):
                return "TopicPartitions must be empty when (re-)joining."
            if req.subscribed is None and not req.subscribed_regex:
                return "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
        elif req.member_epoch > 0 or req.member_epoch in (
            LEAVE_GROUP_MEMBER_EPOCH,
            LEAVE_GROUP_STATIC_MEMBER_EPOCH,
        ):
            if not req.member_id:
                return "MemberId can't be empty."
        else:
            return f"MemberEpoch {req.member_epoch} is invalid."
        return None

    def _member_for(
        self, cg: ConsumerGroup, req: HeartbeatRequest
    ) -> tuple[ConsumerMember | None, HeartbeatResult | None]:
        member_id = req.member_id or str(uuid.uuid4())  # v0: the coordinator names it
        member = cg.members.get(member_id)
        if req.member_epoch == 0:
            if member is None and req.instance_id is not None:
                static = self._static_member(cg, req.instance_id)
                if static is not None:
                    if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        return None, HeartbeatResult(
                            E.unreleased_instance_id,
                            f"Static member {static.member_id} with instance id "
                            f"{req.instance_id} is not released yet.",
                        )
                    return self._replace_static_member(cg, static, member_id), None
            if member is None:
                if len(cg.members) >= self.config.group_consumer_max_size:
                    return None, HeartbeatResult(
                        E.group_max_size_reached,
                        f"The consumer group has reached its maximum capacity of "
                        f"{self.config.group_consumer_max_size} members.",
                    )
                member = ConsumerMember(member_id)
            else:
                # Joining again: it gave up what it had (a lost assignment).
                member.assigned = {}
                member.pending_revocation = {}
                member.state = MemberState.STABLE
                member.previous_member_epoch = member.member_epoch
                member.member_epoch = 0
            return member, None
        if member is None:
            return None, HeartbeatResult(
                E.unknown_member_id, f"Member {member_id} is not a member of group {cg.group_id}."
            )
        if req.member_epoch == member.member_epoch:
            return member, None
        owned = {(t, p) for t, parts in (req.owned or {}).items() for p in parts}
        assigned = {(t, p) for t, parts in member.assigned.items() for p in parts}
        if (
            req.member_epoch == member.previous_member_epoch
            and req.owned is not None
            and owned <= assigned
        ):
            # The answer that moved it to its current epoch was lost; it is still safe.
            return member, None
        return None, HeartbeatResult(
            E.fenced_member_epoch,
            f"The consumer group member has a smaller member epoch ({req.member_epoch}) than "
            f"the one known by the group coordinator ({member.member_epoch}). The member "
            f"must abandon all its partitions and rejoin."
            if req.member_epoch < member.member_epoch
            else f"The consumer group member has a greater member epoch ({req.member_epoch}) "
            f"than the one known by the group coordinator ({member.member_epoch}). The "
            f"member must abandon all its partitions and rejoin.",
        )

    @staticmethod
    def _static_member(cg: ConsumerGroup, instance_id: str) -> ConsumerMember | None:
        return next((m for m in cg.members.values() if m.instance_id == instance_id), None)

    @staticmethod
    def _replace_static_member(
        cg: ConsumerGroup, old: ConsumerMember, member_id: str
    ) -> ConsumerMember:
        """A static member back within its session timeout (it left with epoch -2): the new
        member id takes over its subscription, target and partitions, without a new group
        epoch, so nobody else is disturbed (Kafka's static member replacement)."""
        old.cancel_timers()
        del cg.members[old.member_id]
        target = cg.target.pop(old.member_id, {})
        member = ConsumerMember(
            member_id,
            instance_id=old.instance_id,
            rack_id=old.rack_id,
            rebalance_timeout_ms=old.rebalance_timeout_ms,
            subscribed=old.subscribed,
            subscribed_regex=old.subscribed_regex,
            regex_topics=old.regex_topics,
            server_assignor=old.server_assignor,
            state=old.state,
            assigned=old.assigned,
            pending_revocation=old.pending_revocation,
        )
        cg.members[member_id] = member
        cg.target[member_id] = target
        log.info(
            "consumer group %s: static member %s (instance %s) replaces %s",
            cg.group_id,
            member_id,
            old.instance_id,
            old.member_id,
        )
        return member

    def _update_member(self, cg: ConsumerGroup, member: ConsumerMember, req) -> bool:
        """Apply what the heartbeat changed; True when the group must be assigned again."""
        changed = False
        if member.member_id not in cg.members:
            cg.members[member.member_id] = member
            changed = True
        if req.subscribed is not None:
            subscribed = tuple(sorted(set(req.subscribed)))
            if subscribed != member.subscribed:
                member.subscribed = subscribed
                changed = True
        if req.subscribed_regex is not None:
            regex = req.subscribed_regex or None
            if regex != member.subscribed_regex:
                member.subscribed_regex = regex
                changed = True
        if member.subscribed_regex is not None:
            if req.match_topics is None:
                return changed
            matched = tuple(sorted(req.match_topics(member.subscribed_regex)))
            if matched != member.regex_topics:
                member.regex_topics = matched
                changed = True
        elif member.regex_topics:
            member.regex_topics = ()
            changed = True
        if req.server_assignor is not None and req.server_assignor != member.server_assignor:
            member.server_assignor = req.server_assignor
            changed = True
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.instance_id is not None:
            member.instance_id = req.instance_id
        member.client_id = req.client_id
        member.client_host = req.client_host
        return changed

    def _leave(self, group: Group | None, req: HeartbeatRequest) -> HeartbeatResult:
        cg = group.consumer if group is not None else None
        member = cg.members.get(req.member_id) if cg is not None else None
        if group is None or cg is None or member is None:
            return HeartbeatResult(
                E.unknown_member_id,
                f"Member {req.member_id} is not a member of group {req.group_id}.",
            )
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and member.instance_id is not None:
            # A static member going away for a while (a restart): it keeps its partitions
            # for its session timeout, for the same instance id to take them back.
            member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            if member.revocation_timer is not None:
                member.revocation_timer.cancel()
                member.revocation_timer = None
            log.info(
                "consumer group %s: static member %s (instance %s) left for now",
                cg.group_id,
                member.member_id,
                member.instance_id,
            )
            return HeartbeatResult(E.none, None, member.member_id, req.member_epoch, 0, None)
        self.remove_member(group, member, "left the group")
        return HeartbeatResult(E.none, None, member.member_id, req.member_epoch, 0, None)

    # Members going away -----------------------------------------------------------------
    def remove_member(self, group: Group, member: ConsumerMember, why: str) -> None:
        cg = group.consumer
        if cg is None or cg.members.get(member.member_id) is not member:
            return
        member.cancel_timers()
        del cg.members[member.member_id]
        cg.target.pop(member.member_id, None)
        log.info("consumer group %s: member %s %s", cg.group_id, member.member_id, why)
        if member.classic is None and self._downgrade_allowed(cg):
            self._downgrade(group)
            return
        if cg.members:
            cg.bump_and_assign(self._partition_counts(cg.subscribed_topics()))
        else:
            cg.group_epoch += 1
            cg.assignment_epoch = cg.group_epoch
            cg.topic_partitions = {}
            group.state_timestamp_ms = now_ms()  # offsets of an empty group age from now

    def _schedule(self, group: Group, member: ConsumerMember, session_timeout_ms: int) -> None:
        loop = asyncio.get_running_loop()
        if member.session_timer is not None:
            member.session_timer.cancel()
        member.session_timer = loop.call_later(
            session_timeout_ms / 1000,
            self._expire,
            group,
            member,
            "session timed out",
        )
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            if member.revocation_timer is None:
                member.revocation_timer = loop.call_later(
                    member.rebalance_timeout_ms / 1000,
                    self._expire_revocation,
                    group,
                    member,
                )
        elif member.revocation_timer is not None:
            member.revocation_timer.cancel()
            member.revocation_timer = None

    def _expire(self, group: Group, member: ConsumerMember, why: str) -> None:
        if self.manager.is_current(group):
            self.remove_member(group, member, why)
            self._store(group)

    def _expire_revocation(self, group: Group, member: ConsumerMember) -> None:
        member.revocation_timer = None
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            self._expire(
                group, member, "did not revoke its partitions within its rebalance timeout"
            )

    # Classic members inside a consumer group (Kafka 4's mixed groups) ------------------
    async def classic_join(
        self,
        group: Group,
        member_id: str,
        instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        require_known_member_id: bool,
    ) -> JoinResult:
        """A classic JoinGroup to a consumer group with members (Kafka's
        classicGroupJoinToConsumerGroup): the member is assigned server-side like the
        others; its generation is its member epoch; no leader (nobody assigns)."""
        cg = group.consumer
        assert cg is not None
        if protocol_type != CONSUMER_PROTOCOL_TYPE or not protocols:
            return JoinResult(E.inconsistent_group_protocol, member_id)
        try:
            subscription = parse_subscription(protocols[0][1])
        except ValueError:
            return JoinResult(E.inconsistent_group_protocol, member_id)
        unknown = member_id == ""
        if unknown:
            member_id = str(uuid.uuid4())
        member = cg.members.get(member_id)
        if member is None and instance_id is not None:
            member = self._static_member(cg, instance_id)
            if member is not None and member.classic is not None:
                # The same classic static member back under a new id (a restart).
                cg.members[member_id] = cg.members.pop(member.member_id)
                cg.target[member_id] = cg.target.pop(member.member_id, {})
                member.member_id = member_id
            elif member is not None:
                return JoinResult(E.unreleased_instance_id, member_id)
        if member is None and len(cg.members) >= self.config.group_consumer_max_size:
            return JoinResult(E.group_max_size_reached, member_id)
        if unknown and instance_id is None and require_known_member_id:
            return JoinResult(E.member_id_required, member_id)
        if member is None:
            member = ConsumerMember(member_id)
        elif member.classic is None:
            return JoinResult(E.unknown_member_id, member_id)  # a consumer-protocol member
        member.classic = ClassicMetadata(session_timeout_ms, list(protocols))
        req = HeartbeatRequest(
            group_id=group.group_id,
            member_id=member_id,
            member_epoch=member.member_epoch,
            instance_id=instance_id,
            rack_id=subscription.rack_id,
            rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed=tuple(subscription.topics),
            client_id=client_id,
            client_host=client_host,
        )
        self._assign_if_changed(cg, member, req)
        # What it owns: the partitions its (cooperative, v1+) subscription lists; an eager
        # member gave everything up before joining.
        cg.reconcile(member, subscription.owned)
        self._schedule(group, member, session_timeout_ms)
        written = self._store(group, [member_id])
        if written is not None:
            error = await written
            if error:
                return JoinResult(heartbeat_write_error(error), member_id)
        return JoinResult(
            E.none,
            member_id,
            member.member_epoch,
            CONSUMER_PROTOCOL_TYPE,
            protocols[0][0],
        )

    def _classic_member(
        self, group: Group, member_id: str, instance_id: str | None
    ) -> tuple[ConsumerMember | None, int]:
        cg = group.consumer
        assert cg is not None
        if instance_id is not None:
            member = self._static_member(cg, instance_id)
            if member is None:
                return None, E.unknown_member_id
            if member.member_id != member_id:
                return None, E.fenced_instance_id
        else:
            member = cg.members.get(member_id)
        if member is None or member.classic is None:
            return None, E.unknown_member_id
        return member, E.none

    def classic_sync(
        self,
        group: Group,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> tuple[int, bytes]:
        """SyncGroup of a classic member: its current assignment (classicGroupSyncToConsumerGroup)."""
        member, error = self._classic_member(group, member_id, instance_id)
        if member is None:
            return error, b""
        assert member.classic is not None and group.consumer is not None
        if generation_id != member.member_epoch:
            return E.illegal_generation, b""
        chosen, metadata = member.classic.protocols[0]
        if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or (
            protocol_name is not None and protocol_name != chosen
        ):
            return E.inconsistent_group_protocol, b""
        if (
            group.consumer.group_epoch > member.member_epoch
            and member.state != MemberState.UNREVOKED_PARTITIONS
        ):
            return E.rebalance_in_progress, b""
        self._schedule(group, member, member.classic.session_timeout_ms)
        version = int.from_bytes(metadata[:2], "big", signed=True) if len(metadata) >= 2 else 0
        return E.none, encode_assignment(member.assigned, version)

    def classic_heartbeat(
        self, group: Group, member_id: str, instance_id: str | None, generation_id: int
    ) -> int:
        """Heartbeat of a classic member: REBALANCE_IN_PROGRESS when it must join again to
        catch up (a new group epoch, partitions to revoke, or freed partitions to take)."""
        member, error = self._classic_member(group, member_id, instance_id)
        if member is None:
            return error
        cg = group.consumer
        assert member.classic is not None and cg is not None
        if generation_id != member.member_epoch:
            return E.illegal_generation
        self._schedule(group, member, member.classic.session_timeout_ms)
        if member.member_epoch < cg.group_epoch or member.state == MemberState.UNREVOKED_PARTITIONS:
            return E.rebalance_in_progress
        if member.state == MemberState.UNRELEASED_PARTITIONS:
            missing = {
                (t, p) for t, parts in cg.target.get(member.member_id, {}).items() for p in parts
            } - member.owned()
            if not missing & cg.owned_by_others(member.member_id):
                return E.rebalance_in_progress  # what it waited for is free now
        return E.none

    def classic_leave(self, group: Group, member_id: str, instance_id: str | None) -> int:
        member, error = self._classic_member(group, member_id or "", instance_id)
        if member is None:
            return error
        self.remove_member(group, member, "left the group (classic LeaveGroup)")
        self._store(group)
        return E.none

    # Offset commits of consumer groups --------------------------------------------------
    @staticmethod
    def validate_commit(group: Group, member_id: str, member_epoch: int) -> int:
        """Kafka's ConsumerGroup.validateOffsetCommit: NONE or the commit's error."""
        cg = group.consumer
        if cg is None:
            return E.none
        if member_epoch < 0 and not cg.members:
            return E.none  # an admin or a consumer outside the group
        member = cg.members.get(member_id)
        if member is None:
            return E.unknown_member_id
        if member_epoch > member.member_epoch:
            return E.fenced_member_epoch
        if member_epoch < member.member_epoch:
            return E.stale_member_epoch
        return E.none
