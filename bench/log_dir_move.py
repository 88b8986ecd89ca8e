"""Moving a replica to another log dir while it is written (AlterReplicaLogDirs): how long
appends stall.

A writer thread appends 1 KB batches (growing timestamps) every 0.5 ms to a log of N
1 MiB segments while the log manager moves the log to its other dir (the future replica's
copy, then the swap under the log's lock). Measured: the longest single append while the
move runs. Peer: the longest append in a window of the same length without a move, moments
before, on the same log and writer. The swap renames the two open logs (Kafka's renameDir)
rather than reopening the copy, so the stall should not grow with the segment count (it was
196 ms at 50 segments and 374 ms at 150 before). `held` in the note is the time the swap
held the log's lock, as the log manager measured it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from brokerd.config import LogConfig
from brokerd.log.manager import LogManager
from brokerd.records.batch import SimpleRecord, build_batch

from . import MIB, Result, say, scratch_dir

VALUE = b"x" * 1000
WRITER_PAUSE_S = 0.0005


def _batch(value: bytes = VALUE) -> bytes:
    return build_batch([SimpleRecord(value, None, (), int(time.time() * 1000))])


class _Writer:
    """Appends in a loop and records (start time, seconds) of each append."""

    def __init__(self, log):
        self.log = log
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            data = _batch()
            began = time.perf_counter()
            self.log.append_as_leader(data, leader_epoch=0)
            self.samples.append((began, time.perf_counter() - began))
            time.sleep(WRITER_PAUSE_S)

    def longest(self, start: float, end: float) -> float:
        return max((s for t, s in self.samples if start <= t <= end), default=0.0)


def _case(root: Path, segments: int) -> Result:
    a, b = root / f"{segments}-a", root / f"{segments}-b"
    manager = LogManager([a, b], LogConfig(segment_bytes=MIB, file_delete_delay_ms=0))
    manager.startup()
    try:
        log = manager.get_or_create_log("moved", 0)
        filler = b"f" * (64 * 1024)  # the log is filled in big batches, quickly
        while len(log.segments) < segments:
            for _ in range(16):
                log.append_as_leader(_batch(filler), leader_epoch=0)
        log.flush()
        source = log.dir.parent
        writer = _Writer(log)
        writer.thread.start()
        try:
            time.sleep(0.5)
            began = time.perf_counter()
            manager.alter_log_dir("moved", 0, str(b if source == a else a))
            move = manager.moving()[("moved", 0)]
            while log.dir.parent == source:
                time.sleep(0.001)
            ended = time.perf_counter()
            took = ended - began
            time.sleep(took)  # the baseline window: as long, right after the move
            after = time.perf_counter()
        finally:
            writer.stop.set()
            writer.thread.join()
        during = writer.longest(began, ended) * 1000
        baseline = writer.longest(ended + 0.05, after) * 1000
        return Result(
            benchmark="log_dir_move",
            case=f"{segments} segments of 1 MiB",
            unit="ms (longest append)",
            measured_label="during the move",
            measured=during,
            peer_label="same writer, no move",
            peer=baseline,
            ratio=during / baseline if baseline > 0 else float("inf"),
            note=f"move {took:.1f} s; swap held appends {move.held_ms or 0:.1f} ms",
        )
    finally:
        manager.shutdown()


def run(quick: bool) -> list[Result]:
    results = []
    with scratch_dir("log-dir-move") as root:
        for segments in (10, 30) if quick else (50, 200):
            result = _case(root, segments)
            say(
                f"log_dir_move {result.case}: {result.measured:.1f} ms vs {result.peer:.1f} ms"
                f" ({result.note})"
            )
            results.append(result)
    return results
