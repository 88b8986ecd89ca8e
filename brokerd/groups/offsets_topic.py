"""`__consumer_offsets`: which partition holds a group, and Kafka's record schemas in it.

Keys start with an int16 version: 0 and 1 are offset commits (group, topic, partition),
2 is group metadata (group). Values carry their own int16 version. We write what Kafka's
classic coordinator writes (offset value v3, or v1 when the commit asked for an explicit
retention; group value v3), so Kafka's OffsetsMessageFormatter and GroupMetadataManager can
read our records, and we read every version Kafka may have written (0-4, 4 being flexible).
A null value is a tombstone: the offset or the group is gone.

Consumer groups of the new protocol (KIP-848) are kept in the record types of Kafka's new
group coordinator (group-coordinator/src/main/resources/common/message/ConsumerGroup*.json),
keys 3-8: the group epoch (3), the subscribed topics' metadata (4), each member's
subscription (5), the target assignment's epoch (6) and per member (7), and each member's
current assignment, epochs and state (8). Their values are flexible version 0; topics are
named by topic id.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass, field

from brokerd.util.java_hash import java_string_hash as java_string_hash
from brokerd.util.java_hash import kafka_abs as kafka_abs

TOPIC = "__consumer_offsets"

OFFSET_KEY_VERSION = 1  # versions 0 and 1 are the same offset-commit key
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_VALUE_VERSION = 3
# KIP-848 consumer group records (the key's version is its record type).
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
_GROUP_LEVEL = (
    CONSUMER_GROUP_METADATA,
    CONSUMER_GROUP_PARTITION_METADATA,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
)
_MEMBER_LEVEL = (
    CONSUMER_GROUP_MEMBER_METADATA,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
)

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


# The partition formula ---------------------------------------------------------------------
def partition_for(group_id: str, num_partitions: int) -> int:
    """GroupMetadataManager.partitionFor: Utils.abs(groupId.hashCode) % partitions."""
    return kafka_abs(java_string_hash(group_id)) % num_partitions


def topic_configs(segment_bytes: int) -> dict[str, str]:
    """The overrides Kafka gives the topic when it creates it."""
    return {
        "cleanup.policy": "compact",
        "compression.type": "producer",
        "segment.bytes": str(segment_bytes),
    }


# Records ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    group: str


@dataclass(frozen=True)
class ConsumerGroupKey:
    """Keys 3, 4 and 6: a record of a consumer group as a whole (`kind` is the type)."""

    kind: int
    group: str


@dataclass(frozen=True)
class ConsumerMemberKey:
    """Keys 5, 7 and 8: a record of one member of a consumer group."""

    kind: int
    group: str
    member_id: str


# Topics of the consumer group records: (topic id as 16 bytes, partitions).
TopicPartitions = list[tuple[bytes, list[int]]]


@dataclass
class ConsumerGroupMetadataValue:
    epoch: int


@dataclass
class PartitionMetadataTopic:
    topic_id: bytes
    topic_name: str
    num_partitions: int


@dataclass
class ConsumerGroupPartitionMetadataValue:
    topics: list[PartitionMetadataTopic] = field(default_factory=list)


@dataclass
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    # Tagged field 0, ClassicMemberMetadata: (session timeout, [(protocol, metadata)]) of a
    # classic member inside the consumer group; None for a member of the consumer protocol.
    classic_member_metadata: tuple[int, list[tuple[str, bytes]]] | None = None


@dataclass
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: TopicPartitions = field(default_factory=list)


@dataclass
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # Kafka's MemberState: 0 STABLE, 1 UNREVOKED, 2 UNRELEASED, 127 UNKNOWN
    assigned_partitions: TopicPartitions = field(default_factory=list)
    partitions_pending_revocation: TopicPartitions = field(default_factory=list)


ConsumerGroupValue = (
    ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
)


@dataclass
class OffsetValue:
    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = -1
    expire_timestamp: int = -1  # only in value v1: an explicit retention was asked for


@dataclass
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list[MemberRecord] = field(default_factory=list)


class RecordFormatError(ValueError):
    """A record in __consumer_offsets that no known schema reads."""


# Encoding (non-flexible versions) -------------------------------------------------------------
def _string(text: str | None) -> bytes:
    if text is None:
        return _I16.pack(-1)
    data = text.encode("utf-8")
    return _I16.pack(len(data)) + data


def _bytes(data: bytes | None) -> bytes:
    if data is None:
        return _I32.pack(-1)
    return _I32.pack(len(data)) + data


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return _I16.pack(OFFSET_KEY_VERSION) + _string(group) + _string(topic) + _I32.pack(partition)


def group_key(group: str) -> bytes:
    return _I16.pack(GROUP_KEY_VERSION) + _string(group)


def offset_value(value: OffsetValue) -> bytes:
    if value.expire_timestamp >= 0:
        return (
            _I16.pack(OFFSET_VALUE_VERSION_WITH_EXPIRY)
            + _I64.pack(value.offset)
            + _string(value.metadata)
            + _I64.pack(value.commit_timestamp)
            + _I64.pack(value.expire_timestamp)
        )
    return (
        _I16.pack(OFFSET_VALUE_VERSION)
        + _I64.pack(value.offset)
        + _I32.pack(value.leader_epoch)
        + _string(value.metadata)
        + _I64.pack(value.commit_timestamp)
    )


def group_value(value: GroupValue) -> bytes:
    out = [
        _I16.pack(GROUP_VALUE_VERSION),
        _string(value.protocol_type),
        _I32.pack(value.generation),
        _string(value.protocol),
        _string(value.leader),
        _I64.pack(value.current_state_timestamp),
        _I32.pack(len(value.members)),
    ]
    for member in value.members:
        out += [
            _string(member.member_id),
            _string(member.group_instance_id),
            _string(member.client_id),
            _string(member.client_host),
            _I32.pack(member.rebalance_timeout),
            _I32.pack(member.session_timeout),
            _bytes(member.subscription),
            _bytes(member.assignment),
        ]
    return b"".join(out)


# Consumer group records (KIP-848): keys non-flexible, values flexible version 0 -----------------
def consumer_group_key(kind: int, group: str) -> bytes:
    assert kind in _GROUP_LEVEL
    return _I16.pack(kind) + _string(group)


def consumer_member_key(kind: int, group: str, member_id: str) -> bytes:
    assert kind in _MEMBER_LEVEL
    return _I16.pack(kind) + _string(group) + _string(member_id)


def topic_id_text(raw: bytes) -> str:
    """Kafka's Uuid.toString() of a 16-byte topic id (URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def topic_id_bytes(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _compact_string(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    data = text.encode("utf-8")
    return _uvarint(len(data) + 1) + data


