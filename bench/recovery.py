"""Recovery scan throughput: load_log after an unclean shutdown vs reading + CRC-32C.

A log of 16 KiB v2 batches (16 records each, growing timestamps, one segment) is built through the leader
path and closed; its producer-state snapshot is removed, as after a crash before any roll.
Each repetition then times load_log(had_clean_shutdown=False, recovery_point=0): every
batch is read, CRC-checked and indexed, the indexes are rebuilt, and producer state is
replayed from the log. The peer reads the same file as recovery does (os.preadv into one
reused buffer of brokerd's SCAN_CHUNK, 1 MiB) and computes CRC-32C over each 16 KiB
batch-sized slice: the floor for validating those bytes. Both run on a warm page cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import crc32c

from brokerd.config import LogConfig
from brokerd.log.recovery import load_log
from brokerd.log.segment import SCAN_CHUNK, SNAPSHOT_SUFFIX

from . import KIB, MIB, Result, mb_per_s, median, say, scratch_dir, timed
from ._batches import batch_of_size, retimed

BATCH_BYTES = 16 * KIB
RECORDS_PER_BATCH = 16
FIRST_TIMESTAMP = 1_700_000_000_000
AIM_AT_LEAST = 0.7


def run(quick: bool) -> list[Result]:
    log_bytes = (32 if quick else 256) * MIB
    repetitions = 3 if quick else 5
    config = LogConfig()
    with scratch_dir("recovery") as directory:
        log_dir = directory / "recovery-0"
        expected_end_offset = _build_log(log_dir, config, log_bytes)
        log_files = sorted(log_dir.glob("*.log"))
        say(
            f"recovery: {log_bytes / MIB:.0f} MiB of {BATCH_BYTES // KIB} KiB batches in "
            f"{len(log_files)} segment(s), {repetitions} repetitions"
        )
        _read_and_checksum(log_files)  # warm the page cache for both sides
        recovery_rates, peer_rates, ratios = [], [], []
        for repetition in range(repetitions):
            recovery_seconds = _time_recovery(log_dir, config, expected_end_offset)
            peer_seconds = timed(lambda: _read_and_checksum(log_files))
            recovery_rates.append(mb_per_s(log_bytes, recovery_seconds))
            peer_rates.append(mb_per_s(log_bytes, peer_seconds))
            ratios.append(peer_seconds / recovery_seconds)
            say(
                f"  repetition {repetition + 1}: load_log recovery {recovery_rates[-1]:6.0f} MB/s"
                f", pread + crc32c {peer_rates[-1]:6.0f} MB/s, ratio {ratios[-1]:.2f}"
            )
    result = Result(
        benchmark="recovery",
        case=f"{BATCH_BYTES // KIB} KiB batches",
        unit="MB/s",
        measured_label="load_log (unclean, recovery point 0)",
        measured=median(recovery_rates),
        peer_label="pread 1 MiB chunks + crc32c per batch",
        peer=median(peer_rates),
        ratio=median(ratios),
        aim_at_least=AIM_AT_LEAST,
        note=f"{log_bytes / MIB:.0f} MiB x {repetitions}; ratio = median of paired ratios",
    )
    say(
        f"  median: {result.measured:.0f} vs {result.peer:.0f} MB/s, ratio {result.ratio:.2f} "
        f"(aim {result.aim})"
    )
    return [result]


def _build_log(log_dir: Path, config: LogConfig, log_bytes: int) -> int:
    template = batch_of_size(BATCH_BYTES, RECORDS_PER_BATCH, FIRST_TIMESTAMP)
    log = load_log(log_dir, config, had_clean_shutdown=True)
    for batch_number in range(log_bytes // BATCH_BYTES):
        first_timestamp = FIRST_TIMESTAMP + batch_number * RECORDS_PER_BATCH
        log.append_as_leader(retimed(template, first_timestamp), 0)
    end_offset = log.log_end_offset
    log.close()
    _remove_snapshots(log_dir)
    return end_offset


def _time_recovery(log_dir: Path, config: LogConfig, expected_end_offset: int) -> float:
    log = None

    def recover() -> None:
        nonlocal log
        log = load_log(log_dir, config, had_clean_shutdown=False, recovery_point=0)

    seconds = timed(recover)
    assert log is not None
    try:
        if log.log_end_offset != expected_end_offset:
            raise AssertionError(
                f"recovery ended at {log.log_end_offset}, expected {expected_end_offset}"
            )
    finally:
        log.close()
        _remove_snapshots(log_dir)  # the next repetition replays the log again
    return seconds


def _read_and_checksum(log_files: list[Path]) -> None:
    # Read as recovery does, into one reused SCAN_CHUNK buffer (a fresh buffer per read
    # would page-fault every page of it again): the floor for reading and checksumming.
    chunk = bytearray(SCAN_CHUNK)
    view = memoryview(chunk)
    for path in log_files:
        fd = os.open(path, os.O_RDONLY)
        try:
            position = 0
            while read := os.preadv(fd, (chunk,), position):
                for start in range(0, read, BATCH_BYTES):
                    crc32c.crc32c(view[start : min(start + BATCH_BYTES, read)])
                position += read
        finally:
            os.close(fd)


def _remove_snapshots(log_dir: Path) -> None:
    for snapshot in log_dir.glob(f"*{SNAPSHOT_SUFFIX}"):
        snapshot.unlink()
