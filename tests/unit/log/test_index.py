"""Index appends are kept back and written together; every read sees them at once."""

import struct
import threading

import pytest

from brokerd.log.index import PENDING_ENTRIES, OffsetIndex, TimeIndex


def _file_entries(path, entry_format):
    size = struct.calcsize(entry_format)
    data = path.read_bytes()
    return [struct.unpack_from(entry_format, data, i) for i in range(0, len(data), size)]


def test_kept_back_entries_are_visible_to_lookups_and_reach_the_file(tmp_path):
    (tmp_path / "0.index").touch()  # a new index's first entries wait for its file instead
    index = OffsetIndex(tmp_path / "0.index", base_offset=100, max_index_size=8 * 1024)
    for i in range(3):
        index.append(100 + 10 * i, 4096 * i)
    assert index.entries == 3
    assert index.lookup(125) == (120, 8192)  # read before any write of the three
    assert _file_entries(index.path, ">ii")[:3] == [(0, 0), (10, 4096), (20, 8192)]
    for i in range(3, 3 + PENDING_ENTRIES):  # a full batch is written without a read
        index.append(100 + 10 * i, 4096 * i)
    written = _file_entries(index.path, ">ii")
    assert written[3 + PENDING_ENTRIES - 1] == (
        10 * (2 + PENDING_ENTRIES),
        4096 * (2 + PENDING_ENTRIES),
    )
    index.append(10_000, 999_999)
    index.close()  # trims to the entries, the kept-back one included
    assert _file_entries(index.path, ">ii")[-1] == (9900, 999_999)
    assert len(_file_entries(index.path, ">ii")) == 4 + PENDING_ENTRIES


def test_time_index_flush_writes_kept_back_entries(tmp_path):
    index = TimeIndex(tmp_path / "0.timeindex", base_offset=0, max_index_size=12 * 1024)
    index.maybe_append(1000, 5)
    index.maybe_append(2000, 9)
    index.flush()
    assert _file_entries(index.path, ">qi")[:2] == [(1000, 5), (2000, 9)]
    assert index.lookup(1500) == (1000, 5)


@pytest.mark.parametrize("path", ["checked", "in_order"])
def test_readers_on_other_threads_see_every_appended_entry(tmp_path, path):
    index = OffsetIndex(tmp_path / "0.index", base_offset=0, max_index_size=8 * 20_000)
    done = threading.Event()
    failures = []

    def read():
        while not done.is_set():
            count = index.entries
            if count and index.lookup(10 * (count - 1)) != (10 * (count - 1), count - 1):
                failures.append(count)

    reader = threading.Thread(target=read)
    reader.start()
    append = index.append if path == "checked" else index.append_in_order
    for i in range(10_000):
        append(10 * i, i)
    done.set()
    reader.join()
    assert failures == []
    assert [tuple(e) for e in index] == [(10 * i, i) for i in range(10_000)]


def test_in_order_appends_keep_the_checked_paths_view_of_the_last_entry(tmp_path):
    """The produce path's unchecked appends leave entries that the checked appends, lookups
    and the file all agree on, whether the last entry is still kept back or written."""
    offsets = OffsetIndex(tmp_path / "0.index", base_offset=100, max_index_size=8 * 1024)
    times = TimeIndex(tmp_path / "0.timeindex", base_offset=100, max_index_size=12 * 1024)
    for i in range(PENDING_ENTRIES + 3):  # one full write, then three kept back
        offsets.append_in_order(10 * i, 4096 * i)
        times.append_if_later(1000 + i // 2, 10 * i)  # every other timestamp repeats
    last = 10 * (PENDING_ENTRIES + 2)
    assert offsets.last_offset == 100 + last
    assert times.last_entry == (1000 + (PENDING_ENTRIES + 2) // 2, 100 + last)
    try:
        offsets.append(100 + last, 1)  # the checked path sees the kept-back last entry
    except ValueError as refused:
        assert "not larger" in str(refused)
    else:
        raise AssertionError("an offset equal to the last entry was accepted")
    times.maybe_append(999, 100 + last)  # an older timestamp: not appended
    assert times.entries == (PENDING_ENTRIES + 3 + 1) // 2
    assert offsets.lookup(100 + 10 * PENDING_ENTRIES + 5) == (
        100 + 10 * PENDING_ENTRIES,
        4096 * PENDING_ENTRIES,
    )
    offsets.close()
    times.close()
    assert _file_entries(offsets.path, ">ii") == [
        (10 * i, 4096 * i) for i in range(PENDING_ENTRIES + 3)
    ]
    assert _file_entries(times.path, ">qi") == [
        (1000 + i // 2, 10 * i) for i in range(0, PENDING_ENTRIES + 3, 2)
    ]


def test_a_lookup_in_a_closed_index_raises_value_error_as_a_closed_file_does(tmp_path):
    """Log.read retries a read that met a segment closed under it, on ValueError."""
    offsets = OffsetIndex(tmp_path / "0.index", base_offset=0, max_index_size=8 * 1024)
    times = TimeIndex(tmp_path / "0.timeindex", base_offset=0, max_index_size=12 * 1024)
    for i in range(4):
        offsets.append(10 * i, 4096 * i)
        times.maybe_append(1000 * (i + 1), 10 * i)
    offsets.close()
    times.close()
    with pytest.raises(ValueError):
        offsets.lookup(25)
    with pytest.raises(ValueError):
        times.lookup(2500)
