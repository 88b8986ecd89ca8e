"""Classic members inside a consumer group (Kafka 4's mixed groups, KIP-848 migration).

A consumer of the classic protocol (JoinGroup/SyncGroup/Heartbeat) that joins a consumer
group with members becomes one of its members: its JoinGroup carries its subscription (and,
from version 1, the partitions it owns) in the embedded ConsumerProtocolSubscription; the
coordinator assigns it server-side like any member, its generation is its member epoch, and
SyncGroup hands it its current assignment as a ConsumerProtocolAssignment. Its Heartbeat
answers REBALANCE_IN_PROGRESS when it must join again (a new group epoch, partitions to
give up, or freed partitions to take), which is how a classic member reconciles.

This module holds the embedded formats; the membership is ConsumerGroups'.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .assignors import Assignment

MAX_CONSUMER_PROTOCOL_VERSION = 3  # ConsumerProtocolAssignment/Subscription v0-3


@dataclass
class ClassicMetadata:
    """What a classic member joined with (Kafka's ClassicMemberMetadata)."""

    session_timeout_ms: int
    protocols: list[tuple[str, bytes]] = field(default_factory=list)


@dataclass
class ClassicSubscription:
    version: int
    topics: list[str]
    owned: dict[str, frozenset[int]]
    rack_id: str | None = None


class _Cursor:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError("short consumer protocol data")
        value = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += size
        return value

    def count(self) -> int:
        n = self.take(">i")
        # Each element takes at least 2 bytes: a count past what is left is a lie.
        if n > (len(self.data) - self.pos) // 2 + 1:
            raise ValueError("array longer than the data")
        return max(n, 0)

    def string(self) -> str | None:
        size = self.take(">h")
        if size < 0:
            return None
        if self.pos + size > len(self.data):
            raise ValueError("bad string in consumer protocol data")
        text = self.data[self.pos : self.pos + size].decode("utf-8")
        self.pos += size
        return text

    def skip_bytes(self) -> None:
        size = self.take(">i")
        if size > 0:
            if self.pos + size > len(self.data):
                raise ValueError("bad bytes in consumer protocol data")
            self.pos += size

    def done(self) -> bool:
        return self.pos >= len(self.data)


def parse_subscription(data: bytes) -> ClassicSubscription:
    """A ConsumerProtocolSubscription of any version (v1 owned partitions, v3 rack); raises
    ValueError when it cannot be read (Kafka: INCONSISTENT_GROUP_PROTOCOL)."""
    try:
        cursor = _Cursor(data)
        version = cursor.take(">h")
        if version < 0:
            raise ValueError(f"subscription version {version}")
        topics = [t for t in (cursor.string() for _ in range(cursor.count())) if t]
        cursor.skip_bytes()  # user data
        owned: dict[str, frozenset[int]] = {}
        rack = None
        if version >= 1 and not cursor.done():
            for _ in range(cursor.count()):
                topic = cursor.string() or ""
                parts = frozenset(cursor.take(">i") for _ in range(cursor.count()))
                if topic and parts:
                    owned[topic] = owned.get(topic, frozenset()) | parts
            if version >= 2 and not cursor.done():
                cursor.take(">i")  # generation id
            if version >= 3 and not cursor.done():
                rack = cursor.string()
        return ClassicSubscription(version, topics, owned, rack)
    except (struct.error, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from None


def encode_assignment(assignment: Assignment, version: int) -> bytes:
    """A ConsumerProtocolAssignment (no user data) in the member's subscription version."""
    version = max(0, min(version, MAX_CONSUMER_PROTOCOL_VERSION))
    out = [struct.pack(">hi", version, len(assignment))]
    for topic in sorted(assignment):
        name = topic.encode("utf-8")
        parts = sorted(assignment[topic])
        out.append(struct.pack(">h", len(name)) + name + struct.pack(">i", len(parts)))
        out.append(struct.pack(f">{len(parts)}i", *parts))
    out.append(struct.pack(">i", -1))  # user data: null
    return b"".join(out)
