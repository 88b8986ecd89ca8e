"""The compiled record walk (brokerd/records/_walk.pyx) against the Python reference.

The broker walks every produced record with the compiled walk when it is built, so it must
give exactly the reference's answer for any bytes: accept the same records sections, and
refuse the others with the same RecordStructureError (message and record_index). Checked
on the builder's batches, on hostile edits of them (byte flips, insertions, truncations,
varint bombs, lying counts and offset deltas, fields read past `end`), on random bytes and
on one crafted case per check. The compiled record_facts (what the record rules read of
each record) must return the reference's facts, or raise its error, likewise. Also: this
environment runs the compiled code (a build that silently failed must fail here), and
without it the broker falls back and says so.
"""

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerd.records import compression, validation
from brokerd.records.batch import (
    HEADER_SIZE,
    RECORDS_COUNT_POS,
    RecordBatch,
    SimpleRecord,
    build_batch,
)
from brokerd.records.validation import (
    RecordStructureError,
    record_facts_python,
    walk_records_python,
)
from brokerd.records.varint import encode_varint

from .strategies import simple_records
from .walkers import NOT_BUILT, record_facts_compiled, walk_records_compiled

REPO = Path(__file__).resolve().parents[3]
MANY = settings(
    max_examples=1500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

needs_compiled = pytest.mark.skipif(walk_records_compiled is None, reason=NOT_BUILT)


def outcome(walk, buf, pos, end, count):
    """What a walk answers: None when it accepts, else the error's type, text and index."""
    try:
        walk(buf, pos, end, count)
    except RecordStructureError as exc:
        return type(exc), str(exc), exc.record_index
    return None


def assert_same(buf, pos, end, count):
    expected = outcome(walk_records_python, buf, pos, end, count)
    assert outcome(walk_records_compiled, buf, pos, end, count) == expected
    return expected


def test_the_broker_walks_records_with_the_compiled_walk():
    assert walk_records_compiled is not None, NOT_BUILT
    assert validation.WALK_IMPLEMENTATION == "compiled", (
        "brokerd.records._walk was built from another version of _walk.pyx: "
        "run platform/setup (or platform/build_extensions.py)"
    )
    from brokerd.log import validator

    assert validation.walk_records is walk_records_compiled
    assert validator.walk_records is walk_records_compiled
    assert validator.record_facts is record_facts_compiled


# -- hostile inputs --------------------------------------------------------------------

BOMB_ENDS = [b"", b"\x00", b"\x01", b"\x02", b"\x0f", b"\x10", b"\x7f"]


@st.composite
def hostile_walks(draw):
    """(buf, pos, end, count): a builder's batch after hostile edits to its records."""
    records = draw(simple_records(max_size=6))
    deltas = None
    if draw(st.booleans()):  # offset deltas that lie, small or huge
        deltas = [
            draw(st.sampled_from([i, i, i + 1, i - 1, 0, 63, 64, 8191, 8192, -1, 2**31 - 1]))
            for i in range(len(records))
        ]
    buf = bytearray(build_batch(records, offset_deltas=deltas, last_offset_delta=0))
    for _ in range(draw(st.integers(0, 4))):
        if len(buf) <= HEADER_SIZE:
            break
        at = draw(st.integers(HEADER_SIZE, len(buf) - 1))
        edit = draw(st.sampled_from(["flip", "set", "insert", "bomb", "delete", "truncate"]))
        if edit == "flip":
            buf[at] ^= draw(st.integers(1, 255))
        elif edit == "set":
            buf[at] = draw(st.sampled_from([0x00, 0x01, 0x02, 0x7F, 0x80, 0x81, 0xFF]))
        elif edit == "insert":
            buf[at:at] = draw(st.binary(min_size=1, max_size=6))
        elif edit == "bomb":  # a varint of 1..12 continuation bytes and maybe an end
            buf[at:at] = b"\xff" * draw(st.integers(1, 12)) + draw(st.sampled_from(BOMB_ENDS))
        elif edit == "delete":
            del buf[at : at + draw(st.integers(1, 8))]
        else:
            del buf[at:]
    held = len(records)
    count = draw(
        st.sampled_from([held, held, held - 1, held + 1, 0, -1, 2**31 - 1])
        | st.integers(-(2**31), 2**31 - 1)
    )
    # end short of the buffer: reads past `end` still find bytes, as inside a bigger request
    end = len(buf) - draw(st.sampled_from([0, 0, 0, 1, 2, 7, 30]))
    if draw(st.integers(0, 20)) == 0:
        end = len(buf) + 1  # past the buffer
    as_type = draw(st.sampled_from([bytearray, bytes, memoryview]))
    return as_type(buf), HEADER_SIZE, end, count


@needs_compiled
@MANY
@given(walk=hostile_walks())
def test_hostile_edits_get_the_same_answer(walk):
    assert_same(*walk)


@needs_compiled
@settings(max_examples=500, deadline=None)
@given(records=simple_records(max_size=12), as_type=st.sampled_from([bytes, bytearray]))
def test_every_batch_the_builder_makes_is_accepted_by_both(records, as_type):
    buf = as_type(build_batch(records))
    assert assert_same(buf, HEADER_SIZE, len(buf), len(records)) is None


@needs_compiled
@settings(max_examples=500, deadline=None)
@given(
    prefix=st.integers(0, 4),
    body=st.binary(max_size=80),
    trailing=st.binary(max_size=6),
    count=st.integers(-2, 6),
)
def test_random_bytes_get_the_same_answer(prefix, body, trailing, count):
    buf = b"\x00" * prefix + body + trailing
    assert_same(buf, prefix, prefix + len(body), count)


@needs_compiled
@pytest.mark.parametrize("codec", [c for c in compression.NAMES if c != compression.NONE])
def test_a_decompressed_payload_gets_the_same_answer(codec):
    records = [SimpleRecord(b"value %d " % i * i, b"k") for i in range(1, 30)]
    batch = build_batch(records, compression_type=codec)
    payload = RecordBatch(batch).records_payload()
    for count in (len(records), len(records) - 1, len(records) + 1):
        assert_same(payload, 0, len(payload), count)


# -- one crafted case per check ------------------------------------------------------


def record(body: bytes, length: int | None = None) -> bytes:
    """A record: its length varint (of the body, unless given) then the body."""
    return encode_varint(len(body) if length is None else length) + body


def body(
    *,
    attributes=b"\x00",
    timestamp=b"\x00",
    delta=b"\x00",
    key=b"\x01",
    value=b"\x01",
    headers=b"\x00",
) -> bytes:
    return attributes + timestamp + delta + key + value + headers


V = encode_varint
CASES = {
    # (records section, count, the message it must get; None: accepted)
    "minimal": (record(body()), 1, None),
    "count below zero": (record(body()), -1, "invalid record count -1"),
    "too few records declared": (record(body()) * 2, 1, "bytes remain after 1 records"),
    "too many declared": (record(body()), 3, "3 records declared, the batch holds 1"),
    "odd length": (record(body(), -7), 1, "invalid record size -7"),
    "length below the smallest record": (record(body(), 5), 1, "invalid record size 5"),
    "length past the end": (record(body(), 300), 1, "invalid record size 300"),
    "four-byte length": (record(body(value=V(2**21) + b"v" * 2**21)), 1, None),
    "five-byte length overflowing int32": (
        b"\xff\xff\xff\xff\x10" + body(),
        1,
        "a varint of 5 bytes overflows its type",
    ),
    "length varint of six bytes": (b"\xff" * 5 + b"\x00" + body(), 1, "longer than 5 bytes"),
    "two-byte timestamp": (record(body(timestamp=V(1000))), 1, None),
    "three-byte timestamp": (record(body(timestamp=V(100_000))), 1, None),
    "ten-byte timestamp at the int64 edge": (record(body(timestamp=V(-(2**63)))), 1, None),
    "ten-byte timestamp overflowing int64": (
        record(body(timestamp=b"\xff" * 9 + b"\x02")),
        1,
        "a varint of 10 bytes overflows its type",
    ),
    "eleven-byte timestamp": (
        record(body(timestamp=b"\xff" * 10 + b"\x00")),
        1,
        "longer than 10 bytes",
    ),
    "offset delta 1 for record 0": (record(body(delta=V(1))), 1, "offset delta 1, expected 0"),
    "offset delta -1": (record(body(delta=V(-1))), 1, "offset delta -1, expected 0"),
    "offset delta 0 in two bytes": (record(body(delta=b"\x80\x00")), 1, None),
    "offset delta 0 in three bytes": (record(body(delta=b"\x80\x80\x00")), 1, None),
    "offset delta 64": (
        b"".join(record(body(delta=V(i))) for i in range(65)),
        65,
        None,
    ),
    "offset delta 8192 where 8191 is due": (
        b"".join(record(body(delta=V(i + (i == 8191)))) for i in range(8192)),
        8192,
        "record 8191 has offset delta 8192, expected 8191",
    ),
    "offset delta overflowing int32": (
        record(body(delta=b"\xff\xff\xff\xff\x7f")),
        1,
        "a varint of 5 bytes overflows its type",
    ),
    "key of 3 bytes": (record(body(key=V(3) + b"key")), 1, None),
    "key length -2": (record(body(key=V(-2))), 1, "record 0 has key length -2"),
    "key -1 in two bytes": (record(body(key=b"\x81\x00")), 1, "record 0 has key length -1"),
    "key of 200 bytes": (record(body(key=V(200) + b"k" * 200)), 1, None),
    "key length -200": (record(body(key=V(-200))), 1, "record 0 has key length -200"),
    "value length -3": (record(body(value=V(-3))), 1, "record 0 has value length -3"),
    "value -1 in three bytes": (
        record(body(value=b"\x81\x80\x00")),
        1,
        "record 0 has value length -1",
    ),
    "value of 20,000 bytes": (record(body(value=V(20_000) + b"v" * 20_000)), 1, None),
    "value length -20,000": (record(body(value=V(-20_000))), 1, "value length -20000"),
    "value length past the record": (
        record(body(value=V(2) + b"vv"), 7),
        1,
        "fields end +",
    ),
    "value length varint of six bytes": (
        record(body(value=b"\xff" * 5 + b"\x00"), 10),
        1,
        "longer than 5 bytes",
    ),
    "headers": (
        record(body(headers=V(2) + V(1) + b"h" + V(-1) + V(0) + V(2) + b"xy")),
        1,
        None,
    ),
    "header count -1": (record(body(headers=V(-1))), 1, "invalid header count -1"),
    "header count past the record": (
        record(body(headers=V(3) + V(0) + V(0))),
        1,
        "invalid header count 3",
    ),
    "header count one past the room": (
        record(body(headers=V(2) + V(0) + V(0) + b"\x00")),
        1,
        "invalid header count 2",
    ),
    "header value one byte past the record": (
        record(body(headers=V(2) + V(0) + V(4) + b"xyz")),
        1,
        "fields end +1",
    ),
    "header key length -1": (
        record(body(headers=V(1) + V(-1) + V(0))),
        1,
        "header key of length -1",
    ),
    "header value length -2": (
        record(body(headers=V(1) + V(0) + V(-2))),
        1,
        "header value of length -2",
    ),
    "header value past the record": (
        record(body(headers=V(2) + V(0) + V(40) + V(0) + V(0))),
        1,
        "fields end +",
    ),
    "fields shorter than the length": (record(body() + b"\x00\x00"), 1, "fields end -2"),
    "record cut short": (record(body(value=V(5) + b"vv")), 1, "runs past the end"),
}


@needs_compiled
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_each_check_gets_the_same_answer(case):
    section, count, message = CASES[case]
    for buf in (section, b"\x00\x00\x00" + section):
        pos = len(buf) - len(section)
        answer = assert_same(buf, pos, len(buf), count)
        if message is None:
            assert answer is None
        else:
            assert answer is not None and message in answer[1], answer
        # the same bytes inside a bigger buffer: reads past `end` find bytes, not its end
        assert_same(buf + b"\x02" * 64, pos, len(buf), count)
        assert_same(buf + b"\x80" * 64, pos, len(buf), count)
        for cut in range(pos, len(buf), max(1, (len(buf) - pos) // 40)):
            assert_same(buf[:cut], pos, cut, count)


@needs_compiled
@pytest.mark.parametrize(
    ("pos", "end_shift", "count"),
    [
        (HEADER_SIZE, 1, 1),  # end past the buffer
        (HEADER_SIZE, 0, 0),  # nothing declared, a record held
        (HEADER_SIZE + 5, 0, 1),  # inside a record
        (-3, 0, 1),  # below zero: Python indexing wraps; the reference decides
        (10**6, 0, 1),  # past the buffer
        (HEADER_SIZE, -(10**6), 1),  # end far below pos
        (HEADER_SIZE, 0, 2**62),
    ],
)
def test_odd_arguments_get_the_same_answer(pos, end_shift, count):
    buf = build_batch([simple_record()])
    assert_same(buf, pos, len(buf) + end_shift, count)


def simple_record():
    return SimpleRecord(b"value", b"key", [("h", b"x")], 1_700_000_000_000)


@needs_compiled
def test_buffers_it_cannot_view_as_bytes_go_to_the_reference():
    # bytes of 0x80 and over (the value's two-byte length), which signed items read below 0
    buf = build_batch([SimpleRecord(b"\xff" * 200, b"k")] * 3)
    assert struct.unpack_from(">i", buf, RECORDS_COUNT_POS)[0] == 3
    doubled = bytearray(b"".join(bytes([b, 0]) for b in buf))
    assert assert_same(buf, HEADER_SIZE, len(buf), 3) is None
    for view in (memoryview(buf).cast("b"), memoryview(doubled)[::2]):  # signed; strided
        assert_same(view, HEADER_SIZE, len(buf), 3)
    assert outcome(walk_records_compiled, memoryview(buf).cast("b"), HEADER_SIZE, len(buf), 3)
    for walk in (walk_records_python, walk_records_compiled):  # items that are not ints
        with pytest.raises(TypeError):
            walk(memoryview(buf).cast("c"), HEADER_SIZE, len(buf), 3)
        with pytest.raises(TypeError):
            walk("not bytes", 0, 1, 1)


# -- record_facts ------------------------------------------------------------------------


def facts_outcome(facts, buf, pos, count):
    try:
        return facts(buf, pos, count)
    except Exception as exc:  # the reference's own errors: VarintError, IndexError
        return type(exc), str(exc)


def assert_same_facts(buf, pos, count):
    expected = facts_outcome(record_facts_python, buf, pos, count)
    assert facts_outcome(record_facts_compiled, buf, pos, count) == expected
    return expected


wide_timestamps = st.integers(-(2**63), 2**63 - 1)


@needs_compiled
@settings(max_examples=500, deadline=None)
@given(
    records=simple_records(max_size=12),
    first=wide_timestamps,
    as_type=st.sampled_from([bytes, bytearray, memoryview]),
)
def test_record_facts_of_the_builders_batches_are_the_same(records, first, as_type):
    # any first timestamp: deltas of every varint size up to ten bytes
    buf = build_batch(records, first_timestamp=first, max_timestamp=first)
    facts = assert_same_facts(as_type(buf), HEADER_SIZE, len(records))
    assert [has_key for _, has_key in facts] == [r.key is not None for r in records]


@needs_compiled
@MANY
@given(walk=hostile_walks())
def test_record_facts_of_hostile_edits_are_the_same(walk):
    buf, pos, _, count = walk
    assert_same_facts(buf, pos, max(0, min(count, 12)))


@needs_compiled
@pytest.mark.parametrize(
    "section",
    [
        record(body(timestamp=b"\xff" * 9 + b"\x01")),  # the largest ten-byte varint
        record(body(timestamp=b"\xff" * 9 + b"\x02")),  # past 64 bits
        record(body(timestamp=b"\xff" * 9 + b"\x7f")),
        record(body(timestamp=b"\xff" * 10 + b"\x00")),  # eleven bytes
        record(body(timestamp=b"\xff" * 10)),  # runs past the buffer
        record(body(), -30),  # the next record would start before the buffer
        record(body(), -3),  # ... inside it, where Python indexing wraps
        record(body(), 2**62),  # far past the end
        b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01" + body(),  # a length of 2^62 - 1
    ],
)
def test_record_facts_of_crafted_records_are_the_same(section):
    for count in (1, 2, 3):
        assert_same_facts(section, 0, count)
        assert_same_facts(b"\x00" * 40 + section, 40, count)


# -- which walk runs ---------------------------------------------------------------------

SAY_WHICH = (
    "import logging, sys; logging.basicConfig(level=logging.INFO, stream=sys.stdout);"
    "import brokerd.log.log, brokerd.log.validator;"
    "from brokerd.records import validation as v;"
    "from brokerd.records.batch import build_batch, SimpleRecord, HEADER_SIZE;"
    "b = build_batch([SimpleRecord(b'v')]); v.walk_records(b, HEADER_SIZE, len(b), 1);"
    "print('implementation', v.WALK_IMPLEMENTATION)"
)


def run_import(tree: Path) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", SAY_WHICH],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def said(lines: list[str]) -> list[str]:
    return [line for line in lines if "record walk:" in line]


@needs_compiled
def test_importing_the_broker_says_once_that_the_compiled_walk_runs():
    lines = run_import(REPO)
    assert len(said(lines)) == 1, lines
    assert "compiled walk (Cython)" in said(lines)[0]
    assert lines[-1] == "implementation compiled"


def copy_of_brokerd(tmp_path: Path, *, with_extension: bool) -> Path:
    ignored = ["__pycache__"] + ([] if with_extension else ["*.so"])
    shutil.copytree(REPO / "brokerd", tmp_path / "brokerd", ignore=shutil.ignore_patterns(*ignored))
    return tmp_path


def test_without_the_extension_the_python_walk_runs_and_says_so(tmp_path):
    lines = run_import(copy_of_brokerd(tmp_path, with_extension=False))
    assert len(said(lines)) == 1, lines
    assert "WARNING" in said(lines)[0] and "not built" in said(lines)[0]
    assert lines[-1] == "implementation python"


@needs_compiled
def test_an_extension_built_from_another_source_is_not_used(tmp_path):
    tree = copy_of_brokerd(tmp_path, with_extension=True)
    source = tree / "brokerd" / "records" / "_walk.pyx"
    source.write_text(source.read_text() + "\n# a later edit\n")
    lines = run_import(tree)
    assert len(said(lines)) == 1, lines
    assert "built from another version of _walk.pyx" in said(lines)[0]
    assert lines[-1] == "implementation python"
