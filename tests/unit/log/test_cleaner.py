"""Log compaction (seed 000 §2.4 and §6 test 6; seed 001 §2 compaction with magic 2)."""

from __future__ import annotations

import os
import threading
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerd.log.checkpoints import OffsetCheckpointFile
from brokerd.log.cleaner import Cleaner, CleanReport, OffsetMap, group_segments_by_size
from brokerd.log.cleaner_manager import CleanerThread, LogCleanerManager
from brokerd.log.manager import CLEANER_CHECKPOINT, LogManager
from brokerd.log.recovery import load_log
from brokerd.log.segment import CLEANED_SUFFIX, SWAP_SUFFIX
from brokerd.records import compression, iter_entries
from brokerd.records.batch import RecordBatch

from .helpers import keyed_batch, open_log, read_all

COMPACT = ("compact",)


def _compacted_log(path, **config):
    config.setdefault("segment_bytes", 300)
    config.setdefault("cleanup_policy", COMPACT)
    return open_log(path, **config)


def _append(log, pairs, **kw):
    info = log.append_as_leader(keyed_batch(pairs, **kw), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    return info


def _latest(log) -> dict[bytes, tuple[int, bytes | None]]:
    latest = {}
    for record in read_all(log):
        latest[record.key] = (record.offset, record.value)
    return latest


def _age_all_segments(log, seconds_ago: int) -> None:
    """Backdate segment mtimes (the delete horizon is computed from them)."""
    stamp = os.stat(log.active_segment.log_path).st_mtime - seconds_ago
    for segment in log.segments[:-1]:
        os.utime(segment.log_path, (stamp, stamp))


# Offset map -------------------------------------------------------------------------
def test_offset_map_keeps_latest_offset_per_key_in_fixed_memory():
    offset_map = OffsetMap(24 * 1000)
    assert offset_map.slots <= 1000
    for offset in range(2000):
        offset_map.put(b"key-%d" % (offset % 500), offset)
    assert offset_map.size == 500
    assert offset_map.get(b"key-7") == 1507
    assert offset_map.get(b"absent") == -1
    assert offset_map.latest_offset == 1999
    offset_map.clear()
    assert offset_map.size == 0 and offset_map.get(b"key-7") == -1


# Basic compaction -------------------------------------------------------------------
def test_latest_value_per_key_survives_at_its_original_offset(tmp_path):
    log = _compacted_log(tmp_path / "t-0")
    expected = {}
    for i in range(40):
        key = b"k%d" % (i % 5)
        _append(log, [(key, b"v%d" % i)])
        expected[key] = (i, b"v%d" % i)
    active = log.active_segment
    active_bytes = active.log_path.read_bytes()

    report = Cleaner(1 << 16).clean(log, 0)

    assert report.end_offset == active.base_offset == report.first_uncleanable_offset
    offsets = [r.offset for r in read_all(log)]
    below_active = [o for o in offsets if o < active.base_offset]
    # The map covers the dirty range only: below the active segment, each key keeps its
    # latest record of that range.
    latest_below = {b"k%d" % (i % 5): i for i in range(active.base_offset)}
    assert below_active == sorted(latest_below.values())
    assert offsets[len(below_active) :] == list(range(active.base_offset, 40))  # untouched
    assert _latest(log) == expected
    assert log.active_segment is active
    assert active.log_path.read_bytes() == active_bytes
    assert report.records_read == active.base_offset
    assert report.records_kept == len(below_active)
    assert report.bytes_after < report.bytes_before
    assert log.log_end_offset == 40
    # A reload sees the same compacted log (Kafka's on-disk layout, nothing in memory only).
    log.close()
    reopened = _compacted_log(tmp_path / "t-0")
    assert _latest(reopened) == expected
    assert [r.offset for r in read_all(reopened)] == offsets


def test_nothing_at_or_above_the_high_watermark_is_cleaned(tmp_path):
    log = _compacted_log(tmp_path / "t-0")
    for i in range(40):
        _append(log, [(b"same", b"v%d" % i)])
    log.update_high_watermark(10)
    report = Cleaner(1 << 16).clean(log, 0)
    assert report.first_uncleanable_offset == log.segment_for(10).base_offset
    assert all(r.offset >= report.end_offset - 1 for r in read_all(log)[:1])
    assert len(read_all(log)) == 40 - report.end_offset + 1


def test_min_compaction_lag_keeps_young_segments_dirty(tmp_path):
    log = _compacted_log(tmp_path / "t-0", min_compaction_lag_ms=60_000)
    for i in range(20):
        _append(log, [(b"k", b"v%d" % i)], timestamp=1_000_000 + i * 10_000)
    # now = the time of record 10 + 60 s: records from offset 5 on are younger than the lag.
    report = Cleaner(1 << 16).clean(log, 0, now_ms=1_000_000 + 11 * 10_000 + 60_000)
    assert report.first_uncleanable_offset == log.segment_for(12).base_offset
    assert report.first_uncleanable_offset < log.active_segment.base_offset


# Tombstones and the delete horizon --------------------------------------------------
def test_tombstones_stay_until_the_delete_horizon_then_go(tmp_path):
    log = _compacted_log(tmp_path / "t-0", delete_retention_ms=3_600_000)
    _append(log, [(b"gone", b"v0"), (b"kept", b"v1")])
    _append(log, [(b"gone", None)])
    for i in range(8):
        _append(log, [(b"filler%d" % i, b"x" * 40)])
    cleaner = Cleaner(1 << 16)
    first = cleaner.clean(log, 0)
    assert first.delete_horizon_ms == 0  # no clean segment yet: every tombstone stays
    assert _latest(log)[b"gone"][1] is None
    assert first.tombstones_removed == 0

    # Second pass: the last clean segment is recent, tombstones younger than a day stay.
    for i in range(8):
        _append(log, [(b"more%d" % i, b"y" * 40)])
    second = cleaner.clean(log, first.end_offset)
    assert second.end_offset > first.end_offset
    assert _latest(log)[b"gone"][1] is None

    # Once the segment holding the tombstone is older than the horizon, it goes.
    _age_all_segments(log, 0)
    tombstone_segment = log.segment_for(_latest(log)[b"gone"][0])
    stamp = os.stat(log.active_segment.log_path).st_mtime - 2 * 3600
    os.utime(tombstone_segment.log_path, (stamp, stamp))
    for i in range(8):
        _append(log, [(b"last%d" % i, b"z" * 40)])
    third = cleaner.clean(log, second.end_offset)
    assert third.tombstones_removed == 1
    assert b"gone" not in _latest(log)
    assert _latest(log)[b"kept"][1] == b"v1"


# Checkpoints and the manager --------------------------------------------------------
def test_checkpoint_advances_and_survives_a_restart(tmp_path):
    compact = {"cleanup_policy": COMPACT, "segment_bytes": 300}
    logs = LogManager([tmp_path / "data"])
    logs.startup()
    log = logs.get_or_create_log("topic", 3, logs.default_config.with_overrides(**compact))
    for i in range(30):
        _append(log, [(b"k%d" % (i % 3), b"v%d" % i)])
    cleaner_manager = LogCleanerManager(dedupe_buffer_size=1 << 16)
    assert cleaner_manager.first_dirty_offset(log) == 0
    report = cleaner_manager.clean_log(log)
    assert report.end_offset == log.active_segment.base_offset > 0
    checkpoint = OffsetCheckpointFile(tmp_path / "data" / CLEANER_CHECKPOINT).read()
    assert checkpoint == {("topic", 3): report.end_offset}
    assert (tmp_path / "data" / CLEANER_CHECKPOINT).read_text().splitlines()[:2] == ["0", "1"]
    logs.shutdown()

    restarted = LogManager([tmp_path / "data"])
    restarted.topic_configs["topic"] = restarted.default_config.with_overrides(**compact)
    restarted.startup()
    reloaded = restarted.get_log("topic", 3)
    assert LogCleanerManager(dedupe_buffer_size=1 << 16).first_dirty_offset(reloaded) == (
        report.end_offset
    )
    # Nothing new is dirty: a second pass has nothing to do and keeps the checkpoint.
    again = LogCleanerManager(dedupe_buffer_size=1 << 16).clean_log(reloaded)
    assert again.skipped and again.end_offset == report.end_offset
    restarted.shutdown()


def test_small_cleaned_segments_merge_into_groups_within_segment_bytes(tmp_path):
    log = _compacted_log(tmp_path / "t-0", segment_bytes=400)
    for i in range(60):
        _append(log, [(b"k%d" % (i % 4), b"v%d" % i)])
    cleaner = Cleaner(1 << 16)
    first = cleaner.clean(log, 0)
    segments_after_first = len(log.segments)
    for i in range(60, 70):
        _append(log, [(b"k%d" % (i % 4), b"v%d" % i)])
    second = cleaner.clean(log, first.end_offset)
    assert second.segments_after < second.segments_before
    assert len(log.segments) < segments_after_first
    assert all(s.size <= 400 for s in log.segments)
    # The grouping rule itself: sizes add up to at most segment.bytes.
    groups = group_segments_by_size(log.segments[:-1], 400, 10 << 20, log.log_end_offset)
    assert all(sum(s.size for s in g) <= 400 or len(g) == 1 for g in groups)
    assert _latest(log) == {b"k%d" % (i % 4): (i, b"v%d" % i) for i in range(70)}


def test_a_full_offset_map_makes_a_partial_pass_that_the_next_pass_completes(tmp_path):
    log = _compacted_log(tmp_path / "t-0", segment_bytes=2000)
    expected = {}
    for i in range(200):
        key = b"key-%03d" % (i % 100)
        _append(log, [(key, b"v%d" % i)])
        expected[key] = (i, b"v%d" % i)
    manager = LogCleanerManager(dedupe_buffer_size=24 * 60)  # room for ~50 keys
    uncleanable = log.active_segment.base_offset
    first = manager.clean_log(log)
    assert first.partial
    assert 0 < first.end_offset < uncleanable
    assert manager.first_dirty_offset(log) == first.end_offset
    reports = [first]
    while reports[-1].end_offset < uncleanable:
        reports.append(manager.clean_log(log))
        assert len(reports) < 20
    assert not reports[-1].partial
    assert _latest(log) == expected
    latest_below = {b"key-%03d" % (i % 100): i for i in range(uncleanable)}
    assert [r.offset for r in read_all(log)] == sorted(latest_below.values()) + list(
        range(uncleanable, 200)
    )


# Producer state ---------------------------------------------------------------------
def test_last_batch_of_a_producer_stays_as_an_empty_batch_with_its_sequence(tmp_path):
    log = _compacted_log(tmp_path / "t-0")
    pid = 4242
    _append(log, [(b"a", b"p0"), (b"b", b"p1")], producer_id=pid, producer_epoch=3, base_sequence=0)
    _append(log, [(b"a", b"p2"), (b"b", b"p3")], producer_id=pid, producer_epoch=3, base_sequence=2)
    _append(log, [(b"a", b"plain"), (b"b", b"plain")])
    for i in range(10):
        _append(log, [(b"f%d" % i, b"x" * 50)])
    report = Cleaner(1 << 16).clean(log, 0)
    assert report.empty_batches_kept == 1

    entries = [e for e in log.read_batches(0) if isinstance(e, RecordBatch)]
    producer_batches = [e for e in entries if e.producer_id == pid]
    assert len(producer_batches) == 1  # the first batch was not the last: it went
    empty = producer_batches[0]
    assert empty.record_count == 0 and empty.size == 61
    assert (empty.base_offset, empty.last_offset) == (2, 3)
    assert (empty.producer_epoch, empty.base_sequence, empty.last_sequence) == (3, 2, 3)
    empty.validate()

    # Producer state rebuilt from the log alone (no snapshots) still knows sequence 3.
    log.close()
    for snapshot in (tmp_path / "t-0").glob("*.snapshot"):
        snapshot.unlink()
    reopened = _compacted_log(tmp_path / "t-0")
    entry = reopened.producer_state.last_entry(pid)
    assert entry is not None and entry.last_seq == 3 and entry.producer_epoch == 3
    # ...so the producer's next batch is accepted in sequence and a retry is a duplicate.
    info = reopened.append_as_leader(
        keyed_batch([(b"a", b"next")], producer_id=pid, producer_epoch=3, base_sequence=4), 0
    )
    assert not info.duplicate


# Codecs -----------------------------------------------------------------------------
def test_compressed_batches_are_recompressed_with_their_codec(tmp_path):
    log = _compacted_log(tmp_path / "t-0", segment_bytes=1000)
    codecs = [compression.GZIP, compression.ZSTD]
    for i in range(12):
        pairs = [(b"k%d" % j, b"value-%d-%d" % (i, j)) for j in range(i % 3, 6)]
        _append(log, pairs, compression_type=codecs[i % 2])
    for i in range(6):
        _append(log, [(b"tail%d" % i, b"t" * 200)])
    report = Cleaner(1 << 16).clean(log, 0)
    assert report.records_kept < report.records_read
    raw = b"".join(s.log_path.read_bytes() for s in log.segments)
    rebuilt_codecs = {
        e.compression for e in iter_entries(raw) if isinstance(e, RecordBatch) and e.record_count
    }
    assert {compression.GZIP, compression.ZSTD} <= rebuilt_codecs
    for entry in iter_entries(raw):
        entry.validate()
    expected = {}
    offset = 0
    for i in range(12):
        for j in range(i % 3, 6):
            expected[b"k%d" % j] = (offset, b"value-%d-%d" % (i, j))
            offset += 1
    for i in range(6):
        expected[b"tail%d" % i] = (offset, b"t" * 200)
        offset += 1
    assert _latest(log) == expected


# Crashes ----------------------------------------------------------------------------
def _crash_setup(path):
    log = _compacted_log(path)
    expected = {}
    for i in range(30):
        key = b"k%d" % (i % 3)
        _append(log, [(key, b"v%d" % i)])
        expected[key] = (i, b"v%d" % i)
    cleaner = Cleaner(1 << 16)
    end, _ = cleaner.build_offset_map(log, 0, log.active_segment.base_offset)
    group = [s for s in log.segments[:-1]]
    return log, cleaner, group, expected


def test_crash_with_a_cleaned_file_left_keeps_the_old_segments(tmp_path):
    log, cleaner, group, expected = _crash_setup(tmp_path / "t-0")
    before = [(r.offset, r.value) for r in read_all(log)]
    cleaned = cleaner.write_cleaned_segment(log, group[:3])
    assert cleaned.log_path.name.endswith(CLEANED_SUFFIX)
    cleaned.close()
    log.close()  # "crash": the cleaned segment never got swapped in
    reopened = load_log(tmp_path / "t-0", log.config, had_clean_shutdown=False)
    assert not list((tmp_path / "t-0").glob(f"*{CLEANED_SUFFIX}"))
    assert [(r.offset, r.value) for r in read_all(reopened)] == before
    assert _latest(reopened) == expected


def test_crash_with_a_swap_file_left_completes_the_swap_for_the_whole_group(tmp_path):
    log, cleaner, group, expected = _crash_setup(tmp_path / "t-0")
    bases_after_group = [s.base_offset for s in log.segments[3:]]
    cleaned = cleaner.write_cleaned_segment(log, group[:3])
    cleaner.mark_as_swap(log, cleaned, group[:3])
    cleaned.close()
    log.close()  # "crash" after the rename to .swap, before replace_segments
    reopened = load_log(tmp_path / "t-0", log.config, had_clean_shutdown=False)
    leftovers = [p.name for p in (tmp_path / "t-0").iterdir() if "swap" in p.name]
    assert leftovers == []
    assert _latest(reopened) == expected
    offsets = [r.offset for r in read_all(reopened)]
    assert offsets == sorted(set(offsets))
    # Every key's latest is after the group, so the swapped-in segment is empty, and it
    # replaced all three segments of the group, not only the first.
    bases = [s.base_offset for s in reopened.segments]
    assert bases == [group[0].base_offset, *bases_after_group]
    assert reopened.segments[0].size == 0
    assert offsets[0] == bases_after_group[0]


def test_swap_of_a_partly_superseded_group_replaces_segments_past_its_last_record(tmp_path):
    log = _compacted_log(tmp_path / "t-0")
    _append(log, [(b"keep", b"old-but-latest")])  # survives: no later record of its key
    for i in range(12):
        _append(log, [(b"k%d" % (i % 2), b"v%d" % i)])
    for i in range(12):  # supersede every k0/k1 record of the first segments
        _append(log, [(b"k%d" % (i % 2), b"w%d" % i)])
    expected = _latest(log)
    cleaner = Cleaner(1 << 16)
    cleaner.build_offset_map(log, 0, log.active_segment.base_offset)
    group = log.segments[:3]
    assert all(s.size for s in group)
    cleaned = cleaner.write_cleaned_segment(log, group)
    # The swap ends after its only survivor, long before the group's last segment.
    assert cleaned.read_next_offset() <= group[1].base_offset
    cleaner.mark_as_swap(log, cleaned, group)
    cleaned.close()
    log.close()
    reopened = load_log(tmp_path / "t-0", log.config, had_clean_shutdown=False)
    bases = [s.base_offset for s in reopened.segments]
    assert group[1].base_offset not in bases and group[2].base_offset not in bases
    assert _latest(reopened) == expected
    assert [r.key for r in read_all(reopened)][0] == b"keep"


def test_a_finished_swap_leaves_no_group_file(tmp_path):
    log, cleaner, group, expected = _crash_setup(tmp_path / "t-0")
    cleaned = cleaner.write_cleaned_segment(log, group[:3])
    report = CleanReport(log.topic, log.partition)
    assert cleaner.swap_in(log, cleaned, group[:3], report)
    assert not [p.name for p in (tmp_path / "t-0").iterdir() if "swap" in p.name]
    assert _latest(log) == expected


def test_crash_after_old_segments_were_renamed_deleted(tmp_path):
    log, cleaner, group, expected = _crash_setup(tmp_path / "t-0")
    cleaned = cleaner.write_cleaned_segment(log, group[:3])
    cleaned.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
    log.replace_segments([cleaned], group[:3])  # old files are now .deleted
    for segment in [*log.segments, *group[:3]]:  # "crash": files stay as they are
        segment.close()
    assert list((tmp_path / "t-0").glob("*.log.deleted"))
    reopened = load_log(tmp_path / "t-0", log.config, had_clean_shutdown=False)
    assert not list((tmp_path / "t-0").glob("*.deleted"))
    assert _latest(reopened) == expected


# Concurrency ------------------------------------------------------------------------
def test_readers_see_the_latest_value_of_every_key_while_the_cleaner_runs(tmp_path):
    log = _compacted_log(tmp_path / "t-0", segment_bytes=600)
    expected = {}
    for i in range(300):
        key = b"k%02d" % (i % 20)
        _append(log, [(key, b"v%d" % i)])
        expected[key] = b"v%d" % i
    failures: list[str] = []
    reads = 0
    stop = threading.Event()

    def reader() -> None:
        nonlocal reads
        while not stop.is_set():
            try:
                seen = {r.key: r.value for r in read_all(log)}
            except Exception as exc:  # noqa: BLE001 - any error is a failure
                failures.append(repr(exc))
                return
            if seen != expected:
                failures.append(f"read {reads}: {len(seen)} keys, mismatch")
                return
            reads += 1
            # Yield the GIL between reads: a reader that never blocks re-takes the log's
            # lock before the cleaner thread wakes, and the cleaner crawls (minutes).
            time.sleep(0)

    manager = LogCleanerManager(dedupe_buffer_size=24 * 15)  # partial passes: many swaps
    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for _ in range(40):
            report = manager.clean_log(log)
            if report.skipped:
                break
    finally:
        stop.set()
        thread.join()
    assert not failures, failures
    assert reads > 0
    assert {r.key: r.value for r in read_all(log)} == expected


def test_cleaner_thread_cleans_the_filthiest_log_and_stops(tmp_path):
    log = _compacted_log(tmp_path / "t-0")
    for i in range(40):
        _append(log, [(b"k", b"v%d" % i)])
    manager = LogCleanerManager(dedupe_buffer_size=1 << 16)
    thread = CleanerThread(manager, lambda: [log], backoff_ms=10)
    thread.start()
    try:
        deadline = time.monotonic() + 30  # the thread's first pass, however loaded the box
        while not manager.last_reports and time.monotonic() < deadline:
            threading.Event().wait(0.01)
    finally:
        thread.stop(timeout=5)
    assert not thread.is_alive()
    assert manager.last_reports[("t", 0)].end_offset == log.active_segment.base_offset
    assert manager.state()["logs"]["t-0"]["last_report"]["records_kept"] == 1


# Choosing a log ---------------------------------------------------------------------
def test_the_filthiest_compacted_log_above_the_ratio_is_chosen(tmp_path):
    manager = LogCleanerManager(dedupe_buffer_size=1 << 16)
    mostly_clean = _compacted_log(tmp_path / "clean-0")
    dirty = _compacted_log(tmp_path / "dirty-0")
    deleting = open_log(tmp_path / "plain-0", segment_bytes=300)
    for i in range(40):
        _append(mostly_clean, [(b"distinct%d" % i, b"v" * 40)])
        _append(dirty, [(b"k%d" % (i % 2), b"v%d" % i)])
        deleting.append_as_leader(keyed_batch([(b"k", b"v")]), 0)
        deleting.update_high_watermark(deleting.log_end_offset)
    mostly_clean.roll()
    manager.clean_log(mostly_clean)
    for i in range(4):  # a little new dirt: ratio well below 0.5
        _append(mostly_clean, [(b"distinct%d" % i, b"w" * 40)])
    mostly_clean.roll()

    stats = {n: manager.dirty_stats_for(lg) for n, lg in (("c", mostly_clean), ("d", dirty))}
    assert stats["d"].dirty_ratio == 1.0
    assert 0 < stats["c"].dirty_ratio < 0.5 < stats["d"].dirty_ratio
    chosen = manager.grab_filthiest_log([mostly_clean, deleting, dirty])
    assert chosen is dirty
    assert manager.grab_filthiest_log([dirty]) is None  # already in progress
    manager.done_cleaning(dirty)
    manager.clean_log(dirty)
    assert manager.grab_filthiest_log([mostly_clean, deleting, dirty]) is None
    # A lower min.cleanable.dirty.ratio makes the mostly clean log eligible.
    mostly_clean.update_config(mostly_clean.config.with_overrides(min_cleanable_dirty_ratio=0.01))
    assert manager.grab_filthiest_log([mostly_clean, deleting, dirty]) is mostly_clean


def test_max_compaction_lag_forces_cleaning_below_the_ratio(tmp_path):
    manager = LogCleanerManager(dedupe_buffer_size=1 << 16)
    log = _compacted_log(tmp_path / "t-0", min_cleanable_dirty_ratio=0.99)
    for i in range(40):
        _append(log, [(b"k%d" % i, b"v")], timestamp=1_000_000)
    log.roll()
    manager.clean_log(log)
    for i in range(8):
        _append(log, [(b"n%d" % i, b"v" * 30)], timestamp=2_000_000)
    assert manager.grab_filthiest_log([log], now_ms=2_000_500) is None
    log.update_config(log.config.with_overrides(max_compaction_lag_ms=1000))
    assert manager.grab_filthiest_log([log], now_ms=2_000_500) is None  # not yet late
    assert manager.grab_filthiest_log([log], now_ms=2_005_000) is log


# A model ----------------------------------------------------------------------------
keys = st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"f"])
values = st.one_of(st.none(), st.binary(min_size=1, max_size=30))
streams = st.lists(st.lists(st.tuples(keys, values), min_size=1, max_size=4), max_size=40)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=streams, budget=st.sampled_from([24 * 5, 1 << 14]))
def test_compaction_matches_a_dict_model(tmp_path_factory, batches, budget):
    log = _compacted_log(tmp_path_factory.mktemp("model") / "t-0", segment_bytes=250)
    model: dict[bytes, bytes | None] = {}
    for pairs in batches:
        _append(log, pairs)
        model.update(pairs)
    _append(log, [(b"zz-last", b"end")])  # lets the active segment roll past the data
    log.roll()
    model[b"zz-last"] = b"end"
    manager = LogCleanerManager(dedupe_buffer_size=budget)
    for _ in range(30):
        if manager.clean_log(log).skipped:
            break
    assert {r.key: r.value for r in read_all(log)} == model  # tombstones still there

    # Past the delete horizon, a later pass drops the tombstones.
    log.update_config(log.config.with_overrides(delete_retention_ms=0))
    _age_all_segments(log, 3600)
    _append(log, [(b"zz-last", b"end")])
    log.roll()
    for _ in range(30):
        if manager.clean_log(log).skipped:
            break
    live = {k: v for k, v in model.items() if v is not None}
    assert {r.key: r.value for r in read_all(log)} == live


