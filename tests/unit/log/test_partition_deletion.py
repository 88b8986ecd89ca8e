"""Deleting a partition's directory: Kafka's `-delete` name, within 255 bytes; the files
released without a flush; leftovers recognised at start-up; strays told apart."""

from brokerd.config import LogConfig
from brokerd.coordination.metadata import TopicInfo
from brokerd.log.manager import MAX_DIR_NAME_BYTES, LogManager, delete_dir_name
from brokerd.replication.strays import find_strays

from .helpers import batch


def started(tmp_path) -> LogManager:
    manager = LogManager([tmp_path], LogConfig(segment_bytes=400))
    manager.startup()
    return manager


def test_the_delete_name_of_the_longest_topic_fits_the_file_system():
    longest = "t" * 249
    name = delete_dir_name(longest, 12345)
    assert len(name.encode()) == MAX_DIR_NAME_BYTES
    assert name.endswith("-12345." + name.split(".")[-1]) and name.endswith("-delete")
    assert longest.startswith(name.split("-12345.")[0])
    short = delete_dir_name("orders", 3)
    assert short.startswith("orders-3.") and len(short) == len("orders-3.") + 32 + 7


def test_begin_delete_renames_and_the_removal_comes_after(tmp_path):
    manager = started(tmp_path)
    partition_log = manager.get_or_create_log("doomed", 0)
    partition_log.append_as_leader(batch(b"a", b"b"), 0)
    checkpoint = partition_log.dir / "leader-epoch-checkpoint"
    before = checkpoint.read_bytes() if checkpoint.exists() else None

    doomed = manager.begin_delete("doomed", 0)
    assert doomed is not None and doomed.name.endswith("-delete")
    assert manager.get_log("doomed", 0) is None and partition_log.closed
    assert not (tmp_path / "doomed-0").exists()
    # Released, not closed: no flush or checkpoint written into a directory going away.
    moved = doomed / "leader-epoch-checkpoint"
    assert (moved.read_bytes() if moved.exists() else None) == before

    manager.remove_dir(doomed)
    assert not doomed.exists()
    assert manager.begin_delete("doomed", 0) is None  # nothing left to delete
    manager.shutdown()


def test_an_unfinished_deletion_is_handed_over_at_start_up(tmp_path):
    manager = started(tmp_path)
    manager.get_or_create_log("gone", 1)
    doomed = manager.begin_delete("gone", 1)
    manager.shutdown()  # before the removal: a crash or a stop in between

    again = started(tmp_path)
    assert again.dirs_to_delete == [doomed]
    assert again.all_logs() == []
    again.shutdown()


def test_strays_are_partitions_zookeeper_does_not_give_this_broker():
    topics = {
        "kept": TopicInfo("kept", "id-1", {0: [1, 2], 1: [2, 3]}, adding={1: [1]}),
        "moved": TopicInfo("moved", "id-2", {0: [2, 3]}),
    }
    held = [("kept", 0), ("kept", 1), ("kept", 2), ("moved", 0), ("ghost", 0)]
    strays = find_strays(held, topics, broker_id=1)
    assert sorted(strays) == [("ghost", 0), ("kept", 2), ("moved", 0)]
    assert "no topic ghost" in strays[("ghost", 0)]