def _compact_array(items: list[bytes]) -> bytes:
    return _uvarint(len(items) + 1) + b"".join(items)


_NO_TAGS = b"\x00"


def _topic_partitions(topics: TopicPartitions) -> bytes:
    return _compact_array(
        [
            topic_id + _compact_array([_I32.pack(p) for p in partitions]) + _NO_TAGS
            for topic_id, partitions in topics
        ]
    )


def consumer_group_value(value: ConsumerGroupValue) -> bytes:
    """The flexible version-0 value of a consumer group record."""
    head = _I16.pack(0)
    if isinstance(value, ConsumerGroupMetadataValue):
        body = _I32.pack(value.epoch)
    elif isinstance(value, ConsumerGroupPartitionMetadataValue):
        body = _compact_array(
            [
                t.topic_id
                + _compact_string(t.topic_name)
                + _I32.pack(t.num_partitions)
                + _compact_array([])  # PartitionMetadata (racks): not used since Kafka 4.0
                + _NO_TAGS
                for t in value.topics
            ]
        )
    elif isinstance(value, ConsumerGroupMemberMetadataValue):
        body = (
            _compact_string(value.instance_id)
            + _compact_string(value.rack_id)
            + _compact_string(value.client_id)
            + _compact_string(value.client_host)
            + _compact_array([_compact_string(t) for t in value.subscribed_topic_names])
            + _compact_string(value.subscribed_topic_regex)
            + _I32.pack(value.rebalance_timeout_ms)
            + _compact_string(value.server_assignor)
        )
        if value.classic_member_metadata is not None:
            session_timeout, protocols = value.classic_member_metadata
            classic = (
                _I32.pack(session_timeout)
                + _compact_array(
                    [
                        _compact_string(name) + _uvarint(len(data) + 1) + data + _NO_TAGS
                        for name, data in protocols
                    ]
                )
                + _NO_TAGS
            )
            # One tagged field: tag 0, its size, then the struct. A nullable struct in a
            # tagged field is written as Kafka's generated code does: its size counts a
            # presence varint (1) written before the struct (MessageDataGenerator).
            return (
                head
                + body
                + _uvarint(1)
                + _uvarint(0)
                + _uvarint(len(classic) + 1)
                + _uvarint(1)
                + classic
            )
    elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
        body = _I32.pack(value.assignment_epoch)
    elif isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
        body = _topic_partitions(value.topic_partitions)
    else:
        body = (
            _I32.pack(value.member_epoch)
            + _I32.pack(value.previous_member_epoch)
            + struct.pack(">b", value.state)
            + _topic_partitions(value.assigned_partitions)
            + _topic_partitions(value.partitions_pending_revocation)
        )
    return head + body + _NO_TAGS


