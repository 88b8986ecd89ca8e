"""A large produced batch has its CRC-32C checked while it is written, chunk by chunk
(`LogSegment.append_batch_checking_crc`): a corrupt one must still be refused with
CORRUPT_MESSAGE and leave no trace, in the file, the indexes, the offsets or a recovery."""

import os

import pytest

from brokerd.log import errors
from brokerd.log.segment import CRC_WRITE_CHUNK, LOG_SUFFIX

from .helpers import batch, open_log, read_all

LARGE = CRC_WRITE_CHUNK * 2 + 12345  # three chunks, the last one partial
SEGMENT_BYTES = 8 << 20


def _value(tag: int, size: int) -> bytes:
    return (bytes([tag]) + os.urandom(1023)) * (size // 1024)


def _open(directory, preallocate, clean=True, segment_bytes=SEGMENT_BYTES):
    return open_log(directory, clean=clean, preallocate=preallocate, segment_bytes=segment_bytes)


def _corrupted(data: bytearray, at: int) -> bytearray:
    bad = bytearray(data)
    bad[at] ^= 0xFF
    return bad


def _state(log):
    segment = log.active_segment
    with open(segment.log_path, "rb") as file:
        contents = file.read()
    return (
        len(log.segments),
        segment.size,
        log.log_end_offset,
        segment.offset_index.entries,
        segment.time_index.entries,
        contents,
    )


def _crash(log):
    """Drop the log without a clean close: files stay as they are (untrimmed)."""
    for segment in log.segments:
        segment.file.close()


@pytest.mark.parametrize("preallocate", [False, True])
@pytest.mark.parametrize("corrupt_at", [30, CRC_WRITE_CHUNK + 7, LARGE - 1])
def test_a_corrupt_large_batch_is_refused_and_leaves_no_trace(tmp_path, preallocate, corrupt_at):
    log = _open(tmp_path / "t-0", preallocate)
    first = batch(_value(1, LARGE), _value(2, 4096))
    log.append_as_leader(first, leader_epoch=0)
    before = _state(log)

    bad = _corrupted(batch(_value(3, LARGE), _value(4, 4096), timestamp=5000), corrupt_at)
    assert len(bad) > CRC_WRITE_CHUNK * 2
    with pytest.raises(errors.CorruptMessageError, match="CRC mismatch"):
        log.append_as_leader(bad, leader_epoch=0)
    assert _state(log) == before

    # A smaller good batch lands right after the first one; nothing of the bad one is left
    # past it (with or without preallocation), so a crash's recovery finds just the two.
    second = batch(_value(5, CRC_WRITE_CHUNK + 100), timestamp=9000)
    info = log.append_as_leader(second, leader_epoch=0)
    assert (info.first_offset, info.last_offset) == (2, 2)
    assert log.active_segment.size == len(first) + len(second)
    values = [record.value[:1] for record in read_all(log)]
    assert values == [b"\x01", b"\x02", b"\x05"]
    _crash(log)

    recovered = _open(tmp_path / "t-0", preallocate, clean=False)
    assert recovered.log_end_offset == 3
    assert recovered.active_segment.size == len(first) + len(second)
    assert [record.value[:1] for record in read_all(recovered)] == values
    assert recovered.fetch_offset_by_timestamp(9000).offset == 2
    recovered.close()
    sizes = [p.stat().st_size for p in (tmp_path / "t-0").glob(f"*{LOG_SUFFIX}")]
    assert sizes == [len(first) + len(second)]


def test_a_bad_crc_is_reported_before_the_header_rules(tmp_path):
    log = _open(tmp_path / "t-0", False)
    mismatched = batch(_value(1, LARGE), b"b", last_offset_delta=5)
    with pytest.raises(errors.InvalidRecordError):
        log.append_as_leader(mismatched, leader_epoch=0)
    with pytest.raises(errors.CorruptMessageError):
        log.append_as_leader(_corrupted(mismatched, LARGE - 5), leader_epoch=0)
    assert log.log_end_offset == 0 and log.active_segment.size == 0


def test_a_corrupt_retry_of_an_idempotent_batch_is_refused_not_acknowledged(tmp_path):
    log = _open(tmp_path / "t-0", False)
    idempotent = {"producer_id": 7, "producer_epoch": 0, "base_sequence": 0}
    good = batch(_value(1, LARGE), **idempotent)
    assert log.append_as_leader(good, leader_epoch=0).first_offset == 0
    assert log.append_as_leader(bytearray(good), leader_epoch=0).duplicate
    with pytest.raises(errors.CorruptMessageError):
        log.append_as_leader(_corrupted(good, LARGE - 5), leader_epoch=0)
    out_of_order = batch(_value(2, LARGE), producer_id=7, producer_epoch=0, base_sequence=9)
    with pytest.raises(errors.CorruptMessageError):  # not OUT_OF_ORDER_SEQUENCE
        log.append_as_leader(_corrupted(out_of_order, LARGE - 5), leader_epoch=0)
    assert log.log_end_offset == 1


def test_a_corrupt_large_batch_that_would_roll_the_segment_does_not(tmp_path):
    log = _open(tmp_path / "t-0", False, segment_bytes=LARGE + 1000)
    log.append_as_leader(batch(_value(1, LARGE)), leader_epoch=0)
    with pytest.raises(errors.CorruptMessageError):
        log.append_as_leader(_corrupted(batch(_value(2, LARGE)), LARGE - 5), leader_epoch=0)
    assert len(log.segments) == 1
    log.append_as_leader(batch(_value(3, LARGE)), leader_epoch=0)
    assert len(log.segments) == 2 and log.log_end_offset == 2
