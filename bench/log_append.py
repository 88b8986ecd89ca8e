"""Append throughput: Log.append_as_leader vs os.write of the same bytes.

All batches (distinct buffers, growing timestamps) are built before timing; only the
appends are timed. brokerd's path validates each batch from its header (CRC-32C over the
batch), writes it without copying as its rebuilt 16-byte prefix (assigned base offset,
leader epoch) plus the producer's bytes after it (one pwritev) and indexes it. The peer
writes the identical
pre-built bytes with os.write to an O_APPEND file in the same directory, i.e. the floor
for getting those bytes into the page cache. Neither side fsyncs (brokerd's default
flush.messages/flush.ms never flush on append).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from brokerd.config import LogConfig
from brokerd.log.recovery import load_log

from . import KIB, MIB, Result, mb_per_s, median, say, scratch_dir
from ._batches import batch_of_size, retimed

FIRST_TIMESTAMP = 1_700_000_000_000
BLOCK_BYTES = 4 * MIB  # the sides alternate every this many bytes


@dataclass(frozen=True)
class AppendCase:
    label: str
    batch_bytes: int
    records_per_batch: int
    total_bytes: int
    quick_total_bytes: int
    aim_at_least: float


CASES = [
    AppendCase("1 MiB batches", MIB, 16, 256 * MIB, 32 * MIB, 0.8),
    AppendCase("16 KiB batches", 16 * KIB, 16, 128 * MIB, 16 * MIB, 0.5),
]


def run(quick: bool) -> list[Result]:
    repetitions = 3 if quick else 7
    results = []
    with scratch_dir("append") as directory:
        for case in CASES:
            results.append(_run_case(case, directory, quick, repetitions))
    return results


def _run_case(case: AppendCase, directory: Path, quick: bool, repetitions: int) -> Result:
    total = case.quick_total_bytes if quick else case.total_bytes
    # Distinct batches with growing timestamps, so the time index grows as in production.
    template = batch_of_size(case.batch_bytes, case.records_per_batch, FIRST_TIMESTAMP)
    batches = [
        retimed(template, FIRST_TIMESTAMP + i * case.records_per_batch)
        for i in range(total // case.batch_bytes)
    ]
    written = len(batches) * case.batch_bytes
    say(
        f"log_append {case.label}: {len(batches)} appends, {written / MIB:.0f} MiB "
        f"per repetition, {repetitions} repetitions"
    )
    log_rates, raw_rates, ratios = [], [], []
    # The first pass of a process into fresh page-cache pages is far slower than later
    # ones (for both sides): one untimed warm-up repetition.
    _time_interleaved(directory, batches, case.batch_bytes)
    for repetition in range(repetitions):
        log_seconds, raw_seconds = _time_interleaved(directory, batches, case.batch_bytes)
        log_rates.append(mb_per_s(written, log_seconds))
        raw_rates.append(mb_per_s(written, raw_seconds))
        ratios.append(raw_seconds / log_seconds)
        say(
            f"  repetition {repetition + 1}: Log.append_as_leader {log_rates[-1]:6.0f} MB/s, "
            f"os.write {raw_rates[-1]:6.0f} MB/s, ratio {ratios[-1]:.2f}"
        )
    result = Result(
        benchmark="log_append",
        case=case.label,
        unit="MB/s",
        measured_label="Log.append_as_leader",
        measured=median(log_rates),
        peer_label="os.write",
        peer=median(raw_rates),
        ratio=median(ratios),
        aim_at_least=case.aim_at_least,
        note=f"{written / MIB:.0f} MiB x {repetitions}, interleaved in 4 MiB blocks",
    )
    say(
        f"  median: {result.measured:.0f} vs {result.peer:.0f} MB/s, ratio {result.ratio:.2f} "
        f"(aim {result.aim})"
    )
    return result


def _time_interleaved(
    directory: Path, batches: list[bytearray], batch_bytes: int
) -> tuple[float, float]:
    """Seconds for the log's appends and for the raw writes of the same batches.

    The two sides alternate block by block (about BLOCK_BYTES each, the first side
    alternating too), so a burst of page-cache or writeback noise hits both alike."""
    log_dir = directory / "append-0"
    raw_path = directory / "raw-append.bin"
    log = load_log(log_dir, LogConfig(), had_clean_shutdown=True)
    # The log of a leader at epoch 0: Partition.make_leader records the epoch (and fsyncs
    # its checkpoint) when the broker becomes leader, as Kafka does, not on an append.
    log.leader_epoch_cache.assign(0, log.log_end_offset)
    raw_fd = os.open(raw_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    append, write, clock = log.append_as_leader, os.write, time.perf_counter
    per_block = max(BLOCK_BYTES // batch_bytes, 1)
    log_seconds = raw_seconds = 0.0
    try:
        for block_number, start in enumerate(range(0, len(batches), per_block)):
            block = batches[start : start + per_block]
            for side in (0, 1) if block_number % 2 == 0 else (1, 0):
                began = clock()
                if side == 0:
                    for batch in block:
                        append(batch, 0)
                    log_seconds += clock() - began
                else:
                    for batch in block:
                        write(raw_fd, batch)
                    raw_seconds += clock() - began
        expected_bytes = sum(len(b) for b in batches)
        if log.size != expected_bytes or os.fstat(raw_fd).st_size != expected_bytes:
            raise AssertionError(f"a side holds the wrong byte count (expected {expected_bytes})")
        return log_seconds, raw_seconds
    finally:
        log.close()
        os.close(raw_fd)
        shutil.rmtree(log_dir, ignore_errors=True)
        raw_path.unlink(missing_ok=True)
