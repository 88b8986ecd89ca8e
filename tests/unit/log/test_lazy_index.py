"""A new log opens one file: its indexes are made at their first entry (Kafka's LazyIndex),
so 10,000 idle partitions fit a broker's open-files limit."""

import logging
import os
import threading

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerd.config import LogConfig
from brokerd.log.index import OffsetIndex, TimeIndex
from brokerd.log.manager import LogManager

from .helpers import batch, open_log, read_all


def _open_fds(under) -> int:
    """This process's descriptors open on files below `under` (not all of them: in a full
    run, other tests' clients open and close sockets on their own threads meanwhile)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith(f"{under}/"):
            count += 1
    return count


def test_new_logs_hold_one_descriptor_each_and_no_index_files(tmp_path):
    manager = LogManager([tmp_path], LogConfig())
    manager.startup()
    before = _open_fds(tmp_path)
    for p in range(40):
        manager.get_or_create_log("idle", p)
    assert _open_fds(tmp_path) - before == 40  # the .log of each (was 5 each: 2 indexes, 2 maps)
    # One file made per log (creating a file costs ~0.5 ms of kernel time here).
    assert os.listdir(tmp_path / "idle-0") == ["00000000000000000000.log"]
    manager.shutdown()
    again = LogManager([tmp_path], LogConfig())
    again.startup()
    assert len(again.logs) == 40
    again.shutdown()


def test_a_lazy_index_is_made_at_its_first_entry_and_read_back(tmp_path):
    index = OffsetIndex(tmp_path / "5.index", base_offset=5, max_index_size=8 * 64)
    time_index = TimeIndex(tmp_path / "5.timeindex", base_offset=5, max_index_size=12 * 64)
    assert index.lookup(50) == (5, 0) and index.max_entries == 64
    time_index.maybe_append(-1, 5)  # no timestamp, no entry (Kafka's empty last entry)
    assert not index.path.exists() and not time_index.path.exists()
    index.append(9, 4096)
    time_index.maybe_append(1000, 9)
    assert index.lookup(50) == (9, 4096) and time_index.lookup(2000) == (1000, 9)
    index.close()
    time_index.close()
    assert index.path.stat().st_size == 8 and time_index.path.stat().st_size == 12
    reopened = OffsetIndex(index.path, base_offset=5, max_index_size=8 * 64)
    assert reopened.entries == 1 and reopened.lookup(50) == (9, 4096)
    reopened.close()


def test_logs_with_and_without_index_entries_reopen_without_a_rebuild(tmp_path, caplog):
    small = open_log(tmp_path / "small-0", segment_bytes=10_000)
    small.append_as_leader(batch(b"x" * 10), leader_epoch=0)
    big = open_log(tmp_path / "big-0", segment_bytes=3_000, index_interval_bytes=100)
    for _ in range(20):  # several segments, each with index entries
        big.append_as_leader(batch(b"y" * 200, b"z" * 200), leader_epoch=0)
    assert len(big.segments) > 2
    small.close()
    big.close()
    with caplog.at_level(logging.WARNING):
        small = open_log(tmp_path / "small-0", segment_bytes=10_000)
        big = open_log(tmp_path / "big-0", segment_bytes=3_000, index_interval_bytes=100)
    assert not [r for r in caplog.records if "rebuilding" in r.getMessage()]
    assert [r.value for r in read_all(small)] == [b"x" * 10]
    assert len(read_all(big)) == 40
    assert big.segments[0].offset_index.entries > 0
    # the sealed segments keep Kafka's files, the time index with its entries
    assert all(s.index_path.exists() and s.time_index_path.exists() for s in big.segments[:-1])
    small.close()
    big.close()


def test_logs_with_data_load_and_pass_retention_holding_only_their_log_files(tmp_path):
    """A restart of a broker whose 10,000 logs held data failed with EMFILE: each loaded
    segment opened and mapped both its indexes (reading its largest timestamp and checking
    them), two descriptors an index. Loaded, they stay closed (the load's checks and the
    log's end read them with a pread); retention's look at every log's largest timestamp
    maps none; a read maps what it searches, one descriptor an index (the mapping's own)."""
    config = LogConfig(segment_bytes=3_000, index_interval_bytes=100)
    manager = LogManager([tmp_path], config)
    manager.startup()
    for p in range(12):
        log = manager.get_or_create_log("busy", p)
        for _ in range(30):  # several segments, each with index entries
            log.append_as_leader(batch(b"y" * 200, b"z" * 200), leader_epoch=0)
    manager.shutdown()

    again = LogManager([tmp_path], config)
    again.startup()
    logs = [again.get_log("busy", p) for p in range(12)]
    segments = sum(len(log.segments) for log in logs)
    assert segments >= 48 and all(log.segments[0].offset_index.entries for log in logs)
    held = segments + 1  # each .log (and the log dir's .lock), no index
    assert _open_fds(tmp_path) == held
    assert all(log.log_end_offset == 60 for log in logs)
    again.run_retention()  # reads every log's first segment's largest timestamp
    assert logs[0].segments[0].largest_timestamp == 1001
    assert _open_fds(tmp_path) == held
    assert [r.offset for r in read_all(logs[3], 5)][:1] == [5]
    searched = _open_fds(tmp_path) - held
    assert 1 <= searched <= 2  # the offset index read (and at most the time index)
    again.shutdown()
    assert _open_fds(tmp_path) == 0


def test_a_new_index_keeps_its_entries_in_memory_until_the_background_makes_its_file(tmp_path):
    """Creating a file costs up to milliseconds: neither an append nor a read on the
    caller's thread makes a new index's file; it is made on the background thread."""
    index = OffsetIndex(tmp_path / "0.index", base_offset=0, max_index_size=8 * 1024)
    with index._open_lock:  # the background's make_file waits here
        for n in range(1, 101):  # past PENDING_ENTRIES: a made index would write them
            index.append(n * 10, n * 4096)
        assert not index.path.exists() and not index.file_made
        assert index.lookup(505) == (500, 50 * 4096) and index.lookup(5) == (0, 0)
        assert index.entry_at(99) == (1000, 100 * 4096)
        index.truncate_to(901)  # a follower's truncation, in memory too
        assert index.entries == 90 and not index.path.exists()
    for _ in range(500):  # the background thread makes it once let in
        if index.file_made:
            break
        threading.Event().wait(0.01)
    assert index.path.exists() and index.path.stat().st_size == 0
    assert index.lookup(505) == (500, 50 * 4096)  # still pending, now written on a read
    index.append(1000, 200 * 4096)
    index.close()
    reopened = OffsetIndex(index.path, base_offset=0, max_index_size=8 * 1024, writable=False)
    assert reopened.entries == 91 and reopened.lookup(10**6) == (1000, 200 * 4096)
    assert reopened.lookup(905) == (900, 90 * 4096)
    reopened.close()


def test_closing_an_idle_log_makes_no_index_files_but_a_roll_seals_with_both(tmp_path):
    log = open_log(tmp_path / "t-0", segment_bytes=10_000)
    log.append_as_leader(batch(b"a", b"b"), leader_epoch=0)
    log.close()
    names = os.listdir(tmp_path / "t-0")
    assert "00000000000000000000.log" in names
    assert not [n for n in names if n.endswith((".index", ".timeindex"))]
    reopened = open_log(tmp_path / "t-0", segment_bytes=10_000)
    assert [r.value for r in read_all(reopened)] == [b"a", b"b"]
    assert reopened.segments[0].max_timestamp_so_far >= 0  # read from its batches
    reopened.roll()
    sealed = reopened.segments[0]
    assert sealed.index_path.exists() and sealed.time_index_path.exists()
    reopened.close()


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 10)),
        st.tuples(st.just("lookup"), st.integers(0, 300)),
        st.tuples(st.just("truncate"), st.integers(0, 300)),
        st.tuples(st.just("make_file"), st.just(0)),
        st.tuples(st.just("flush"), st.just(0)),
    ),
    max_size=80,
)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_OPS)
def test_a_new_index_answers_like_a_list_whenever_its_file_is_made(tmp_path_factory, ops):
    """Appends, lookups, truncations and flushes in any order, the background's make_file
    at any point (held off otherwise): every lookup answers as a plain list of the entries
    would, and what reaches the file is exactly those entries."""
    directory = tmp_path_factory.mktemp("idx")
    index = OffsetIndex(directory / "0.index", base_offset=0, max_index_size=8 * 4096)
    model: list[tuple[int, int]] = []
    with index._open_lock:  # the background thread waits; the test makes the file itself
        index._file_requested = True
    for op, value in ops:
        if op == "append":
            offset = (model[-1][0] if model else 0) + value
            index.append(offset, offset * 10)
            model.append((offset, offset * 10))
        elif op == "lookup":
            below = [e for e in model if e[0] <= value]
            expected = below[-1] if below and value > 0 else (0, 0)
            assert tuple(index.lookup(value)) == expected
        elif op == "truncate":
            index.truncate_to(value)
            model = [e for e in model if e[0] < value]
            assert index.entries == len(model)
        elif op == "make_file":
            index.make_file()
        else:
            index.flush()
    index.close()
    if not model and not index.file_made:
        assert not index.path.exists()
        return
    reopened = OffsetIndex(index.path, base_offset=0, writable=False)
    assert [tuple(e) for e in reopened] == model
    reopened.close()