# Decoding (every version) ---------------------------------------------------------------------
class _Reader:
    def __init__(self, data: bytes, flexible: bool = False):
        self.data = memoryview(data)
        self.pos = 0
        self.flexible = flexible

    def take(self, size: int) -> memoryview:
        return self._take(size)

    def _take(self, size: int) -> memoryview:
        if size < 0 or self.pos + size > len(self.data):
            raise RecordFormatError("record is shorter than its schema")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def int8(self) -> int:
        return struct.unpack(">b", self._take(1))[0]

    def int16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def uuid(self) -> bytes:
        return bytes(self._take(16))

    def int32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def int64(self) -> int:
        return _I64.unpack(self._take(8))[0]

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 35:
                raise RecordFormatError("varint is too long")

    def _length(self, wide: bool) -> int:
        if self.flexible:
            return self.uvarint() - 1
        return self.int32() if wide else self.int16()

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise RecordFormatError("null in a non-nullable string")
        return value

    def nullable_string(self) -> str | None:
        size = self._length(False)
        if size < 0:
            return None
        return bytes(self._take(size)).decode("utf-8")

    def bytes_(self) -> bytes:
        size = self._length(True)
        return b"" if size < 0 else bytes(self._take(size))

    def array_length(self) -> int:
        return self._length(True)

    def skip_tags(self) -> None:
        if self.flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self._take(self.uvarint())


AnyKey = OffsetKey | GroupKey | ConsumerGroupKey | ConsumerMemberKey


def decode_key(data: bytes) -> AnyKey:
    reader = _Reader(data)
    version = reader.int16()
    if version in (0, 1):
        return OffsetKey(reader.string(), reader.string(), reader.int32())
    if version == 2:
        return GroupKey(reader.string())
    if version in _GROUP_LEVEL:
        return ConsumerGroupKey(version, reader.string())
    if version in _MEMBER_LEVEL:
        return ConsumerMemberKey(version, reader.string(), reader.string())
    raise RecordFormatError(f"unknown __consumer_offsets key version {version}")


def _read_topic_partitions(reader: _Reader) -> TopicPartitions:
    out: TopicPartitions = []
    for _ in range(max(reader.array_length(), 0)):
        topic_id = reader.uuid()
        partitions = [reader.int32() for _ in range(max(reader.array_length(), 0))]
        reader.skip_tags()
        out.append((topic_id, partitions))
    return out