# Transactions -----------------------------------------------------------------------
def test_aborted_transaction_records_go_and_markers_stay_while_needed(tmp_path):
    from brokerd.records.control import ABORT, build_end_txn_marker

    log = _compacted_log(tmp_path / "t-0")
    _append(log, [(b"a", b"committed")])
    txn = keyed_batch(
        [(b"a", b"aborted")],
        producer_id=9,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
        base_offset=log.log_end_offset,
    )
    log.append_as_follower(txn)
    marker = build_end_txn_marker(
        ABORT,
        producer_id=9,
        producer_epoch=0,
        coordinator_epoch=1,
        base_offset=log.log_end_offset,
        timestamp=1000,
    )
    log.append_as_follower(marker)
    for i in range(8):
        _append(log, [(b"f%d" % i, b"x" * 50)])
    report = Cleaner(1 << 16).clean(log, 0)
    assert report.aborted_records_removed == 1
    assert _latest(log)[b"a"] == (0, b"committed")  # the aborted value never wins
    controls = [e for e in log.read_batches(0) if isinstance(e, RecordBatch) and e.is_control]
    assert len(controls) == 1  # kept: its aborted data was only just removed


def _controls(log) -> list[RecordBatch]:
    return [e for e in log.read_batches(0) if isinstance(e, RecordBatch) and e.is_control]


