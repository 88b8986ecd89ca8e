"""A new partition's log: made without listing its (new, empty) directory, yet the same log.

A topic's creation makes thousands of logs at once on every replica; each used to list its
new directory three times (interrupted operations, segments, producer snapshots) and
resolve its path twice. Counted with the interpreter's audit events, not timed.
"""

import os
import sys
import time

import pytest

from brokerd.config import LogConfig
from brokerd.log.manager import LogManager, PartitionDirError
from brokerd.log.recovery import load_log

from .helpers import batch, read_all

_listed: list[str] | None = None


def _audit(event: str, args: tuple) -> None:
    if _listed is not None and event in ("os.listdir", "os.scandir"):
        _listed.append(os.fsdecode(args[0]) if args and args[0] is not None else ".")


sys.addaudithook(_audit)


def _listings(action) -> list[str]:
    global _listed
    _listed = []
    try:
        action()
        return _listed
    finally:
        _listed = None


def started(tmp_path):
    manager = LogManager([tmp_path], LogConfig(segment_bytes=400))
    manager.startup()
    return manager


def test_new_logs_list_no_directory(tmp_path):
    manager = started(tmp_path)
    listed = _listings(lambda: [manager.get_or_create_log("wide", i) for i in range(50)])
    assert [p for p in listed if "wide-" in p] == []
    assert len(manager.all_logs()) == 50
    manager.shutdown()


def test_new_log_takes_appends_and_loads_back(tmp_path):
    manager = started(tmp_path)
    created = manager.get_or_create_log("t", 0)
    assert (created.log_start_offset, created.log_end_offset) == (0, 0)
    now = int(time.time() * 1000)
    created.append_as_leader(batch(b"a", b"b", timestamp=now), leader_epoch=0)
    produced = batch(b"c", timestamp=now, producer_id=7, producer_epoch=0, base_sequence=0)
    created.append_as_leader(produced, leader_epoch=0)
    manager.shutdown()

    again = started(tmp_path)
    loaded = again.get_log("t", 0)
    assert [r.value for r in read_all(loaded)] == [b"a", b"b", b"c"]
    assert loaded.producer_state.last_entry(7) is not None
    again.shutdown()


def test_an_existing_directory_is_still_recovered(tmp_path):
    """A directory already there (a replica re-created after a crash) is loaded as before:
    its leftovers completed, its segments opened."""
    config = LogConfig(segment_bytes=400)
    first = load_log(tmp_path / "t-0", config)
    first.append_as_leader(batch(b"kept"), leader_epoch=0)
    first.flush()
    first.close()
    (tmp_path / "t-0" / "00000000000000000099.log.deleted").write_bytes(b"leftover")
    loaded = load_log(tmp_path / "t-0", config, had_clean_shutdown=True)
    assert [r.value for r in read_all(loaded)] == [b"kept"]
    assert not (tmp_path / "t-0" / "00000000000000000099.log.deleted").exists()
    loaded.close()


def test_a_symlinked_partition_dir_is_refused(tmp_path):
    logs = tmp_path / "logs"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    manager = started(logs)
    (logs / "t-0").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(PartitionDirError):
        manager.get_or_create_log("t", 0)
    assert list(elsewhere.iterdir()) == []
    manager.shutdown()
