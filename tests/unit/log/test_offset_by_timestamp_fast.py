"""A by-time lookup inside one log entry (ListOffsets for a timestamp, the console's "from a
time"): the compiled search over a batch's timestamp deltas answers exactly what decoding
every record in order answers, for every kind of entry: contiguous v2 batches (compressed or
not, timestamps going back and forth as CreateTime allows), compacted batches with offset
gaps, LogAppendTime batches, the old formats, and any starting offset."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from brokerd.log.segment import first_record_at_or_after
from brokerd.records import compression, read_entry
from brokerd.records.batch import CREATE_TIME, LOG_APPEND_TIME, SimpleRecord, build_batch
from brokerd.records.legacy import build_message_set

BASE = 1_000


def reference(entry, timestamp: int, starting_offset: int):
    for record in entry.records():
        if record.timestamp >= timestamp and record.offset >= starting_offset:
            return record.timestamp, record.offset
    return None


@st.composite
def entries(draw):
    count = draw(st.integers(1, 40))
    stamps = draw(st.lists(st.integers(0, 60), min_size=count, max_size=count))
    records = [
        SimpleRecord(b"v%d" % i, key=b"k", timestamp=10_000 + t) for i, t in enumerate(stamps)
    ]
    kind = draw(st.sampled_from(["contiguous", "gaps", "log_append", "legacy"]))
    codec = draw(st.sampled_from([compression.NONE, compression.GZIP, compression.LZ4]))
    if kind == "legacy":
        data = build_message_set(records, magic=1, base_offset=BASE, compression_type=codec)
    elif kind == "gaps":
        deltas = sorted(draw(st.sets(st.integers(0, 3 * count), min_size=count, max_size=count)))
        data = build_batch(records, base_offset=BASE, compression_type=codec, offset_deltas=deltas)
    else:
        data = build_batch(
            records,
            base_offset=BASE,
            compression_type=codec,
            timestamp_type=LOG_APPEND_TIME if kind == "log_append" else CREATE_TIME,
            max_timestamp=10_030 if kind == "log_append" else None,
        )
    return read_entry(bytes(data))


@settings(max_examples=300, deadline=None)
@given(entries(), st.integers(9_990, 10_070), st.integers(BASE - 5, BASE + 130))
def test_the_fast_lookup_answers_as_decoding_every_record(entry, timestamp, starting_offset):
    assert first_record_at_or_after(entry, timestamp, starting_offset) == reference(
        read_entry(entry.buf, entry.pos), timestamp, starting_offset
    )