def test_markers_go_once_their_data_is_gone_and_delete_retention_ms_has_passed(tmp_path):
    """Kafka's rule for markers in a compacted log: an ABORT marker stays while its aborted
    data may still be in the log, a COMMIT marker while its data is; once nothing of its
    transaction is left, the marker goes like a tombstone, after delete.retention.ms (the
    delete horizon), so a consumer that read the data sees the marker too."""
    from brokerd.records.control import ABORT, COMMIT, build_end_txn_marker

    log = _compacted_log(tmp_path / "t-0")

    def transaction(producer_id: int, key: bytes, value: bytes, kind: int) -> None:
        log.append_as_follower(
            keyed_batch(
                [(key, value)],
                producer_id=producer_id,
                producer_epoch=0,
                base_sequence=0,
                is_transactional=True,
                base_offset=log.log_end_offset,
            )
        )
        log.append_as_follower(
            build_end_txn_marker(
                kind,
                producer_id=producer_id,
                producer_epoch=0,
                coordinator_epoch=1,
                base_offset=log.log_end_offset,
                timestamp=1000,
            )
        )

    transaction(7, b"k", b"committed-then-overwritten", COMMIT)
    transaction(9, b"k", b"aborted", ABORT)
    for i in range(8):
        _append(log, [(b"f%d" % i, b"x" * 50)])
    _append(log, [(b"k", b"final")])  # overwrites the committed value
    later_markers = []
    for producer_id in (7, 9):  # each producer's last batch is a later transaction's marker
        transaction(producer_id, b"p%d" % producer_id, b"later", COMMIT)
        later_markers.append(log.log_end_offset - 1)
    for i in range(8):
        _append(log, [(b"g%d" % i, b"x" * 50)])
    log.roll()

    manager = LogCleanerManager(dedupe_buffer_size=1 << 16)
    for _ in range(10):
        if manager.clean_log(log).skipped:
            break
    # the data of both transactions is gone, but delete.retention.ms (a day) has not passed
    assert _latest(log)[b"k"][1] == b"final"
    assert not [r for r in read_all(log) if r.value in (b"aborted", b"committed-then-overwritten")]
    assert [c.base_offset for c in _controls(log)] == [1, 3, *later_markers]

    # Past the delete horizon the markers go; the committed state is unchanged.
    log.update_config(log.config.with_overrides(delete_retention_ms=0))
    _age_all_segments(log, 3600)
    _append(log, [(b"zz-last", b"end")])
    log.roll()
    for _ in range(30):
        if manager.clean_log(log).skipped:
            break
    # only the markers that are their producer's last batch stay (Kafka keeps those, empty,
    # so the producer's state survives cleaning)
    assert [c.base_offset for c in _controls(log)] == later_markers
    assert _latest(log)[b"k"][1] == b"final"


