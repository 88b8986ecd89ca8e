"""Checkpoint files and meta.properties: Kafka's exact text, atomic replacement, clear errors."""

import pytest

from brokerd.log.checkpoints import (
    CorruptCheckpointError,
    EpochEntry,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    read_properties,
    write_properties,
)


def test_offset_checkpoint_writes_kafka_text(tmp_path):
    path = tmp_path / "cleaner-offset-checkpoint"
    # The seed's cleaner checkpoint, out of order to show the file is sorted.
    OffsetCheckpointFile(path).write(
        {
            ("nginx_access_log", 2): 5033168,
            ("nginx_access_log", 0): 5033168,
            ("nginx_access_log", 1): 5033166,
        }
    )
    assert path.read_text() == (
        "0\n3\nnginx_access_log 0 5033168\nnginx_access_log 1 5033166\nnginx_access_log 2 5033168\n"
    )
    assert not (tmp_path / "cleaner-offset-checkpoint.tmp").exists()


def test_offset_checkpoint_round_trip_and_replace(tmp_path):
    checkpoint = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    checkpoint.write({("a", 0): 10, ("b-c.d_e", 7): 0})
    assert checkpoint.read() == {("a", 0): 10, ("b-c.d_e", 7): 0}
    checkpoint.write({("a", 0): 11})
    assert checkpoint.read() == {("a", 0): 11}
    checkpoint.write({})
    assert checkpoint.path.read_text() == "0\n0\n"
    assert checkpoint.read() == {}


def test_offset_checkpoint_missing_or_empty_file_reads_empty(tmp_path):
    assert OffsetCheckpointFile(tmp_path / "nope").read() == {}
    (tmp_path / "empty").write_text("")
    assert OffsetCheckpointFile(tmp_path / "empty").read() == {}


def test_offset_checkpoint_accepts_kafka_written_file(tmp_path):
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text("0\n2\n__consumer_offsets 13 0\nt1  4   99\n")
    assert OffsetCheckpointFile(path).read() == {("__consumer_offsets", 13): 0, ("t1", 4): 99}


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("x\n0\n", "line 1"),
        ("0\ny\n", "line 2"),
        ("0\n1\ntopic 0\n", "line 3"),
        ("0\n2\na 0 1\nb zero 1\n", "line 4"),
        ("0\n1\na 0 1 extra\n", "line 3"),
    ],
)
def test_offset_checkpoint_malformed_names_file_and_line(tmp_path, text, line):
    path = tmp_path / "log-start-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError) as info:
        OffsetCheckpointFile(path).read()
    assert str(path) in str(info.value)
    assert line in str(info.value)
    assert isinstance(info.value, ValueError)


def test_offset_checkpoint_wrong_version_or_count(tmp_path):
    path = tmp_path / "cp"
    path.write_text("1\n0\n")
    with pytest.raises(CorruptCheckpointError, match="version 1"):
        OffsetCheckpointFile(path).read()
    path.write_text("0\n3\na 0 1\n")
    with pytest.raises(CorruptCheckpointError, match="expected 3 entries"):
        OffsetCheckpointFile(path).read()


def test_leader_epoch_checkpoint_text(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    checkpoint = LeaderEpochCheckpointFile(path)
    checkpoint.write([EpochEntry(0, 0)])
    # The seed's 8-byte file.
    assert path.read_bytes() == b"0\n1\n0 0\n"
    checkpoint.write([EpochEntry(0, 0), EpochEntry(1, 100), EpochEntry(3, 250)])
    assert path.read_text() == "0\n3\n0 0\n1 100\n3 250\n"
    assert checkpoint.read() == [EpochEntry(0, 0), EpochEntry(1, 100), EpochEntry(3, 250)]


def test_leader_epoch_checkpoint_malformed(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text("0\n1\n0 0 0\n")
    with pytest.raises(CorruptCheckpointError, match="line 3"):
        LeaderEpochCheckpointFile(path).read()


def test_properties_round_trip_like_meta_properties(tmp_path):
    path = tmp_path / "meta.properties"
    write_properties(
        path,
        {"version": "0", "broker.id": "1", "cluster.id": "Xy_9-AbCdEfGhIjKlMnOpQ"},
        header_comment="",
    )
    lines = path.read_text().splitlines()
    assert lines[0] == "#"
    assert lines[1].startswith("#")  # the date line Properties.store writes
    assert lines[2:] == ["version=0", "broker.id=1", "cluster.id=Xy_9-AbCdEfGhIjKlMnOpQ"]
    assert read_properties(path) == {
        "version": "0",
        "broker.id": "1",
        "cluster.id": "Xy_9-AbCdEfGhIjKlMnOpQ",
    }


def test_properties_reads_java_syntax(tmp_path):
    path = tmp_path / "x.properties"
    path.write_text(
        "# comment\n! also a comment\n\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "  d=  spaced value\n"
        "e=one \\\n    two\n"
        "f\\=g=h\\:i\n"
        "u=\\u00e9\\t\n"
        "empty=\n"
        "bare\n"
    )
    assert read_properties(path) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "spaced value",
        "e": "one two",
        "f=g": "h:i",
        "u": "é\t",
        "empty": "",
        "bare": "",
    }


def test_properties_escapes_survive_round_trip(tmp_path):
    path = tmp_path / "x.properties"
    props = {"key with space": " leading", "k=:#!": "v=:#!\\", "uni": "é\n"}
    write_properties(path, props)
    assert read_properties(path) == props


def test_sync_filesystems_syncs_each_filesystem_once(tmp_path, monkeypatch):
    from brokerd.log import checkpoints

    calls: list[int] = []
    monkeypatch.setattr(checkpoints, "_syncfs", lambda fd: calls.append(fd) or 0)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    checkpoints.sync_filesystems([tmp_path / "a", tmp_path / "b", tmp_path])
    assert len(calls) == 1  # three dirs of one filesystem
    failed: list[int] = []
    monkeypatch.setattr(checkpoints, "_syncfs", lambda fd: failed.append(fd) or -1)
    monkeypatch.setattr(checkpoints.os, "sync", lambda: failed.append(-1))
    checkpoints.sync_filesystems([tmp_path])
    assert failed[-1] == -1  # syncfs refused: sync(2) instead
