"""LocalLog: the segment files of one partition, built directly over real segments."""

from __future__ import annotations

import pytest

from brokerd.config import LogConfig
from brokerd.log import errors
from brokerd.log.local_log import LocalLog, OwnedRegion
from brokerd.log.segment import DELETED_SUFFIX, SWAP_SUFFIX, EntryHeader, LogSegment
from brokerd.records import iter_entries
from brokerd.records.batch import RecordBatch, SimpleRecord, build_batch

CONFIG = LogConfig()


def entry(base_offset: int, count: int = 2) -> tuple[bytearray, list[EntryHeader]]:
    data = build_batch(
        [SimpleRecord(b"v%d" % (base_offset + i), None, (), 1000 + i) for i in range(count)],
        base_offset=base_offset,
    )
    batch = RecordBatch(data)
    return data, [EntryHeader(0, batch.size, base_offset, batch.last_offset, 1000 + count - 1, 2)]


def offsets_read(info) -> list[int]:
    return [r.offset for e in iter_entries(info.read()) for r in e.records()]


@pytest.fixture
def local(tmp_path):
    """A log of three segments: [0, 4) [4, 8) and the active one from 8, at LEO 10."""
    directory = tmp_path / "t-0"
    directory.mkdir()
    local = LocalLog(directory, CONFIG, [LogSegment(directory, 0, CONFIG)], recovery_point=0)
    for base in (0, 2, 4, 6, 8):
        if base in (4, 8):
            local.roll(base, now_ms=0)
        local.append(*entry(base))
    yield local
    local.close()


def test_the_log_end_offset_comes_from_the_active_segment_and_moves_with_appends(tmp_path):
    directory = tmp_path / "t-0"
    directory.mkdir()
    segment = LogSegment(directory, 5, CONFIG)
    segment.append(*entry(5, 3))
    local = LocalLog(directory, CONFIG, [segment], recovery_point=5)
    assert local.log_end_offset == 8
    local.append(*entry(8))
    assert local.log_end_offset == 10
    local.close()


def test_a_log_needs_a_segment(tmp_path):
    with pytest.raises(ValueError):
        LocalLog(tmp_path, CONFIG, [], recovery_point=0)


def test_roll_seals_the_active_segment_and_refuses_to_go_backwards(local):
    assert [s.base_offset for s in local.segments] == [0, 4, 8]
    with pytest.raises(errors.KafkaStorageError):
        local.roll(8, now_ms=0)
    new = local.roll(10, now_ms=0)
    assert local.segments.active is new and new.base_offset == 10 and new.size == 0


def test_reads_start_at_the_segment_holding_the_offset_and_stop_at_max_offset(local):
    assert offsets_read(local.read(5, 1 << 20, None, True, False))[:3] == [4, 5, 6]
    bounded = local.read(0, 1 << 20, 4, True, False)
    assert offsets_read(bounded) == [0, 1, 2, 3]
    assert local.read(9, 1 << 20, None, True, False).first_entry_offset == 8


def test_an_owned_region_stays_readable_after_its_segment_is_deleted(local):
    info = local.read(0, 1 << 20, None, True, owned=True)
    assert isinstance(info.region, OwnedRegion)
    first = local.segments.first
    local.remove_segments([first], due_ms=0)
    assert local.remove_deleted_segments(now_ms=0) == 1
    assert not first.log_path.exists()
    assert offsets_read(info) == [0, 1, 2, 3]
    info.region.release()


def test_truncate_to_deletes_later_segments_and_cuts_the_one_holding_the_offset(local):
    local.recovery_point = 9
    dropped = local.segments.active
    assert local.truncate_to(6) == [dropped]
    assert not dropped.log_path.exists()
    assert [s.base_offset for s in local.segments] == [0, 4]
    assert local.log_end_offset == 6 and local.recovery_point == 6
    assert offsets_read(local.read(4, 1 << 20, None, True, False)) == [4, 5]


def test_truncate_fully_leaves_one_empty_segment_at_the_new_start(local, tmp_path):
    old = local.segments.all()
    local.truncate_fully_and_start_at(20, now_ms=0)
    assert [s.base_offset for s in local.segments] == [20]
    assert local.log_end_offset == local.recovery_point == 20
    assert not any(s.log_path.exists() for s in old)
    assert local.read(20, 1 << 20, None, True, False).region is None


def test_removed_segments_are_renamed_deleted_and_go_when_their_delay_passes(local):
    first = local.segments.first
    local.remove_segments([first], due_ms=1000)
    assert first not in local.segments
    assert first.log_path.name.endswith(DELETED_SUFFIX) and first.log_path.exists()
    assert local.remove_deleted_segments(now_ms=999) == 0
    assert local.pending_deletes == 1
    assert local.remove_deleted_segments(now_ms=1000) == 1
    assert not first.log_path.exists() and local.pending_deletes == 0


def test_replace_segments_puts_the_swap_in_place_and_gives_it_its_final_name(local):
    old = local.segments.all()[:2]
    swap = LogSegment(local.dir, 0, CONFIG, suffix=SWAP_SUFFIX)
    swap.append(*entry(0, 8))
    swap.on_become_inactive()
    local.replace_segments([swap], old, due_ms=0)
    assert local.segments.all()[0] is swap
    assert swap.log_path.name == "00000000000000000000.log"
    assert all(s.log_path.name.endswith(DELETED_SUFFIX) for s in old)
    assert local.remove_deleted_segments(now_ms=0) == 2
    assert swap.log_path.exists()  # the old segment at the same base had other file names
    assert offsets_read(local.read(0, 1 << 20, 8, True, False)) == list(range(8))


def test_flush_covers_the_segments_from_the_recovery_point_below_the_offset(local):
    local.recovery_point = 5
    assert [s.base_offset for s in local.segments_to_flush(8)] == [4]
    assert [s.base_offset for s in local.segments_to_flush(9)] == [4, 8]


def test_a_flush_skips_a_segment_removed_meanwhile_but_fails_on_a_live_closed_one(local):
    first, second = local.segments.all()[:2]
    local.remove_segments([first], due_ms=0)
    local.remove_deleted_segments(now_ms=0)  # closes and deletes it
    local.flush_segments([first])
    local.close_file(second)
    with pytest.raises(ValueError):
        local.flush_segments([second])
    local.remove_segments([second], due_ms=0)  # so that closing the log skips it
    local.remove_deleted_segments(now_ms=0)
