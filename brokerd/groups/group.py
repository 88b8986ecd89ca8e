"""One consumer group: members, generation, the state machine and committed offsets.

States and their legal predecessors are Kafka's (GroupMetadata.scala):

    Empty --join--> PreparingRebalance --all joined--> CompletingRebalance --leader's sync-->
    Stable --join/leave/expiry--> PreparingRebalance ...; any state --> Dead (deleted/unloaded)

The coordinator drives the transitions; this module keeps the bookkeeping honest and has no
I/O. Timers and futures hang off the group and its members: the coordinator creates them,
and whoever lets a group go cancels them all (`cancel_timers`).
"""

from __future__ import annotations

import asyncio
import enum
import struct
from collections import Counter
from dataclasses import dataclass, field

from .consumer_group import ConsumerGroup
from .offsets_topic import GroupValue, MemberRecord, OffsetValue


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS = {
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
    GroupState.PREPARING_REBALANCE: {
        GroupState.STABLE,
        GroupState.COMPLETING_REBALANCE,
        GroupState.EMPTY,
    },
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.DEAD: set(GroupState),
}


class IllegalGroupTransition(RuntimeError):
    pass


@dataclass(frozen=True)
class JoinResult:
    error: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()  # (id, instance id, metadata)
    skip_assignment: bool = False


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    is_new: bool = False
    join_future: asyncio.Future | None = None
    sync_future: asyncio.Future | None = None
    heartbeat_timer: asyncio.TimerHandle | None = None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_future is not None and not self.join_future.done()

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_future is not None and not self.sync_future.done()

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def complete_join(self, result: JoinResult) -> None:
        if self.join_future is not None and not self.join_future.done():
            self.join_future.set_result(result)
        self.join_future = None

    def complete_sync(self, error: int, assignment: bytes = b"") -> None:
        if self.sync_future is not None and not self.sync_future.done():
            self.sync_future.set_result((error, assignment))
        self.sync_future = None


