"""The lookup scenarios of seed 000 §2.2 on a log laid out with the seed's offsets."""

from brokerd.records.batch import RecordBatch, SimpleRecord, build_batch

from .helpers import open_log

SEED_BASES = [0, 3257573, 6506251]


def _follower_batch(base, count, first_ts, step=1):
    records = [SimpleRecord(b"v" * 40, None, (), first_ts + i * step) for i in range(count)]
    return build_batch(records, base_offset=base, partition_leader_epoch=0)


def _seed_log(tmp_path):
    """Segments at the seed's base offsets; batches of 10 with offset gaps between segments
    (as a follower copying a leader's log)."""
    log = open_log(tmp_path / "nginx_access_log-0", index_interval_bytes=300)
    timestamp = 1570792689000
    for i, base in enumerate(SEED_BASES):
        if i:
            log.roll(base)
        end = SEED_BASES[i + 1] if i + 1 < len(SEED_BASES) else base + 2000
        for offset in range(base, min(end, base + 1000), 10):
            log.append_as_follower(_follower_batch(offset, 10, timestamp))
            timestamp += 100
    return log


def test_offset_lookup_picks_the_floor_segment_then_the_index_floor_then_scans(tmp_path):
    log = _seed_log(tmp_path)
    assert [s.base_offset for s in log.segments] == SEED_BASES
    segment = log.segment_for(3257687)
    assert segment.base_offset == 3257573
    entry = segment.offset_index.lookup(3257687)
    assert entry.offset <= 3257687 and entry.position > 0  # a sparse entry below the target
    found = segment.translate_offset(3257687)
    assert found.base_offset <= 3257687 <= found.last_offset
    info = log.read(3257687, 1)
    batch = RecordBatch(info.read())
    assert batch.base_offset == 3257683  # the whole batch holding the target
    # a target before the first index entry scans from position 0
    assert segment.offset_index.lookup(3257573).position == 0
    assert RecordBatch(log.read(3257573, 1).read()).base_offset == 3257573


def test_timestamp_lookup_walks_segments_by_max_timestamp(tmp_path):
    log = _seed_log(tmp_path)
    second = log.segments[1]
    # a target inside the second segment's range
    target = second.max_timestamp_so_far - 250
    found = log.fetch_offset_by_timestamp(target)
    assert log.segment_for(found.offset) is second
    assert found.timestamp >= target
    # every earlier record is older than the target
    before = log.fetch_offset_by_timestamp(target - 1)
    assert before.offset <= found.offset


def test_zero_max_timestamp_falls_back_to_mtime_for_retention(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(build_batch([SimpleRecord(b"v", None, (), -1)]), leader_epoch=0)
    segment = log.active_segment
    assert segment.max_timestamp_so_far == -1
    assert segment.largest_timestamp == segment.last_modified_ms
