"""Transactions on the partition side (KIP-98): markers, the last stable offset, the
aborted-transaction index (`.txnindex`, Kafka's format) and its rebuild by recovery."""

from __future__ import annotations

import struct
import time

import pytest

from brokerd.log.errors import InvalidProducerEpochError
from brokerd.log.producer_state import InvalidTxnStateError, TransactionCoordinatorFencedError
from brokerd.log.txn_index import (
    AbortedTxn,
    CorruptTxnIndexError,
    TransactionIndex,
)
from brokerd.protocol.errors import ErrorCode, error_code_of
from brokerd.records.batch import RecordBatch, SimpleRecord, build_batch
from brokerd.records.control import ABORT, COMMIT, decode_key

from .helpers import open_log

P1, P2, P3 = 1000, 2000, 3000


def txn_batch(pid, seq, count=2, epoch=0, transactional=True, value=b"v"):
    now = int(time.time() * 1000)  # markers carry the broker's clock: no time-based roll
    records = [SimpleRecord(value + b"%d" % i, None, (), now) for i in range(count)]
    return build_batch(
        records,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=transactional,
    )


def records_and_markers(log, start=0):
    out = []
    for entry in log.read_batches(start):
        if entry.is_control:
            out.append(("marker", entry.producer_id, decode_key(entry.records()[0].key).type))
        else:
            out.extend(("data", entry.producer_id, r.offset) for r in entry.records())
    return out


# The index file --------------------------------------------------------------------------------


