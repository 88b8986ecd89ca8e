"""LogSegments: the ordered, copy-on-write segment map, built directly over real segments."""

from __future__ import annotations

import pytest

from brokerd.config import LogConfig
from brokerd.log.segment import LogSegment
from brokerd.log.segments import LogSegments

BASES = [0, 10, 25, 40]


@pytest.fixture
def segments(tmp_path):
    config = LogConfig()
    made = [LogSegment(tmp_path, base, config, active=False) for base in BASES]
    yield made
    for segment in made:
        segment.close()


def test_segments_are_ordered_by_base_offset_whatever_order_they_come_in(segments):
    log_segments = LogSegments(reversed(segments))
    assert [s.base_offset for s in log_segments] == BASES
    assert log_segments.first is segments[0]
    assert log_segments.active is segments[-1]
    assert len(log_segments) == 4


@pytest.mark.parametrize("offset", [-1, 0, 5, 9, 10, 24, 25, 39, 40, 1000])
def test_floor_is_the_segment_with_the_largest_base_at_or_below(segments, offset):
    log_segments = LogSegments(segments)
    below = [s for s in segments if s.base_offset <= offset]
    assert log_segments.floor(offset) is (below[-1] if below else None)
    expected_from = segments[max(len(below) - 1, 0) :]
    assert log_segments.from_offset(offset) == expected_from


@pytest.mark.parametrize("start", [-1, 0, 9, 10, 30, 40, 50])
@pytest.mark.parametrize("end", [0, 1, 10, 11, 26, 40, 41, 99])
def test_overlapping_holds_every_segment_that_may_hold_an_offset_in_the_range(segments, start, end):
    log_segments = LogSegments(segments)

    def may_hold(i: int) -> bool:
        # Segment i holds offsets [base_i, base_{i+1}); the last one is open-ended.
        upper = BASES[i + 1] if i + 1 < len(BASES) else float("inf")
        return BASES[i] < end and upper > start

    expected = [s for i, s in enumerate(segments) if may_hold(i)]
    assert log_segments.overlapping(start, end) == expected


def test_a_change_publishes_a_new_view_and_leaves_the_old_one_intact(segments):
    log_segments = LogSegments(segments[:3])
    before = log_segments.view
    log_segments.add(segments[3])
    assert log_segments.view is not before
    assert before.segments == segments[:3] and before.bases == BASES[:3]
    assert log_segments.all() == segments
    log_segments.remove([segments[1]])
    assert log_segments.all() == [segments[0], segments[2], segments[3]]
    assert segments[1] not in log_segments


def test_add_takes_only_a_segment_after_the_active_one(segments):
    log_segments = LogSegments(segments[1:])
    with pytest.raises(ValueError):
        log_segments.add(segments[0])
    assert log_segments.all() == segments[1:]


def test_two_segments_at_one_base_offset_are_refused(tmp_path, segments):
    (tmp_path / "twin").mkdir()
    twin = LogSegment(tmp_path / "twin", 10, LogConfig(), active=False)
    try:
        with pytest.raises(ValueError):
            LogSegments([*segments, twin])
    finally:
        twin.close()


def test_replace_swaps_new_for_old_by_identity_in_one_change(tmp_path, segments):
    (tmp_path / "cleaned").mkdir()
    cleaned = LogSegment(tmp_path / "cleaned", 0, LogConfig(), active=False)
    try:
        log_segments = LogSegments(segments)
        before = log_segments.view
        log_segments.replace([cleaned], segments[:2])
        assert log_segments.all() == [cleaned, *segments[2:]]
        assert before.segments == segments
        assert log_segments.contains_all(segments[2:])
        assert not log_segments.contains_all(segments[:3])
    finally:
        cleaned.close()