def test_a_commit_marker_stays_while_its_data_does(tmp_path):
    from brokerd.records.control import COMMIT, build_end_txn_marker

    log = _compacted_log(tmp_path / "t-0", delete_retention_ms=0)
    log.append_as_follower(
        keyed_batch(
            [(b"k", b"committed")],
            producer_id=7,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
            base_offset=0,
        )
    )
    log.append_as_follower(
        build_end_txn_marker(
            COMMIT,
            producer_id=7,
            producer_epoch=0,
            coordinator_epoch=1,
            base_offset=log.log_end_offset,
            timestamp=1000,
        )
    )
    for i in range(16):
        _append(log, [(b"f%d" % i, b"x" * 50)])
    # a later transaction of the producer, so the first marker is not its last batch
    later = log.log_end_offset
    log.append_as_follower(
        keyed_batch(
            [(b"p7", b"later")],
            producer_id=7,
            producer_epoch=0,
            base_sequence=1,
            is_transactional=True,
            base_offset=later,
        )
    )
    log.append_as_follower(
        build_end_txn_marker(
            COMMIT,
            producer_id=7,
            producer_epoch=0,
            coordinator_epoch=1,
            base_offset=later + 1,
            timestamp=1000,
        )
    )
    _append(log, [(b"zz", b"x")])
    log.roll()
    _age_all_segments(log, 3600)
    manager = LogCleanerManager(dedupe_buffer_size=1 << 16)
    for _ in range(30):
        if manager.clean_log(log).skipped:
            break
    assert _latest(log)[b"k"][1] == b"committed"
    assert [c.base_offset for c in _controls(log)] == [1, later + 1]
