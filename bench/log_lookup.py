"""Lookup cost in a large many-segment log vs a 10 MiB one: lookups must not grow with it.

Both logs hold the same real v2 batches (1 MiB, 4 records of ~256 KiB, one millisecond
per record) appended through Log.append_as_leader with segment.bytes = 64 MiB, so the large
log (nominally 4 GiB: 64 segments) and the small one (10 MiB: one segment) differ only in
size. Two lookups are measured, each timed singly, alternating between the logs in small
blocks at the same relative positions (same random fractions of each log's range):

- offset lookup: Log.read(offset, 1 MiB) -> the file region a fetch would sendfile
  (segment bisect, sparse-index search, header scan; no record bytes are copied);
- timestamp lookup: Log.fetch_offset_by_timestamp(ts) -> ListOffsets by timestamp
  (segment walk, time index, offset index, header scan, decoding the one batch).

The large log shrinks to 512 MiB under --quick or when the disk lacks room; the output
says so. Everything is deleted at the end.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from brokerd.config import LogConfig
from brokerd.log.log import Log
from brokerd.log.recovery import load_log

from . import GIB, MIB, Result, median, say, scratch_dir, scratch_root
from ._batches import batch_of_size, retimed

BATCH_BYTES = MIB
RECORDS_PER_BATCH = 4
SEGMENT_BYTES = 64 * MIB
NOMINAL_LARGE_BYTES = 4 * GIB
REDUCED_LARGE_BYTES = 512 * MIB
SMALL_BYTES = 10 * MIB
DISK_HEADROOM_BYTES = 4 * GIB  # left free for everyone else on the disk
FIRST_TIMESTAMP = 1_700_000_000_000
LOOKUP_BLOCK = 25  # lookups per turn before switching logs
AIM_AT_MOST = 1.5


def run(quick: bool) -> list[Result]:
    large_bytes, size_note = _large_log_size(quick)
    lookups = 1000 if quick else 4000
    config = LogConfig().with_overrides(segment_bytes=SEGMENT_BYTES)
    with scratch_dir("lookup") as directory:
        say(f"log_lookup: building the large log, {large_bytes / MIB:.0f} MiB ({size_note})")
        build_started = time.perf_counter()
        large = _build_log(directory / "large-0", config, large_bytes)
        say(
            f"  built {len(large.segments)} segments in {time.perf_counter() - build_started:.1f} s"
        )
        small = _build_log(directory / "small-0", config, SMALL_BYTES)
        try:
            results = [
                _compare(
                    "offset lookup (Log.read)",
                    large,
                    small,
                    lambda log, fraction: _read_region(log, fraction),
                    lookups,
                    size_note,
                ),
                _compare(
                    "timestamp lookup (fetch_offset_by_timestamp)",
                    large,
                    small,
                    lambda log, fraction: _find_by_timestamp(log, fraction),
                    lookups,
                    size_note,
                ),
            ]
        finally:
            large.close()
            small.close()
            shutil.rmtree(directory / "large-0", ignore_errors=True)
    return results


def _large_log_size(quick: bool) -> tuple[int, str]:
    if quick:
        return REDUCED_LARGE_BYTES, "scaled down from 4 GiB for --quick"
    free = shutil.disk_usage(scratch_root()).free
    if free < NOMINAL_LARGE_BYTES + DISK_HEADROOM_BYTES:
        return REDUCED_LARGE_BYTES, f"scaled down from 4 GiB: only {free / GIB:.1f} GiB free"
    return NOMINAL_LARGE_BYTES, "full size"


def _build_log(directory: Path, config: LogConfig, total_bytes: int) -> Log:
    """Append real batches through the leader path until the log holds total_bytes."""
    log = load_log(directory, config, had_clean_shutdown=True)
    template = batch_of_size(BATCH_BYTES, RECORDS_PER_BATCH, FIRST_TIMESTAMP)
    for batch_number in range(total_bytes // BATCH_BYTES):
        first_timestamp = FIRST_TIMESTAMP + batch_number * RECORDS_PER_BATCH
        log.append_as_leader(retimed(template, first_timestamp), 0)
    return log


def _read_region(log: Log, fraction: float) -> None:
    offset = int(fraction * log.log_end_offset)
    info = log.read(offset, BATCH_BYTES)
    if info.region is None or info.first_entry_offset is None:
        raise AssertionError(f"no region for offset {offset} in {log}")
    if not info.first_entry_offset <= offset < info.first_entry_offset + RECORDS_PER_BATCH:
        raise AssertionError(f"offset {offset} resolved to batch {info.first_entry_offset}")


def _find_by_timestamp(log: Log, fraction: float) -> None:
    offset = int(fraction * log.log_end_offset)
    found = log.fetch_offset_by_timestamp(FIRST_TIMESTAMP + offset)  # 1 ms per record
    if found is None or found.offset != offset:
        raise AssertionError(f"timestamp of offset {offset} resolved to {found}")


def _compare(
    label: str,
    large: Log,
    small: Log,
    lookup: Callable[[Log, float], None],
    lookups: int,
    size_note: str,
) -> Result:
    fractions = _fractions(lookups)
    for fraction in fractions[:LOOKUP_BLOCK]:  # warm both up
        lookup(large, fraction)
        lookup(small, fraction)
    large_times: list[float] = []
    small_times: list[float] = []
    clock = time.perf_counter
    for block_number, start in enumerate(range(0, lookups, LOOKUP_BLOCK)):
        block = fractions[start : start + LOOKUP_BLOCK]
        turns = ((large, large_times), (small, small_times))
        for log, times in turns if block_number % 2 == 0 else turns[::-1]:
            for fraction in block:
                began = clock()
                lookup(log, fraction)
                times.append(clock() - began)
    large_us = median(large_times) * 1e6
    small_us = median(small_times) * 1e6
    result = Result(
        benchmark="log_lookup",
        case=label,
        unit="µs/lookup",
        measured_label=f"{large.size / MIB:.0f} MiB log, {len(large.segments)} segments",
        measured=large_us,
        peer_label=f"{small.size / MIB:.0f} MiB log, {len(small.segments)} segment",
        peer=small_us,
        ratio=large_us / small_us,
        aim_at_most=AIM_AT_MOST,
        note=f"median of {lookups} lookups per log; large log {size_note}",
    )
    say(
        f"  {label}: large {large_us:.1f} µs, small {small_us:.1f} µs, "
        f"ratio {result.ratio:.2f} (aim {result.aim})"
    )
    return result


def _fractions(count: int) -> list[float]:
    generator = random.Random(20240607)
    return [generator.random() for _ in range(count)]
