"""Index appends are kept back and written together; every read sees them at once."""

import struct
import threading

from brokerd.log.index import PENDING_ENTRIES, OffsetIndex, TimeIndex


def _file_entries(path, entry_format):
    size = struct.calcsize(entry_format)
    data = path.read_bytes()
    return [struct.unpack_from(entry_format, data, i) for i in range(0, len(data), size)]


def test_kept_back_entries_are_visible_to_lookups_and_reach_the_file(tmp_path):
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


def test_readers_on_other_threads_see_every_appended_entry(tmp_path):
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
    for i in range(10_000):
        index.append(10 * i, i)
    done.set()
    reader.join()
    assert failures == []
    assert [tuple(e) for e in index] == [(10 * i, i) for i in range(10_000)]
