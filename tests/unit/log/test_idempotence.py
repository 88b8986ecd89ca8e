"""Idempotent appends through the Log (seed 000 §4, checklist §6 test 10)."""

import time

import pytest

from brokerd.log import errors

from .helpers import batch, open_log, read_all

PID = 4000


def produce(log, seq, n=1, epoch=0, pid=PID):
    values = [b"p%d-s%d" % (pid, seq + i) for i in range(n)]
    return log.append_as_leader(
        batch(
            *values,
            timestamp=int(time.time() * 1000),  # old timestamps would expire the producer
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
        ),
        leader_epoch=0,
    )


def test_duplicate_of_one_of_the_last_five_batches_is_acked_with_its_offsets(tmp_path):
    log = open_log(tmp_path / "t-0")
    infos = [produce(log, seq=2 * i, n=2) for i in range(6)]
    end = log.log_end_offset
    retry = produce(log, seq=2, n=2)  # the second batch, still among the last five
    assert retry.duplicate
    assert (retry.first_offset, retry.last_offset) == (infos[1].first_offset, infos[1].last_offset)
    assert log.log_end_offset == end  # not written again
    with pytest.raises(errors.OutOfOrderSequenceError):
        produce(log, seq=0, n=2)  # the first batch has left the window of five


def test_sequence_gap_and_fenced_epoch(tmp_path):
    log = open_log(tmp_path / "t-0")
    produce(log, seq=0)
    with pytest.raises(errors.OutOfOrderSequenceError):
        produce(log, seq=5)
    produce(log, seq=0, epoch=1)  # a new epoch starts again at 0
    with pytest.raises(errors.InvalidProducerEpochError):
        produce(log, seq=1, epoch=0)
    with pytest.raises(errors.OutOfOrderSequenceError):
        produce(log, seq=3, epoch=2)  # a new epoch must start at 0
    assert [r.value for r in read_all(log)] == [b"p4000-s0", b"p4000-s0"]


def test_unknown_producer_with_a_nonzero_sequence(tmp_path):
    log = open_log(tmp_path / "t-0")
    with pytest.raises(errors.UnknownProducerIdError):
        produce(log, seq=7)
    assert log.log_end_offset == 0


def test_producer_state_survives_a_clean_restart_and_a_crash(tmp_path):
    directory = tmp_path / "t-0"
    log = open_log(directory, segment_bytes=200)
    for seq in range(8):
        produce(log, seq=seq)
    assert len(log.segments) > 1
    log.close()
    reopened = open_log(directory, segment_bytes=200)
    assert produce(reopened, seq=7).duplicate
    produce(reopened, seq=8)
    # no close: the state must come back from snapshots plus the log after them
    crashed = open_log(directory, clean=False, segment_bytes=200)
    assert produce(crashed, seq=8).duplicate
    with pytest.raises(errors.OutOfOrderSequenceError):
        produce(crashed, seq=10)
    assert produce(crashed, seq=9).first_offset == 9


def test_truncation_rebuilds_producer_state(tmp_path):
    log = open_log(tmp_path / "t-0")
    for seq in range(5):
        produce(log, seq=seq)
    log.truncate_to(3)
    assert produce(log, seq=3).first_offset == 3  # seq 3 and 4 are gone: 3 is next again


@pytest.mark.parametrize("recovery_point", [0, 5, 9])
def test_a_crash_without_snapshots_rebuilds_state_from_the_log_and_the_recovery_scan(
    tmp_path, recovery_point
):
    # Producer state before the recovery point comes from reading the log, after it from
    # the recovery scan itself: every split gives the same state.
    from brokerd.log.recovery import load_log
    from brokerd.log.segment import SNAPSHOT_SUFFIX

    directory = tmp_path / "t-0"
    log = open_log(directory, segment_bytes=200)
    for seq in range(10):
        produce(log, seq=seq)
    produce(log, seq=0, pid=PID + 1)
    for snapshot in directory.glob(f"*{SNAPSHOT_SUFFIX}"):
        snapshot.unlink()
    crashed = load_log(
        directory, log.config, had_clean_shutdown=False, recovery_point=recovery_point
    )
    assert produce(crashed, seq=9).duplicate
    assert produce(crashed, seq=5).duplicate  # the fifth newest batch of PID
    with pytest.raises(errors.OutOfOrderSequenceError):
        produce(crashed, seq=4)  # the sixth newest has left the window
    assert produce(crashed, seq=0, pid=PID + 1).duplicate
    assert produce(crashed, seq=10).first_offset == 11
