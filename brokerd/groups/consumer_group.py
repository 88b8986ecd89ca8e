"""A consumer group of the new protocol (KIP-848): members, epochs, the target assignment
and each member's reconciliation towards it. Pure bookkeeping, no I/O and no timers.

Kafka's model (ConsumerGroup, ConsumerGroupMember, CurrentAssignmentBuilder):
- the *group epoch* moves whenever what the assignment depends on changes (a member joins
  or leaves, a subscription or the assignor changes, a subscribed topic's partitions);
- the *target assignment* is the assignor's answer for the group epoch (its *assignment
  epoch*);
- each member has its own *member epoch* and its current assignment, and moves towards its
  target one heartbeat at a time: first it is asked to revoke what the target takes away
  (state UNREVOKED_PARTITIONS, epoch unchanged); once its heartbeat's owned partitions show
  them gone, it gets the target's epoch and the new partitions that no other member still
  holds (UNRELEASED_PARTITIONS while some are held, STABLE when it has all its target).
So a partition is never given to a member while another still owns it.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from .assignors import ASSIGNORS, Assignment, MemberSubscription
from .consumer_group_classic import ClassicMetadata

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(enum.Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


def _tps(assignment: Mapping[str, frozenset[int]]) -> set[tuple[str, int]]:
    return {(t, p) for t, parts in assignment.items() for p in parts}


def _pack(tps: set[tuple[str, int]]) -> Assignment:
    by_topic: dict[str, set[int]] = {}
    for topic, partition in tps:
        by_topic.setdefault(topic, set()).add(partition)
    return {t: frozenset(p) for t, p in by_topic.items()}


@dataclass
class ConsumerMember:
    member_id: str
    client_id: str = ""
    client_host: str = ""
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = 300000
    subscribed: tuple[str, ...] = ()
    # A regex subscription (KIP-848's subscribed_topic_regex) and the topics it matched
    # when the member last heartbeated.
    subscribed_regex: str | None = None
    regex_topics: tuple[str, ...] = ()
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # Set for a classic member (JoinGroup/SyncGroup) inside the consumer group (Kafka 4's
    # mixed groups): its session timeout and the protocols it joined with.
    classic: ClassicMetadata | None = None
    session_timer: asyncio.TimerHandle | None = None
    revocation_timer: asyncio.TimerHandle | None = None

    def cancel_timers(self) -> None:
        for timer in (self.session_timer, self.revocation_timer):
            if timer is not None:
                timer.cancel()
        self.session_timer = self.revocation_timer = None

    def topics(self) -> frozenset[str]:
        """Everything it subscribes to: the names and what its regex matches."""
        return frozenset(self.subscribed) | frozenset(self.regex_topics)

    def owned(self) -> set[tuple[str, int]]:
        """What this member may still be fetching: assigned or not yet revoked."""
        return _tps(self.assigned) | _tps(self.pending_revocation)


@dataclass
class ConsumerGroup:
    group_id: str
    default_assignor: str = "uniform"
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    # Partition counts of the subscribed topics the target was computed from, and the
    # metadata's topics_version they were last checked against.
    topic_partitions: dict[str, int] = field(default_factory=dict)
    topics_checked_at: int = -1
    # What is written to __consumer_offsets (consumer_group_records): key -> value bytes,
    # the members and the (group, assignment) epochs those records hold.
    persisted: dict[bytes, bytes] = field(default_factory=dict)
    persisted_members: set[str] = field(default_factory=set)
    persisted_epochs: tuple[int, int] = (-1, -1)
    # The tombstone of the classic group's record (an upgrade) is yet to be written: its
    # append failed, so the next write carries it.
    classic_tombstone_pending: bool = False

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.assignment_epoch < self.group_epoch:
            return ConsumerGroupState.ASSIGNING
        for member in self.members.values():
            if member.member_epoch != self.assignment_epoch or member.state != MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.topics()}

    def assignor_name(self) -> str:
        """Kafka's rule: the assignor most members ask for, else the default."""
        asked: dict[str, int] = {}
        for member in self.members.values():
            if member.server_assignor:
                asked[member.server_assignor] = asked.get(member.server_assignor, 0) + 1
        if not asked:
            return self.default_assignor
        return max(sorted(asked), key=lambda n: asked[n])

    # The target -------------------------------------------------------------------------
    def compute_target(self, topic_partitions: Mapping[str, int]) -> None:
        """Bump nothing; run the assignor for the current group epoch."""
        self.topic_partitions = dict(topic_partitions)
        subscriptions = {
            m.member_id: MemberSubscription(m.topics(), self.target.get(m.member_id, {}))
            for m in self.members.values()
        }
        assignor = ASSIGNORS[self.assignor_name()]
        computed = assignor(subscriptions, self.topic_partitions)
        self.target = {m: computed.get(m, {}) for m in self.members}
        self.assignment_epoch = self.group_epoch

    def bump_and_assign(self, topic_partitions: Mapping[str, int]) -> None:
        self.group_epoch += 1
        self.compute_target(topic_partitions)

    def owned_by_others(self, member_id: str) -> set[tuple[str, int]]:
        owned: set[tuple[str, int]] = set()
        for other in self.members.values():
            if other.member_id != member_id:
                owned |= other.owned()
        return owned

    # Reconciliation (Kafka's CurrentAssignmentBuilder) ----------------------------------
    def reconcile(
        self, member: ConsumerMember, reported: Mapping[str, frozenset[int]] | None
    ) -> None:
        """Move `member` one step towards its target. `reported` is what the member's
        heartbeat says it owns (None: not sent, so no revocation is acknowledged)."""
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            pending = _tps(member.pending_revocation)
            if reported is None or _tps(reported) & pending:
                return  # still revoking
            member.pending_revocation = {}
            if member.revocation_timer is not None:
                member.revocation_timer.cancel()
                member.revocation_timer = None
        elif member.member_epoch == self.assignment_epoch and member.state == MemberState.STABLE:
            return
        target = _tps(self.target.get(member.member_id, {}))
        current = _tps(member.assigned)
        keep = current & target
        revoke = current - target
        if revoke:
            member.assigned = _pack(keep)
            member.pending_revocation = _pack(revoke)
            member.state = MemberState.UNREVOKED_PARTITIONS
            return
        others = self.owned_by_others(member.member_id)
        wanted = target - keep
        free = {tp for tp in wanted if tp not in others}
        member.assigned = _pack(keep | free)
        if member.member_epoch != self.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = self.assignment_epoch
        member.state = MemberState.UNRELEASED_PARTITIONS if wanted - free else MemberState.STABLE
