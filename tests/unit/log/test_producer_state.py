"""Idempotent producer state: seed 000 §4 / §6 test 10, Kafka's sequence rules, snapshots."""

import struct

import crc32c
import pytest

from brokerd.log.errors import (
    InvalidProducerEpochError,
    LogError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from brokerd.log.producer_state import (
    BatchMetadata,
    CorruptSnapshotError,
    ProducerStateEntry,
    ProducerStateManager,
    read_snapshot,
    write_snapshot,
)
from brokerd.protocol.errors import ErrorCode, error_code_of
from brokerd.records import control
from brokerd.records.batch import RecordBatch, SimpleRecord, build_batch

PID = 1000
NOW = 1_700_000_000_000


def batch(seq, count=1, *, pid=PID, epoch=0, ts=NOW, transactional=False):
    records = [SimpleRecord(b"v%d" % i, timestamp=ts) for i in range(count)]
    raw = build_batch(
        records,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=transactional,
    )
    return RecordBatch(raw)


class Log:
    """The tiny bit of a log the tests need: assigns offsets and feeds the manager."""

    def __init__(self, manager):
        self.manager = manager
        self.next_offset = 0

    def produce(self, b):
        duplicate = self.manager.check(b)
        if duplicate is not None:
            return duplicate.first_offset, duplicate.last_offset, False
        first, last = self.next_offset, self.next_offset + b.last_offset_delta
        self.manager.update(b, first, last)
        self.next_offset = last + 1
        return first, last, True


@pytest.fixture
def manager(tmp_path):
    return ProducerStateManager(tmp_path)


@pytest.fixture
def log(manager):
    return Log(manager)


def test_error_codes_match_kafka():
    expected = {
        InvalidProducerEpochError: ErrorCode.invalid_producer_epoch,
        OutOfOrderSequenceError: ErrorCode.out_of_order_sequence_number,
        UnknownProducerIdError: ErrorCode.unknown_producer_id,
        LogError: ErrorCode.unknown_server_error,
    }
    for error, code in expected.items():
        assert error_code_of(error("x")) == code


def test_non_idempotent_batches_are_not_checked(manager):
    plain = RecordBatch(build_batch([SimpleRecord(b"x")]))
    assert manager.check(plain) is None
    manager.update(plain, 0, 0)
    manager.update(plain, 1, 1)
    assert manager.check(plain) is None
    assert dict(manager.active_producers) == {}
    assert manager.map_end_offset == 2


def test_duplicate_of_any_of_the_last_five_returns_original_offsets(log):
    for seq in range(0, 12, 2):  # six batches of two records: offsets 0-1 ... 10-11
        assert log.produce(batch(seq, 2))[2]
    assert log.next_offset == 12
    # The second batch (seq 2-3 at offsets 2-3) is among the last five.
    assert log.produce(batch(2, 2)) == (2, 3, False)
    assert log.produce(batch(10, 2)) == (10, 11, False)
    assert log.next_offset == 12  # nothing written


def test_sixth_oldest_is_no_longer_a_duplicate(log):
    for seq in range(6):
        log.produce(batch(seq))
    with pytest.raises(OutOfOrderSequenceError):
        log.produce(batch(0))
    assert log.produce(batch(1)) == (1, 1, False)


def test_duplicate_needs_same_epoch_and_exact_range(log):
    log.produce(batch(0, 3))
    with pytest.raises(OutOfOrderSequenceError):
        log.produce(batch(0, 2))  # overlaps but is not the same batch
    # The same range under a new epoch is a new batch, not a retry.
    assert log.produce(batch(0, 3, epoch=1)) == (3, 5, True)


def test_sequence_gap_is_out_of_order(log):
    log.produce(batch(0, 2))
    with pytest.raises(OutOfOrderSequenceError) as info:
        log.produce(batch(3))
    assert info.value.error_code == 45
    assert log.produce(batch(2)) == (2, 2, True)


def test_unknown_producer_with_nonzero_sequence(log):
    with pytest.raises(UnknownProducerIdError) as info:
        log.produce(batch(5))
    assert info.value.error_code == 59
    assert log.produce(batch(0)) == (0, 0, True)


def test_new_epoch_must_start_at_zero(log):
    log.produce(batch(0, 3))
    with pytest.raises(OutOfOrderSequenceError):
        log.produce(batch(3, epoch=1))
    assert log.produce(batch(0, epoch=1)) == (3, 3, True)
    entry = log.manager.last_entry(PID)
    assert entry.producer_epoch == 1
    assert list(entry.batches) == [BatchMetadata(0, 0, 3, 3, NOW)]


def test_old_epoch_is_rejected(log):
    log.produce(batch(0, epoch=3))
    with pytest.raises(InvalidProducerEpochError) as info:
        log.produce(batch(1, epoch=2))
    assert info.value.error_code == 47


def test_sequence_wraps_at_int32_max(log):
    log.produce(batch(0))
    log.manager.update(batch(2**31 - 3, 2), 1, 2)  # replayed: seqs 2147483645..2147483646
    assert log.manager.last_entry(PID).last_seq == 2**31 - 2
    wrapping = batch(2**31 - 1, 3)  # 2147483647, 0, 1
    assert wrapping.last_sequence == 1
    log.next_offset = 3
    assert log.produce(wrapping) == (3, 5, True)
    assert log.produce(batch(2)) == (6, 6, True)
    assert log.produce(wrapping) == (3, 5, False)


def test_update_never_validates(manager):
    manager.update(batch(7, epoch=5), 0, 0)
    manager.update(batch(100, epoch=2), 1, 1)  # replay of whatever the log holds
    assert manager.last_entry(PID).producer_epoch == 2
    assert manager.map_end_offset == 2


def test_transactions_and_markers(manager):
    manager.update(batch(0, 2, transactional=True), 10, 11)
    entry = manager.last_entry(PID)
    assert entry.current_txn_first_offset == 10
    manager.update(batch(2, transactional=True), 12, 12)
    assert entry.current_txn_first_offset == 10
    marker = RecordBatch(
        control.build_end_txn_marker(
            control.COMMIT,
            producer_id=PID,
            producer_epoch=0,
            coordinator_epoch=7,
            timestamp=NOW + 5,
        )
    )
    assert manager.check(marker) is None
    manager.update(marker, 13, 13)
    assert entry.current_txn_first_offset is None
    assert entry.coordinator_epoch == 7
    assert entry.last_timestamp == NOW + 5
    assert entry.last_seq == 2  # markers carry no sequence
    assert manager.map_end_offset == 14


def test_remove_expired_keeps_open_transactions(tmp_path):
    manager = ProducerStateManager(tmp_path, producer_id_expiration_ms=1000)
    manager.update(batch(0, pid=1, ts=NOW), 0, 0)
    manager.update(batch(0, pid=2, ts=NOW, transactional=True), 1, 1)
    manager.update(batch(0, pid=3, ts=NOW + 500), 2, 2)
    assert manager.remove_expired(NOW + 999) == []
    assert manager.remove_expired(NOW + 1000) == [1]
    assert sorted(manager.active_producers) == [2, 3]


def test_snapshot_bytes_are_kafka_format(manager, tmp_path):
    manager.update(batch(0, 3, pid=7, epoch=2, ts=123), 40, 42)
    path = manager.take_snapshot(43)
    assert path == tmp_path / "00000000000000000043.snapshot"
    data = path.read_bytes()
    entry = struct.pack(">qhiqiqiq", 7, 2, 2, 42, 2, 123, -1, -1)
    body = struct.pack(">i", 1) + entry
    assert data == struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    assert len(data) == 10 + 46  # header + one 46-byte entry


def test_empty_snapshot_is_ten_bytes(manager):
    # The seed's .snapshot files are 10 B: a header and zero producers.
    assert manager.take_snapshot(0).stat().st_size == 10


def test_state_survives_snapshot_and_load(tmp_path, log):
    for seq in range(3):
        log.produce(batch(seq))
    log.produce(batch(0, 2, pid=2, epoch=4))
    log.manager.take_snapshot()
    assert log.manager.snapshot_offsets() == [5]

    reloaded = ProducerStateManager(tmp_path)
    assert reloaded.load(0, 5, now_ms=NOW) == 5
    assert reloaded.map_end_offset == 5
    assert reloaded.last_entry(PID).last_seq == 2
    assert reloaded.last_entry(2).producer_epoch == 4
    fresh = Log(reloaded)
    fresh.next_offset = 5
    assert fresh.produce(batch(2)) == (2, 2, False)  # the last batch is still a duplicate
    with pytest.raises(OutOfOrderSequenceError):
        fresh.produce(batch(4))
    assert fresh.produce(batch(3)) == (5, 5, True)


def test_load_skips_and_deletes_corrupt_snapshot(tmp_path, log):
    log.produce(batch(0))
    log.manager.take_snapshot()  # at 1
    log.produce(batch(1))
    newest = log.manager.take_snapshot()  # at 2
    data = bytearray(newest.read_bytes())
    data[-1] ^= 0xFF
    newest.write_bytes(bytes(data))
    with pytest.raises(CorruptSnapshotError):
        read_snapshot(newest)

    reloaded = ProducerStateManager(tmp_path)
    assert reloaded.load(0, 2, now_ms=NOW) == 1  # replay offset 1 from the log
    assert reloaded.last_entry(PID).last_seq == 0
    assert reloaded.snapshot_offsets() == [1]


def test_load_deletes_snapshots_past_log_end_and_at_log_start(tmp_path, manager):
    manager.update(batch(0), 0, 0)
    for offset in (0, 5, 10, 20):
        manager.take_snapshot(offset)
    reloaded = ProducerStateManager(tmp_path)
    assert reloaded.load(0, 12, now_ms=NOW) == 10
    assert reloaded.snapshot_offsets() == [5, 10]
    assert reloaded.load(10, 12, now_ms=NOW) == 10  # nothing usable: replay from the start
    assert reloaded.snapshot_offsets() == []
    assert dict(reloaded.active_producers) == {}


def test_load_drops_expired_producers(tmp_path, manager):
    manager.update(batch(0, ts=NOW), 0, 0)
    manager.take_snapshot(1)
    reloaded = ProducerStateManager(tmp_path, producer_id_expiration_ms=10)
    reloaded.load(0, 1, now_ms=NOW + 10)
    assert dict(reloaded.active_producers) == {}


def test_truncate_and_reload(tmp_path, log):
    log.produce(batch(0))
    log.produce(batch(1))
    log.manager.take_snapshot()  # at 2
    log.produce(batch(2))
    log.manager.take_snapshot()  # at 3
    assert log.manager.truncate_and_reload(0, 3, now_ms=NOW) == 3  # nothing to do
    assert log.manager.last_entry(PID).last_seq == 2
    # Truncated to 2: the snapshot at 3 describes data that is gone.
    assert log.manager.truncate_and_reload(0, 2, now_ms=NOW) == 2
    assert log.manager.snapshot_offsets() == [2]
    assert log.manager.last_entry(PID).last_seq == 1


def test_snapshot_housekeeping(manager):
    for offset in (3, 1, 7):
        manager.take_snapshot(offset)
    assert manager.snapshot_offsets() == [1, 3, 7]
    assert manager.latest_snapshot_offset == 7
    assert manager.oldest_snapshot_offset == 1
    manager.delete_snapshots_before(7)
    assert manager.snapshot_offsets() == [7]
    manager.truncate_fully_and_start_at(50)
    assert manager.snapshot_offsets() == []
    assert manager.latest_snapshot_offset is None
    assert manager.map_end_offset == 50


def test_write_and_read_snapshot_round_trip(tmp_path):
    entries = [
        ProducerStateEntry(
            5, 1, coordinator_epoch=3, current_txn_first_offset=90, last_timestamp=9
        ),
        ProducerStateEntry(2, 0),
    ]
    entries[0].add_batch(1, BatchMetadata(2**31 - 1, 1, 98, 100, 9))  # wrapped sequences
    path = tmp_path / "00000000000000000101.snapshot"
    write_snapshot(path, entries)
    loaded = read_snapshot(path)
    assert [e.producer_id for e in loaded] == [2, 5]
    assert loaded[0].is_empty and loaded[0].last_seq == -1
    assert loaded[1] == entries[0]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:5],
        lambda data: struct.pack(">h", 2) + data[2:],
        lambda data: data + b"\x00",
        lambda data: data[:-1],
    ],
)
def test_read_snapshot_rejects_damage(tmp_path, damage):
    path = tmp_path / "00000000000000000001.snapshot"
    write_snapshot(path, [ProducerStateEntry(1, 0)])
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(CorruptSnapshotError):
        read_snapshot(path)