def decode_consumer_group_value(kind: int, data: bytes) -> ConsumerGroupValue:
    """A consumer group record's value (flexible version 0; later versions are read as far
    as version 0 goes, their new fields being tagged or appended)."""
    reader = _Reader(data, flexible=True)
    version = reader.int16()
    if version < 0:
        raise RecordFormatError(f"unknown consumer group value version {version}")
    value: ConsumerGroupValue
    if kind == CONSUMER_GROUP_METADATA:
        value = ConsumerGroupMetadataValue(reader.int32())
    elif kind == CONSUMER_GROUP_PARTITION_METADATA:
        topics = []
        for _ in range(max(reader.array_length(), 0)):
            topic_id = reader.uuid()
            name = reader.string()
            count = reader.int32()
            for _ in range(max(reader.array_length(), 0)):  # racks per partition
                reader.int32()
                for _ in range(max(reader.array_length(), 0)):
                    reader.string()
                reader.skip_tags()
            reader.skip_tags()
            topics.append(PartitionMetadataTopic(topic_id, name, count))
        value = ConsumerGroupPartitionMetadataValue(topics)
    elif kind == CONSUMER_GROUP_MEMBER_METADATA:
        value = ConsumerGroupMemberMetadataValue(
            instance_id=reader.nullable_string(),
            rack_id=reader.nullable_string(),
            client_id=reader.string(),
            client_host=reader.string(),
            subscribed_topic_names=[reader.string() for _ in range(max(reader.array_length(), 0))],
            subscribed_topic_regex=reader.nullable_string(),
            rebalance_timeout_ms=reader.int32(),
            server_assignor=reader.nullable_string(),
        )
        for _ in range(reader.uvarint()):  # tagged fields: 0 is ClassicMemberMetadata
            tag, size = reader.uvarint(), reader.uvarint()
            field = _Reader(bytes(reader.take(size)), flexible=True)
            if tag != 0:
                continue
            # A nullable struct: a presence varint (<= 0: null), then the struct.
            if field.uvarint() <= 0:
                value.classic_member_metadata = None
                continue
            session_timeout = field.int32()
            protocols = []
            for _ in range(max(field.array_length(), 0)):
                protocols.append((field.string(), field.bytes_()))
                field.skip_tags()
            field.skip_tags()
            value.classic_member_metadata = (session_timeout, protocols)
        return value
    elif kind == CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
        value = ConsumerGroupTargetAssignmentMetadataValue(reader.int32())
    elif kind == CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
        value = ConsumerGroupTargetAssignmentMemberValue(_read_topic_partitions(reader))
    elif kind == CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        value = ConsumerGroupCurrentMemberAssignmentValue(
            reader.int32(),
            reader.int32(),
            reader.int8(),
            _read_topic_partitions(reader),
            _read_topic_partitions(reader),
        )
    else:
        raise RecordFormatError(f"unknown consumer group record type {kind}")
    reader.skip_tags()
    return value


def decode_offset_value(data: bytes) -> OffsetValue:
    reader = _Reader(data)
    version = reader.int16()
    if not 0 <= version <= 4:
        raise RecordFormatError(f"unknown offset value version {version}")
    reader.flexible = version >= 4
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else -1
    metadata = reader.string()
    commit_timestamp = reader.int64()
    expire_timestamp = reader.int64() if version == 1 else -1
    reader.skip_tags()
    return OffsetValue(offset, metadata, commit_timestamp, leader_epoch, expire_timestamp)


