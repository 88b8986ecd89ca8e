"""Hypothesis strategies and small helpers shared by the record-format tests."""

from hypothesis import strategies as st

from brokerd.records import compression
from brokerd.records.batch import SimpleRecord

V2_CODECS = [
    compression.NONE,
    compression.GZIP,
    compression.SNAPPY,
    compression.LZ4,
    compression.ZSTD,
]
LEGACY_CODECS = [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4]

nullable_bytes = st.none() | st.binary(max_size=48)
headers = st.lists(st.tuples(st.text(max_size=8), nullable_bytes), max_size=3)
# Realistic epoch-millisecond timestamps, plus the small values where deltas go negative.
timestamps = st.integers(min_value=0, max_value=2**42)
offsets = st.integers(min_value=0, max_value=2**40)


@st.composite
def simple_records(draw, *, with_headers: bool = True, min_size: int = 1, max_size: int = 8):
    count = draw(st.integers(min_value=min_size, max_value=max_size))
    return [
        SimpleRecord(
            value=draw(nullable_bytes),
            key=draw(nullable_bytes),
            headers=draw(headers) if with_headers else (),
            timestamp=draw(timestamps),
        )
        for _ in range(count)
    ]


def compressible_records(count: int = 20) -> list[SimpleRecord]:
    """Records whose payload shrinks under every codec (kafka-python only compresses then)."""
    return [
        SimpleRecord(
            b"value-%04d " % i * 20, b"key-%d" % (i % 3), [("h", b"x" * 10)], 1_700_000_000_000 + i
        )
        for i in range(count)
    ]


def record_tuples(records, *, with_headers: bool = True):
    """Our decoded records as comparable tuples (offset, timestamp, key, value[, headers])."""
    if with_headers:
        return [
            (r.offset, r.timestamp, r.key, r.value, [(h.key, h.value) for h in r.headers])
            for r in records
        ]
    return [(r.offset, r.timestamp, r.key, r.value) for r in records]
