"""Leader-epoch cache: KIP-101 assign rules, endOffsetFor, truncation, persistence."""

import pytest

from brokerd.log.checkpoints import LeaderEpochCheckpointFile
from brokerd.log.leader_epochs import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    EpochEntry,
    LeaderEpochFileCache,
)


@pytest.fixture
def checkpoint(tmp_path):
    return LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")


def cache_with(checkpoint, *entries):
    cache = LeaderEpochFileCache(checkpoint)
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_empty_cache(checkpoint):
    cache = LeaderEpochFileCache(checkpoint)
    assert cache.latest_epoch == UNDEFINED_EPOCH
    assert cache.latest_entry is None and cache.earliest_entry is None
    assert cache.entries == []
    assert cache.end_offset_for(0, 10) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    assert cache.epoch_for_offset(0) is None


def test_assign_appends_and_flushes(checkpoint):
    cache = cache_with(checkpoint, (0, 0), (1, 100))
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(1, 100)]
    assert cache.latest_epoch == 1
    assert cache.latest_entry == EpochEntry(1, 100)
    assert cache.earliest_entry == EpochEntry(0, 0)
    assert checkpoint.path.read_text() == "0\n2\n0 0\n1 100\n"


def test_assign_same_epoch_later_offset_is_ignored(checkpoint):
    cache = cache_with(checkpoint, (2, 10))
    before = checkpoint.path.stat().st_mtime_ns
    cache.assign(2, 15)  # every batch of the current epoch passes through assign
    cache.assign(2, 10)
    assert cache.entries == [EpochEntry(2, 10)]
    assert checkpoint.path.stat().st_mtime_ns == before


def test_assign_same_epoch_earlier_offset_replaces_it(checkpoint):
    cache = cache_with(checkpoint, (1, 5), (2, 10))
    cache.assign(2, 7)
    assert cache.entries == [EpochEntry(1, 5), EpochEntry(2, 7)]


def test_assign_lower_epoch_truncates_conflicting_entries(checkpoint):
    cache = cache_with(checkpoint, (0, 0), (2, 10), (4, 20))
    cache.assign(3, 15)  # epochs >= 3 go; 2 starts before 15 and stays
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(3, 15)]
    cache.assign(5, 12)  # a larger epoch at a lower offset removes 3 (starts at 15 >= 12)
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(5, 12)]
    assert LeaderEpochCheckpointFile(checkpoint.path).read() == cache.entries


def test_assign_rejects_negative(checkpoint):
    cache = LeaderEpochFileCache(checkpoint)
    with pytest.raises(ValueError):
        cache.assign(-1, 0)
    with pytest.raises(ValueError):
        cache.assign(0, -1)


def test_entries_is_a_copy(checkpoint):
    cache = cache_with(checkpoint, (0, 0))
    cache.entries.append(EpochEntry(9, 9))
    assert cache.entries == [EpochEntry(0, 0)]


def test_seed_3_5_1_equal_epoch_answers_log_end_offset(checkpoint):
    # A (leader) has <0,0>, LEO 2; B asks with its latest epoch 0 -> LEO, no truncation.
    cache = cache_with(checkpoint, (0, 0))
    assert cache.end_offset_for(0, 2) == (0, 2)


def test_seed_3_5_2_older_epoch_answers_start_of_next_epoch(checkpoint):
    # B became leader with <1,1> and rewrote offset 1; A asks for epoch 0 -> truncate to 1.
    cache = cache_with(checkpoint, (0, 0), (1, 1))
    assert cache.end_offset_for(0, 2) == (0, 1)
    assert cache.end_offset_for(1, 2) == (1, 2)


def test_end_offset_for_kafka_edge_cases(checkpoint):
    cache = cache_with(checkpoint, (1, 10), (3, 20), (6, 30))
    # A gap: epoch 2 is unknown; the largest epoch <= 2 is 1 and 3 ends it.
    assert cache.end_offset_for(2, 40) == (1, 20)
    assert cache.end_offset_for(4, 40) == (3, 30)
    assert cache.end_offset_for(5, 40) == (3, 30)
    # Older than every entry: the requested epoch with the first known start (Kafka >= 2.0).
    assert cache.end_offset_for(0, 40) == (0, 10)
    # Newer than the latest, or undefined: unknown.
    assert cache.end_offset_for(7, 40) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    assert cache.end_offset_for(UNDEFINED_EPOCH, 40) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    assert cache.end_offset_for(6, 40) == (6, 40)


def test_epoch_for_offset(checkpoint):
    cache = cache_with(checkpoint, (1, 10), (3, 20))
    assert cache.epoch_for_offset(9) is None
    assert cache.epoch_for_offset(10) == 1
    assert cache.epoch_for_offset(19) == 1
    assert cache.epoch_for_offset(20) == 3
    assert cache.epoch_for_offset(10**12) == 3


def test_truncate_from_end(checkpoint):
    cache = cache_with(checkpoint, (0, 0), (1, 10), (2, 20))
    cache.truncate_from_end(21)
    assert cache.latest_epoch == 2
    cache.truncate_from_end(20)  # an entry starting at the end offset goes
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(1, 10)]
    cache.truncate_from_end(-1)  # UNDEFINED end offset: no-op, as in Kafka
    assert len(cache.entries) == 2
    cache.truncate_from_end(5)
    assert cache.entries == [EpochEntry(0, 0)]
    assert checkpoint.read() == [EpochEntry(0, 0)]


def test_truncate_from_start(checkpoint):
    cache = cache_with(checkpoint, (0, 0), (1, 10), (2, 20))
    cache.truncate_from_start(0)
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(1, 10), EpochEntry(2, 20)]
    cache.truncate_from_start(15)  # 15 lies in epoch 1: it now starts at 15
    assert cache.entries == [EpochEntry(1, 15), EpochEntry(2, 20)]
    cache.truncate_from_start(20)  # exclusive: the entry at 20 stays
    assert cache.entries == [EpochEntry(2, 20)]
    cache.truncate_from_start(25)
    assert cache.entries == [EpochEntry(2, 25)]
    assert checkpoint.read() == [EpochEntry(2, 25)]


def test_truncate_from_start_before_first_entry_keeps_all(checkpoint):
    cache = cache_with(checkpoint, (3, 100))
    cache.truncate_from_start(50)
    assert cache.entries == [EpochEntry(3, 100)]


def test_reload_from_checkpoint_and_clear(checkpoint):
    cache_with(checkpoint, (0, 0), (1, 100))
    reloaded = LeaderEpochFileCache(checkpoint)
    assert reloaded.entries == [EpochEntry(0, 0), EpochEntry(1, 100)]
    reloaded.clear_and_flush()
    assert reloaded.entries == []
    assert checkpoint.path.read_text() == "0\n0\n"
    assert LeaderEpochFileCache(checkpoint).entries == []


def test_load_drops_non_monotonic_lines_like_kafka(checkpoint):
    checkpoint.path.write_text("0\n3\n0 0\n2 50\n1 60\n")
    # (1, 60) contradicts (2, 50): assigning it removes epoch 2.
    assert LeaderEpochFileCache(checkpoint).entries == [EpochEntry(0, 0), EpochEntry(1, 60)]


def test_cache_without_checkpoint(tmp_path):
    cache = LeaderEpochFileCache(None)
    cache.assign(0, 0)
    cache.flush()
    assert cache.entries == [EpochEntry(0, 0)]
    assert list(tmp_path.iterdir()) == []