@dataclass
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int = -1
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)  # in join order
    pending_members: set[str] = field(default_factory=set)  # got MEMBER_ID_REQUIRED
    pending_sync: set[str] = field(default_factory=set)  # joined this generation, no SyncGroup yet
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    offsets: dict[tuple[str, int], OffsetValue] = field(default_factory=dict)
    # TxnOffsetCommit: producer id -> offsets written in its open transaction, made
    # visible (or dropped) by the transaction's marker on the group's partition.
    pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetValue]] = field(default_factory=dict)
    new_member_added: bool = False
    initial_join: bool = False  # the join timer is the new group's initial delay
    join_timer: asyncio.TimerHandle | None = None
    sync_timer: asyncio.TimerHandle | None = None  # removes members still in pending_sync
    pending_timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    # Set while the group is a consumer group of the new protocol (KIP-848): its members,
    # epochs and assignment. The classic part then stays Empty and holds the offsets.
    consumer: ConsumerGroup | None = None
    # Tombstones of a consumer group's records whose append failed as it became this
    # classic group (a downgrade): written with the group's next record.
    unwritten_tombstones: list[tuple[bytes, bytes | None]] = field(default_factory=list)

    # State ----------------------------------------------------------------------------
    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise IllegalGroupTransition(
                f"group {self.group_id}: {self.state.value} -> {state.value} is not legal"
            )
        self.state = state
        self.state_timestamp_ms = now_ms

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    # Timers ---------------------------------------------------------------------------
    def clear_pending_sync(self) -> None:
        self.pending_sync.clear()
        if self.sync_timer is not None:
            self.sync_timer.cancel()
            self.sync_timer = None

    def cancel_timers(self) -> None:
        """Stop every timer of a group this coordinator lets go of (unloaded, deleted,
        expired), so none fires on a group nobody serves."""
        if self.join_timer is not None:
            self.join_timer.cancel()
            self.join_timer = None
        self.clear_pending_sync()
        for member in self.members.values():
            if member.heartbeat_timer is not None:
                member.heartbeat_timer.cancel()
        for timer in self.pending_timers.values():
            timer.cancel()
        self.pending_timers.clear()
        if self.consumer is not None:
            for consumer_member in self.consumer.members.values():
                consumer_member.cancel_timers()

    def has_active_members(self) -> bool:
        """Members of either protocol (an Empty classic part may hold consumer members)."""
        return bool(self.members) or (self.consumer is not None and bool(self.consumer.members))

    # Members --------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> Member:
        return self.members[member_id]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        self.pending_members.discard(member.member_id)
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        self.pending_members.discard(member_id)
        self.pending_sync.discard(member_id)
        if member is None:
            return None
        if (
            member.group_instance_id is not None
            and self.static_members.get(member.group_instance_id) == member_id
        ):
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if old_id in self.pending_sync:  # the new incarnation owes the sync instead
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        if self.leader_id == old_id:
            self.leader_id = new_id
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_static_member_fenced(self, member_id: str, instance_id: str | None) -> bool:
        """A known instance id presented with another member id: an older incarnation."""
        registered = self.static_member_id(instance_id)
        return registered is not None and registered != member_id

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.is_awaiting_join)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join() and not self.pending_members

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick one that did; False if none did."""
        if self.leader_id is not None and self.members[self.leader_id].is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # Protocols ------------------------------------------------------------------------
    def candidate_protocols(self) -> list[str]:
        """Protocols every member supports, in the first member's preference order."""
        counts = Counter(name for m in self.members.values() for name, _ in m.protocols)
        first = next(iter(self.members.values()), None)
        if first is None:
            return []
        return [name for name, _ in first.protocols if counts[name] == len(self.members)]

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        names = {name for name, _ in protocols}
        return protocol_type == self.protocol_type and any(
            name in names for name in self.candidate_protocols()
        )

    def select_protocol(self) -> str:
        """Each member votes for its first supported candidate; the most votes win."""
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter()
        for member in self.members.values():
            for name, _ in member.protocols:
                if name in candidates:
                    votes[name] += 1
                    break
        return max(candidates, key=lambda name: (votes[name], -candidates.index(name)))

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)
        for member in self.members.values():
            member.assignment = b""

    def current_member_metadata(self) -> tuple[tuple[str, str | None, bytes], ...]:
        return tuple(
            (m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        )

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), None when unknown."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = parse_subscription(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return topics

    # Persistence ----------------------------------------------------------------------
    def to_record(self) -> GroupValue:
        return GroupValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation_id,
            protocol=self.protocol_name,
            leader=self.leader_id,
            current_state_timestamp=self.state_timestamp_ms,
            members=[
                MemberRecord(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata(self.protocol_name),
                    m.assignment,
                )
                for m in self.members.values()
            ],
        )

    @classmethod
    def from_record(cls, group_id: str, value: GroupValue, now_ms: int) -> Group:
        group = cls(group_id)
        group.generation_id = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        group.state_timestamp_ms = (
            value.current_state_timestamp if value.current_state_timestamp >= 0 else now_ms
        )
        for record in value.members:
            group.add(
                Member(
                    member_id=record.member_id,
                    group_instance_id=record.group_instance_id,
                    client_id=record.client_id,
                    client_host=record.client_host,
                    rebalance_timeout_ms=record.rebalance_timeout,
                    session_timeout_ms=record.session_timeout,
                    protocol_type=value.protocol_type,
                    protocols=[(value.protocol or "", record.subscription)],
                    assignment=record.assignment,
                )
            )
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        group.state = GroupState.STABLE if group.members else GroupState.EMPTY
        return group


# The consumer protocol's embedded formats (ConsumerProtocolSubscription/Assignment) ------------
class _Cursor:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def unpack(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError("short consumer protocol data")
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return values[0]

    def string(self) -> str:
        size = self.unpack(">h")
        if size < 0 or self.pos + size > len(self.data):
            raise ValueError("bad string in consumer protocol data")
        text = self.data[self.pos : self.pos + size].decode("utf-8")
        self.pos += size
        return text


def parse_subscription(data: bytes) -> set[str] | None:
    """The topics of a ConsumerProtocolSubscription (any version: topics come first)."""
    try:
        cursor = _Cursor(data)
        cursor.unpack(">h")
        return {cursor.string() for _ in range(cursor.unpack(">i"))}
    except (ValueError, UnicodeDecodeError, struct.error):
        return None


def parse_assignment(data: bytes) -> dict[str, list[int]]:
    """Topic -> partitions of a ConsumerProtocolAssignment; {} when empty or unreadable."""
    if not data:
        return {}
    try:
        cursor = _Cursor(data)
        cursor.unpack(">h")
        out: dict[str, list[int]] = {}
        for _ in range(cursor.unpack(">i")):
            topic = cursor.string()
            out[topic] = [cursor.unpack(">i") for _ in range(cursor.unpack(">i"))]
        return out
    except (ValueError, UnicodeDecodeError, struct.error):
        return {}