def test_txn_index_entries_are_kafkas_34_byte_format(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(0, path)
    assert not path.exists()  # created only with its first entry, as Kafka's
    index.append(AbortedTxn(5, 10, 20, 21))
    index.append(AbortedTxn(6, 15, 30, 15))
    assert path.read_bytes() == struct.pack(">hqqqq", 0, 5, 10, 20, 21) + struct.pack(
        ">hqqqq", 0, 6, 15, 30, 15
    )
    assert len(path.read_bytes()) == 68
    again = TransactionIndex(0, path)
    assert again.all_entries() == [AbortedTxn(5, 10, 20, 21), AbortedTxn(6, 15, 30, 15)]
    with pytest.raises(ValueError):
        again.append(AbortedTxn(7, 1, 30, 31))  # last offsets must grow
    again.truncate_to(30)
    assert path.read_bytes() == struct.pack(">hqqqq", 0, 5, 10, 20, 21)
    again.reset()
    assert again.all_entries() == []


def test_txn_index_search_and_completion(tmp_path):
    index = TransactionIndex(0, tmp_path / "x.txnindex")
    index.append(AbortedTxn(1, 0, 5, 3))  # another transaction was open from 3
    index.append(AbortedTxn(2, 3, 9, 10))
    index.append(AbortedTxn(3, 12, 14, 15))
    result = index.collect_aborted_txns(6, 10)
    assert result.aborted == [AbortedTxn(2, 3, 9, 10)] and result.is_complete
    result = index.collect_aborted_txns(0, 3)
    # The first entry's LSO (3) reaches the bound: nothing later can overlap [0, 3).
    assert result.aborted == [AbortedTxn(1, 0, 5, 3)] and result.is_complete
    result = index.collect_aborted_txns(10, 100)
    assert result.aborted == [AbortedTxn(3, 12, 14, 15)] and not result.is_complete


def test_txn_index_with_a_partial_entry_is_corrupt(tmp_path):
    path = tmp_path / "x.txnindex"
    path.write_bytes(bytes(40))
    index = TransactionIndex(0, path)
    with pytest.raises(CorruptTxnIndexError):
        index.sanity_check()
    with pytest.raises(CorruptTxnIndexError):
        index.all_entries()


# Markers, LSO and the index in the log ------------------------------------------------------


def test_commit_and_abort_markers_lso_and_index(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(P1, 0), 0)  # 0-1
    log.append_as_leader(txn_batch(P2, 0), 0)  # 2-3
    log.append_as_leader(txn_batch(P3, 0, transactional=False), 0)  # 4-5, idempotent only
    log.append_as_leader(txn_batch(P1, 2), 0)  # 6-7
    log.update_high_watermark(log.log_end_offset)
    assert log.producer_state.ongoing_transactions == {0: P1, 2: P2}
    assert log.last_stable_offset == 0

    info = log.append_end_txn_marker(P1, 0, 3, commit=True, leader_epoch=0)
    assert (info.first_offset, info.last_offset, info.record_count) == (8, 8, 1)
    # Decided but not replicated: the LSO stays at P1's first offset until the HW passes it.
    assert log.last_stable_offset == 0
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 2  # P2's transaction is still open

    log.append_end_txn_marker(P2, 0, 3, commit=False, leader_epoch=0)  # offset 9
    log.update_high_watermark(9)
    assert log.last_stable_offset == 2  # the abort marker is not below the HW yet
    log.update_high_watermark(10)
    assert log.last_stable_offset == 10 == log.high_watermark
    assert log.producer_state.ongoing_transactions == {}

    entries = log.active_segment.txn_index.all_entries()
    assert entries == [AbortedTxn(P2, 2, 9, 10)]  # no other transaction open: marker + 1
    assert log.active_segment.txn_index.path.name == "00000000000000000000.txnindex"

    marker = [e for e in log.read_batches(8) if e.base_offset == 8][0]
    assert marker.is_control and marker.is_transactional and marker.producer_id == P1
    (record,) = marker.records()
    assert decode_key(record.key).type == COMMIT
    assert record.value == struct.pack(">hi", 0, 3)
    assert marker.base_sequence == -1 and marker.partition_leader_epoch == 0
    assert records_and_markers(log)[-2:] == [("marker", P1, COMMIT), ("marker", P2, ABORT)]


def test_abort_entry_lso_is_the_oldest_other_open_transaction(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(P1, 0), 0)  # 0-1
    log.append_as_leader(txn_batch(P2, 0), 0)  # 2-3
    log.append_end_txn_marker(P2, 0, 0, commit=False, leader_epoch=0)  # 4
    assert log.active_segment.txn_index.all_entries() == [AbortedTxn(P2, 2, 4, 0)]


def test_read_committed_aborted_transactions_for_a_read(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(P1, 0), 0)  # 0-1
    log.append_end_txn_marker(P1, 0, 0, commit=False, leader_epoch=0)  # 2
    log.append_as_leader(txn_batch(P2, 0), 0)  # 3-4
    log.append_end_txn_marker(P2, 0, 0, commit=True, leader_epoch=0)  # 5
    log.append_as_leader(txn_batch(P1, 2), 0)  # 6-7
    log.append_end_txn_marker(P1, 0, 0, commit=False, leader_epoch=0)  # 8
    log.update_high_watermark(log.log_end_offset)
    data = log.read(0, 1 << 20, max_offset=log.last_stable_offset)
    aborted = log.aborted_transactions_for_read(data)
    assert [(t.producer_id, t.first_offset) for t in aborted] == [(P1, 0), (P1, 6)]
    data = log.read(3, 1 << 20, max_offset=log.last_stable_offset)
    aborted = log.aborted_transactions_for_read(data)
    assert [(t.producer_id, t.first_offset) for t in aborted] == [(P1, 6)]


def test_non_transactional_batch_inside_a_transaction_is_invalid_txn_state(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(P1, 0), 0)
    with pytest.raises(InvalidTxnStateError) as raised:
        log.append_as_leader(txn_batch(P1, 2, transactional=False), 0)
    assert error_code_of(raised.value) == ErrorCode.invalid_txn_state
    log.append_end_txn_marker(P1, 0, 0, commit=True, leader_epoch=0)
    log.append_as_leader(txn_batch(P1, 2, transactional=False), 0)  # after the marker: fine


def test_marker_epoch_and_coordinator_epoch_fencing(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(P1, 0, epoch=3), 0)
    with pytest.raises(InvalidProducerEpochError):
        log.append_end_txn_marker(P1, 2, 5, commit=True, leader_epoch=0)
    log.append_end_txn_marker(P1, 3, 5, commit=True, leader_epoch=0)
    with pytest.raises(TransactionCoordinatorFencedError) as raised:
        log.append_end_txn_marker(P1, 3, 4, commit=False, leader_epoch=0)
    assert error_code_of(raised.value) == ErrorCode.transaction_coordinator_fenced
    # A marker from a bumped epoch (the coordinator aborting for a new producer) is fine.
    log.append_end_txn_marker(P1, 4, 5, commit=False, leader_epoch=0)
    assert log.producer_state.last_entry(P1).producer_epoch == 4


def test_follower_builds_the_same_index_and_lso(tmp_path):
    leader = open_log(tmp_path / "a" / "t-0")
    leader.append_as_leader(txn_batch(P1, 0), 0)
    leader.append_as_leader(txn_batch(P2, 0), 0)
    leader.append_end_txn_marker(P1, 0, 1, commit=False, leader_epoch=0)
    follower = open_log(tmp_path / "b" / "t-0")
    follower.append_as_follower(leader.read(0, 1 << 20).read())
    assert follower.active_segment.txn_index.all_entries() == [AbortedTxn(P1, 0, 4, 2)]
    follower.update_high_watermark(5)
    assert follower.last_stable_offset == 2  # P2 still open


def test_truncation_drops_index_entries_and_reopens_the_transaction(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(P1, 0), 0)  # 0-1
    log.append_end_txn_marker(P1, 0, 0, commit=False, leader_epoch=0)  # 2
    assert log.active_segment.txn_index.all_entries()
    log.truncate_to(2)
    assert log.active_segment.txn_index.all_entries() == []
    assert log.producer_state.ongoing_transactions == {0: P1}
    log.update_high_watermark(2)
    assert log.last_stable_offset == 0


# Snapshots and recovery -----------------------------------------------------------------------


def test_open_transaction_survives_a_clean_restart(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(P3, 0, transactional=False), 0)  # 0-1
    log.append_as_leader(txn_batch(P1, 0), 0)  # 2-3
    log.close()
    reopened = open_log(tmp_path / "t-0")
    assert reopened.producer_state.ongoing_transactions == {2: P1}
    reopened.update_high_watermark(4)
    assert reopened.last_stable_offset == 2


def _mixed_log(directory):
    log = open_log(directory, segment_bytes=400)
    seq = {P1: 0, P2: 0}
    for round_ in range(6):
        for pid in (P1, P2):
            log.append_as_leader(txn_batch(pid, seq[pid], count=3), 0)
            seq[pid] += 3
        log.append_end_txn_marker(P1, 0, 0, commit=round_ % 2 == 0, leader_epoch=0)
        log.append_end_txn_marker(P2, 0, 0, commit=round_ % 3 == 0, leader_epoch=0)
    log.append_as_leader(txn_batch(P1, seq[P1]), 0)  # left open
    return log


def test_recovery_rebuilds_the_txn_indexes(tmp_path):
    directory = tmp_path / "t-0"
    log = _mixed_log(directory)
    assert len(log.segments) > 3
    before = {s.base_offset: s.txn_index.all_entries() for s in log.segments}
    files = {p.name: p.read_bytes() for p in directory.glob("*.txnindex")}
    assert sum(len(e) for e in before.values()) == 7  # P1 aborts 3 times, P2 4 times
    log.close()
    for path in directory.glob("*.txnindex"):
        path.unlink()
    reopened = open_log(directory, clean=False, segment_bytes=400)
    after = {s.base_offset: s.txn_index.all_entries() for s in reopened.segments}
    assert after == before
    assert {p.name: p.read_bytes() for p in directory.glob("*.txnindex")} == files
    assert reopened.producer_state.ongoing_transactions == log.producer_state.ongoing_transactions
    # A clean open keeps the files as they are.
    reopened.close()
    again = open_log(directory, segment_bytes=400)
    assert {s.base_offset: s.txn_index.all_entries() for s in again.segments} == before


def test_recovery_of_a_torn_tail_drops_the_lost_aborts(tmp_path):
    directory = tmp_path / "t-0"
    log = open_log(directory)
    log.append_as_leader(txn_batch(P1, 0), 0)  # 0-1
    log.append_end_txn_marker(P1, 0, 0, commit=False, leader_epoch=0)  # 2
    log.append_as_leader(txn_batch(P2, 0), 0)  # 3-4
    log.append_end_txn_marker(P2, 0, 0, commit=False, leader_epoch=0)  # 5
    path = log.active_segment.log_path
    size = log.active_segment.size
    log.close()
    with open(path, "r+b") as file:
        file.truncate(size - 10)  # the last marker is torn
    reopened = open_log(directory, clean=False)
    assert reopened.log_end_offset == 5
    assert reopened.active_segment.txn_index.all_entries() == [AbortedTxn(P1, 0, 2, 3)]
    assert reopened.producer_state.ongoing_transactions == {3: P2}


def test_segment_deletion_and_renames_take_the_txn_index(tmp_path):
    directory = tmp_path / "t-0"
    log = _mixed_log(directory)
    holding = [s for s in log.segments if s.txn_index.path.exists()]
    doomed = log.segments[: log.segments.index(holding[0]) + 1]
    first = doomed[-1]
    name = first.txn_index.path.name
    log.delete_segments(doomed, "test")
    assert first.txn_index.path.name == name + ".deleted" and first.txn_index.path.exists()
    assert not (directory / name).exists()
    log.remove_deleted_segments(force=True)
    assert not first.txn_index.path.exists()
    assert not list(directory.glob("*.deleted"))


def test_batches_carry_the_transactional_bit_into_the_log(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(P1, 0), 0)
    (entry,) = list(log.read_batches(0))
    assert isinstance(entry, RecordBatch) and entry.is_transactional and not entry.is_control


def test_dump_log_prints_markers_and_txn_index_entries(tmp_path):
    import argparse
    import io

    from brokerd.tools import dump_log

    log = open_log(tmp_path / "t-0")
    log.append_as_leader(txn_batch(P1, 0), 0)  # 0-1
    log.append_as_leader(txn_batch(P2, 0), 0)  # 2-3
    log.append_end_txn_marker(P1, 0, 3, commit=False, leader_epoch=0)  # 4
    log.append_end_txn_marker(P2, 0, 3, commit=True, leader_epoch=0)  # 5
    log.close()
    parser = argparse.ArgumentParser()
    dump_log.add_arguments(parser)
    segment = tmp_path / "t-0" / "00000000000000000000"
    out, err = io.StringIO(), io.StringIO()
    args = parser.parse_args(
        ["--files", f"{segment}.txnindex", f"{segment}.log", "--print-data-log"]
    )
    assert dump_log.run(args, stdout=out, stderr=err) == 0
    lines = out.getvalue().splitlines()
    assert lines[1] == (
        f"version: 0 producerId: {P1} firstOffset: 0 lastOffset: 4 lastStableOffset: 2"
    )
    markers = [line for line in lines if "endTxnMarker" in line]
    assert [m.split("headerKeys: [] ")[1] for m in markers] == [
        "endTxnMarker: ABORT coordinatorEpoch: 3",
        "endTxnMarker: COMMIT coordinatorEpoch: 3",
    ]


# Compaction ----------------------------------------------------------------------------------


def test_cleaner_drops_aborted_data_whose_marker_is_past_the_cleanable_range(tmp_path):
    """The abort marker sits in the active segment (never cleaned this pass): the cleaner
    learns of the abort from that segment's .txnindex, as Kafka's does, so the aborted
    value never replaces the committed one."""
    from brokerd.log.cleaner import Cleaner

    from .helpers import keyed_batch, read_all

    log = open_log(tmp_path / "t-0", segment_bytes=300, cleanup_policy=("compact",))
    log.append_as_leader(keyed_batch([(b"a", b"committed")]), 0)
    aborted = keyed_batch(
        [(b"a", b"aborted")],
        producer_id=P1,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    log.append_as_leader(aborted, 0)
    for i in range(8):
        log.append_as_leader(keyed_batch([(b"f%d" % i, b"x" * 50)]), 0)
    log.roll()
    log.append_end_txn_marker(P1, 0, 0, commit=False, leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == log.log_end_offset
    report = Cleaner(1 << 16).clean(log, 0)
    assert report.aborted_records_removed == 1
    values = {r.key: r.value for r in read_all(log) if r.key is not None}
    assert values[b"a"] == b"committed"


def test_partition_lso_on_the_leader_and_a_follower(tmp_path):
    from brokerd.replication.partition import Partition

    leader = Partition("t", 0, open_log(tmp_path / "a" / "t-0"), local_id=1)
    leader.make_leader(0, isr=[1, 2], replicas=[1, 2], zk_version=0)
    leader.log.append_as_leader(txn_batch(P1, 0), 0)  # 0-1
    leader.log.append_as_leader(txn_batch(P3, 0, transactional=False), 0)  # 2-3
    leader.update_follower_fetch(2, 4, now=0)
    assert (leader.log.high_watermark, leader.last_stable_offset) == (4, 0)
    leader.log.append_end_txn_marker(P1, 0, 0, commit=True, leader_epoch=0)  # 4
    assert leader.last_stable_offset == 0  # the marker is not replicated yet
    follower = Partition("t", 0, open_log(tmp_path / "b" / "t-0"), local_id=2)
    follower.make_follower(1, 0, isr=[1, 2], replicas=[1, 2])
    follower.log.append_as_follower(leader.log.read(0, 1 << 20).read())
    follower.update_follower_high_watermark(leader.log.high_watermark)
    assert follower.last_stable_offset == 0
    leader.update_follower_fetch(2, 5, now=0)
    assert leader.last_stable_offset == 5 == leader.log.high_watermark
    follower.update_follower_high_watermark(leader.log.high_watermark)
    assert follower.last_stable_offset == 5