def decode_group_value(data: bytes) -> GroupValue:
    reader = _Reader(data)
    version = reader.int16()
    if not 0 <= version <= 4:
        raise RecordFormatError(f"unknown group metadata value version {version}")
    reader.flexible = version >= 4
    value = GroupValue(
        protocol_type=reader.string(),
        generation=reader.int32(),
        protocol=reader.nullable_string(),
        leader=reader.nullable_string(),
    )
    if version >= 2:
        value.current_state_timestamp = reader.int64()
    for _ in range(max(reader.array_length(), 0)):
        member_id = reader.string()
        instance_id = reader.nullable_string() if version >= 3 else None
        client_id = reader.string()
        client_host = reader.string()
        rebalance_timeout = reader.int32() if version >= 1 else -1
        session_timeout = reader.int32()
        if rebalance_timeout < 0:
            rebalance_timeout = session_timeout
        subscription = reader.bytes_()
        assignment = reader.bytes_()
        reader.skip_tags()
        value.members.append(
            MemberRecord(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    reader.skip_tags()
    return value


AnyValue = OffsetValue | GroupValue | ConsumerGroupValue


def decode_record(key: bytes | None, value: bytes | None) -> tuple[AnyKey, AnyValue | None]:
    """A record of the topic as (key, value); value None is a tombstone."""
    if key is None:
        raise RecordFormatError("__consumer_offsets record without a key")
    decoded = decode_key(key)
    if value is None:
        return decoded, None
    if isinstance(decoded, OffsetKey):
        return decoded, decode_offset_value(value)
    if isinstance(decoded, GroupKey):
        return decoded, decode_group_value(value)
    return decoded, decode_consumer_group_value(decoded.kind, value)


_RECORD_NAMES = {
    CONSUMER_GROUP_METADATA: "ConsumerGroupMetadata",
    CONSUMER_GROUP_PARTITION_METADATA: "ConsumerGroupPartitionMetadata",
    CONSUMER_GROUP_MEMBER_METADATA: "ConsumerGroupMemberMetadata",
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: "ConsumerGroupTargetAssignmentMetadata",
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: "ConsumerGroupTargetAssignmentMember",
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: "ConsumerGroupCurrentMemberAssignment",
}


def describe_record(key: bytes | None, value: bytes | None) -> str:
    """One line in the shape of Kafka's OffsetsMessageFormatter / GroupMetadataMessageFormatter."""
    decoded_key, decoded_value = decode_record(key, value)
    if isinstance(decoded_key, OffsetKey):
        left = f"[{decoded_key.group},{decoded_key.topic},{decoded_key.partition}]"
        if not isinstance(decoded_value, OffsetValue):
            return f"{left}::NULL"
        epoch = decoded_value.leader_epoch
        expire = decoded_value.expire_timestamp
        return (
            f"{left}::OffsetAndMetadata(offset={decoded_value.offset}, "
            f"leaderEpoch={'Optional[' + str(epoch) + ']' if epoch >= 0 else 'Optional.empty'}, "
            f"metadata={decoded_value.metadata}, "
            f"commitTimestamp={decoded_value.commit_timestamp}, "
            f"expireTimestamp={expire if expire >= 0 else 'None'})"
        )
    if isinstance(decoded_key, (ConsumerGroupKey, ConsumerMemberKey)):
        # As Kafka 4's GroupMetadataMessageFormatter: the record's type name and its fields.
        key_fields = _fields(decoded_key)
        key_fields.pop("kind")
        return f"{_RECORD_NAMES[decoded_key.kind]}{key_fields}::" + (
            "NULL" if decoded_value is None else str(_fields(decoded_value))
        )
    if not isinstance(decoded_value, GroupValue):
        return f"{decoded_key.group}::NULL"
    members = ",".join(
        f"{m.member_id}={m.client_id}@{m.client_host}" for m in decoded_value.members
    )
    return (
        f"{decoded_key.group}::GroupMetadata(protocolType={decoded_value.protocol_type}, "
        f"generation={decoded_value.generation}, protocol={decoded_value.protocol}, "
        f"leader={decoded_value.leader}, members=[{members}])"
    )


def dump_json(key: bytes | None, value: bytes | None) -> tuple[str, str]:
    """(key, payload) as Kafka 3.x's kafka-dump-log --offsets-decoder prints them: JSON with
    the record's version and fields; an unreadable record is shown as such, never raised."""
    import json

    def versioned(data: bytes | None) -> int:
        return _I16.unpack_from(data, 0)[0] if data and len(data) >= 2 else -1

    try:
        decoded_key, decoded_value = decode_record(key, value)
    except RecordFormatError as exc:
        return json.dumps({"error": str(exc)}), "<unreadable>"
    key_text = json.dumps(
        {"type": str(versioned(key)), "data": _fields(decoded_key)}, separators=(",", ":")
    )
    if decoded_value is None:
        return key_text, "<DELETE>"
    payload = {"version": str(versioned(value)), "data": _fields(decoded_value)}
    return key_text, json.dumps(payload, separators=(",", ":"))


def _fields(record) -> dict:
    from dataclasses import asdict

    def camel(name: str) -> str:
        head, *rest = name.split("_")
        return head + "".join(part.title() for part in rest)

    def clean(value, key: str = ""):
        if isinstance(value, bytes):
            return topic_id_text(value) if key == "topic_id" else value.hex()
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], bytes):
            # (topic id, partitions) of a consumer group record, as Kafka's JSON has it.
            return {"topicId": topic_id_text(value[0]), "partitions": clean(value[1])}
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {camel(k): clean(v, k) for k, v in value.items()}
        return value

    return clean(asdict(record))
