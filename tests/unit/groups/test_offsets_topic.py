"""__consumer_offsets: the coordinator partition formula and Kafka's record schemas."""

import struct

import pytest

from brokerd.groups import offsets_topic as ot
from brokerd.groups.group import parse_assignment, parse_subscription


@pytest.mark.parametrize(
    ("text", "java_hash"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("consumer-group01", None),  # computed below against the reference definition
        ("polygenelubricants", -(1 << 31)),  # Integer.MIN_VALUE
        ("groupé", None),
        ("😀emoji", None),  # outside the BMP: two UTF-16 code units
    ],
)
def test_java_string_hash(text, java_hash):
    expected = java_hash
    if expected is None:  # s[0]*31^(n-1) + ... over UTF-16 code units, wrapped to int32
        units = struct.unpack(f">{len(text.encode('utf-16-be')) // 2}H", text.encode("utf-16-be"))
        h = 0
        for unit in units:
            h = (h * 31 + unit) % (1 << 32)
        expected = h - (1 << 32) if h >= 1 << 31 else h
    assert ot.java_string_hash(text) == expected


def test_partition_formula_uses_kafka_abs():
    # Utils.abs(MIN_VALUE) is 0, where Math.abs(MIN_VALUE % 50) would give 48.
    assert ot.partition_for("polygenelubricants", 50) == 0
    negative = next(
        g for g in (f"consumer-group-{i}" for i in range(1000)) if ot.java_string_hash(g) < 0
    )
    assert ot.partition_for(negative, 50) == abs(ot.java_string_hash(negative)) % 50
    assert ot.partition_for("hello", 50) == 99162322 % 50 == 22
    assert all(0 <= ot.partition_for(f"g{i}", 7) < 7 for i in range(200))


def test_offset_key_bytes_are_kafkas():
    key = ot.offset_key("g", "t", 3)
    assert key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    assert ot.decode_key(key) == ot.OffsetKey("g", "t", 3)
    assert ot.group_key("g") == b"\x00\x02\x00\x01g"
    assert ot.decode_key(ot.group_key("g")) == ot.GroupKey("g")
    assert ot.decode_key(b"\x00\x00\x00\x01g\x00\x01t\x00\x00\x00\x00") == ot.OffsetKey("g", "t", 0)


def test_offset_value_versions():
    value = ot.OffsetValue(17104625, "meta", 1573475863555, leader_epoch=0)
    encoded = ot.offset_value(value)
    assert encoded[:2] == b"\x00\x03"  # v3: offset, leader epoch, metadata, commit time
    assert len(encoded) == 2 + 8 + 4 + 2 + 4 + 8
    assert ot.decode_offset_value(encoded) == value
    expiring = ot.OffsetValue(5, "", 1000, expire_timestamp=2000)
    encoded = ot.offset_value(expiring)
    assert encoded[:2] == b"\x00\x01"  # v1 is the version with an expire timestamp
    assert ot.decode_offset_value(encoded) == expiring
    v0 = b"\x00\x00" + struct.pack(">q", 9) + b"\x00\x02ab" + struct.pack(">q", 77)
    assert ot.decode_offset_value(v0) == ot.OffsetValue(9, "ab", 77)
    v2 = b"\x00\x02" + struct.pack(">q", 9) + b"\x00\x00" + struct.pack(">q", 77)
    assert ot.decode_offset_value(v2) == ot.OffsetValue(9, "", 77)
    # v4 is flexible: compact string (length + 1) and an empty tagged-field section.
    v4 = b"\x00\x04" + struct.pack(">qi", 9, 2) + b"\x03ab" + struct.pack(">q", 77) + b"\x00"
    assert ot.decode_offset_value(v4) == ot.OffsetValue(9, "ab", 77, leader_epoch=2)


def _member(i: int) -> ot.MemberRecord:
    return ot.MemberRecord(
        f"m{i}", "inst" if i == 0 else None, "client", "/127.0.0.1", 30000, 6000, b"sub", b"as"
    )


def test_group_value_round_trip_and_layout():
    value = ot.GroupValue("consumer", 4, "range", "m0", 123, [_member(0), _member(1)])
    encoded = ot.group_value(value)
    assert encoded[:2] == b"\x00\x03"
    assert ot.decode_group_value(encoded) == value
    empty = ot.GroupValue("consumer", 5, None, None, 124, [])
    assert ot.decode_group_value(ot.group_value(empty)) == empty


def test_group_value_v0_without_rebalance_timeout():
    member = (
        b"\x00\x02m0"
        + b"\x00\x01c"
        + b"\x00\x01h"
        + struct.pack(">i", 6000)
        + struct.pack(">i", 1)
        + b"s"
        + struct.pack(">i", 0)
    )
    v0 = b"\x00\x00\x00\x08consumer" + struct.pack(">i", 2) + b"\xff\xff\xff\xff"
    v0 += struct.pack(">i", 1) + member
    decoded = ot.decode_group_value(v0)
    assert decoded.generation == 2 and decoded.protocol is None and decoded.leader is None
    assert decoded.members[0].rebalance_timeout == 6000  # falls back to the session timeout
    assert decoded.members[0].subscription == b"s"


def test_tombstones_and_bad_records():
    key, value = ot.decode_record(ot.offset_key("g", "t", 1), None)
    assert key == ot.OffsetKey("g", "t", 1) and value is None
    with pytest.raises(ot.RecordFormatError):
        ot.decode_key(b"\x00\x07\x00\x01g")
    with pytest.raises(ot.RecordFormatError):
        ot.decode_offset_value(b"\x00\x03\x00")
    with pytest.raises(ot.RecordFormatError):
        ot.decode_record(None, b"x")


def test_describe_record_matches_kafkas_formatter_shape():
    line = ot.describe_record(
        ot.offset_key("consumer-group01", "nginx_access_log", 2),
        ot.offset_value(ot.OffsetValue(17104625, "", 1573475863555, leader_epoch=0)),
    )
    assert line == (
        "[consumer-group01,nginx_access_log,2]::OffsetAndMetadata(offset=17104625, "
        "leaderEpoch=Optional[0], metadata=, commitTimestamp=1573475863555, expireTimestamp=None)"
    )


def test_consumer_protocol_parsing():
    subscription = b"\x00\x01" + struct.pack(">i", 2) + b"\x00\x01a\x00\x01b" + b"\xff\xff\xff\xff"
    assert parse_subscription(subscription) == {"a", "b"}
    assert parse_subscription(b"\x00") is None
    assignment = b"\x00\x00" + struct.pack(">i", 1) + b"\x00\x01a" + struct.pack(">iii", 2, 0, 2)
    assert parse_assignment(assignment) == {"a": [0, 2]}
    assert parse_assignment(b"") == {}
