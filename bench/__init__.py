"""Storage-engine benchmarks that report ratios against a peer measured in the same run.

A benchmark module is any module in this package whose name does not start with an
underscore and which defines ``run(quick: bool) -> list[Result]``. ``python -m bench`` finds
and runs them all; see bench/README.md.

Absolute speeds on shared machines are noise; a ratio against a simple peer doing the same
job (raw writes, raw reads + CRC, the same lookup on a small log) measured moments apart is
much steadier. Nothing here asserts a speed: results only say whether a ratio met its aim.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

SCRATCH_DIR_ENV = "BENCH_SCRATCH_DIR"
MIB = 1 << 20
KIB = 1 << 10
GIB = 1 << 30


@dataclass(frozen=True, slots=True)
class Result:
    """One measured case: brokerd's number, the peer's number and their ratio."""

    benchmark: str
    case: str
    unit: str
    measured_label: str
    measured: float
    peer_label: str
    peer: float
    ratio: float
    aim_at_least: float | None = None
    aim_at_most: float | None = None
    note: str = ""

    @property
    def aim(self) -> str:
        if self.aim_at_least is not None:
            return f">= {self.aim_at_least:g}"
        if self.aim_at_most is not None:
            return f"<= {self.aim_at_most:g}"
        return "-"

    @property
    def meets_aim(self) -> bool:
        if self.aim_at_least is not None and self.ratio < self.aim_at_least:
            return False
        if self.aim_at_most is not None and self.ratio > self.aim_at_most:
            return False
        return True


def median(values: list[float]) -> float:
    return statistics.median(values)


def timed(action: Callable[[], object]) -> float:
    """Seconds that `action()` took."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def scratch_root() -> Path:
    """Where benchmarks put their files: $BENCH_SCRATCH_DIR, else the system temp dir."""
    return Path(os.environ.get(SCRATCH_DIR_ENV) or tempfile.gettempdir())


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A fresh directory for one benchmark, removed with everything in it afterwards."""
    root = scratch_root()
    root.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"bench-{prefix}-", dir=root))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def mb_per_s(byte_count: int, seconds: float) -> float:
    return byte_count / seconds / 1e6 if seconds > 0 else float("inf")


def say(message: str) -> None:
    print(message, flush=True)
