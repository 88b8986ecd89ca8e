"""Idle cost and start-up: what many partitions cost a broker when nothing happens, and how
long loading many logs takes.

Two parts:

* start-up (in-process, `LogManager`): N partition logs of real v2 batches are written and
  closed cleanly, then loaded again, timed, with num.recovery.threads.per.data.dir 1 and 2,
  after a clean shutdown (the `.kafka_cleanshutdown` marker: no scan) and after a crash
  (no marker and no recovery-point checkpoint: every batch of every log is scanned, its CRC
  checked, its indexes rebuilt). Ratios: 2 threads vs 1 (speed-up), crash vs clean.
* idle cluster (a real ZooKeeper and three brokers, tests/cluster's `Cluster`): P
  partitions at RF 3 (P replicas on each broker), a few records in each, then nothing: the
  CPU each broker process uses (utime + stime from /proc) over a quiet interval, and its
  RSS, against the same cluster before the partitions existed. The budget is the issue's
  "a few percent of a core" (5 %).

Sizes: `BENCH_IDLE_PARTITIONS` (default 1,000; `--quick` 300: topic creation is still slow,
see issue 15) and `BENCH_STARTUP_LOGS` (default 1,000; `--quick` 100).
"""

from __future__ import annotations

import gc
import itertools
import os
import statistics
import sys
import time
from pathlib import Path

from bench import KIB, Result, say, scratch_dir, timed

from ._batches import batch_of_size, retimed

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CPU_BUDGET_PERCENT = 5.0
BATCH_BYTES = 4 * KIB
FIRST_TIMESTAMP = 1_700_000_000_000


def run(quick: bool) -> list[Result]:
    logs = int(os.environ.get("BENCH_STARTUP_LOGS") or (100 if quick else 1000))
    partitions = int(os.environ.get("BENCH_IDLE_PARTITIONS") or (300 if quick else 1000))
    return _startup(logs, batches=4 if quick else 8) + _idle_cluster(partitions, quick)


# Start-up ------------------------------------------------------------------------------
def _startup(logs: int, batches: int) -> list[Result]:
    from brokerd.config import LogConfig
    from brokerd.log.manager import CLEAN_SHUTDOWN_MARKER, RECOVERY_POINT_CHECKPOINT, LogManager

    config = LogConfig()
    template = batch_of_size(BATCH_BYTES, 8, FIRST_TIMESTAMP)
    with scratch_dir("startup") as directory:
        data_dir = directory / "data"
        manager = LogManager([data_dir], config)
        manager.startup()
        for p in range(logs):
            partition_log = manager.get_or_create_log("startup", p)
            for n in range(batches):
                partition_log.append_as_leader(retimed(template, FIRST_TIMESTAMP + n * 8), 0)
        manager.shutdown()
        size = logs * batches * BATCH_BYTES
        say(
            f"start-up: {logs} logs of {batches} x {BATCH_BYTES // KIB} KiB batches "
            f"({size / 1e6:.0f} MB) in one log dir"
        )

        def load(threads: int, clean: bool) -> float:
            if not clean:  # a crash before any checkpoint: every log is scanned
                (data_dir / CLEAN_SHUTDOWN_MARKER).unlink(missing_ok=True)
                (data_dir / RECOVERY_POINT_CHECKPOINT).unlink(missing_ok=True)
            loaded = LogManager([data_dir], config, recovery_threads_per_data_dir=threads)
            seconds = timed(loaded.startup)
            assert len(loaded.logs) == logs and not loaded.offline_partitions
            assert loaded.had_clean_shutdown[data_dir] == clean
            loaded.shutdown()
            return seconds

        times: dict[tuple[int, bool], list[float]] = {}
        for repetition in range(3):
            for clean, threads in itertools.product((True, False), (1, 2)):
                times.setdefault((threads, clean), []).append(load(threads, clean))
            last = {key: values[-1] for key, values in times.items()}
            say(
                f"  repetition {repetition + 1}: clean 1 thread {last[(1, True)]:.2f} s, "
                f"2 threads {last[(2, True)]:.2f} s; crashed 1 thread {last[(1, False)]:.2f} s, "
                f"2 threads {last[(2, False)]:.2f} s"
            )
    median = {key: statistics.median(values) for key, values in times.items()}
    results = []
    for clean in (True, False):
        state = "clean shutdown" if clean else "crash (full scan)"
        one, two = median[(1, clean)], median[(2, clean)]
        results.append(
            Result(
                "idle",
                f"start-up, {logs} logs, {state}: 2 recovery threads vs 1",
                "logs/s",
                "2 threads",
                logs / two,
                "1 thread",
                logs / one,
                one / two,
                note="ratio = speed-up (time with 1 thread / time with 2)",
            )
        )
    results.append(
        Result(
            "idle",
            f"start-up, {logs} logs, 1 thread: crash vs clean shutdown",
            "s",
            "after a crash",
            median[(1, False)],
            "after a clean shutdown",
            median[(1, True)],
            median[(1, False)] / median[(1, True)],
            note="what the clean-shutdown marker saves",
        )
    )
    return results


# Idle cluster ----------------------------------------------------------------------------
class _Dirs:
    """The part of pytest's tmp_path_factory that tests/cluster's Cluster uses."""

    def __init__(self, base: Path):
        self.base = base
        self._numbers = itertools.count()

    def mktemp(self, name: str) -> Path:
        path = self.base / f"{name}-{next(self._numbers)}"
        path.mkdir(parents=True)
        return path


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _idle_cpu_percent(pids: dict[int, int], seconds: float) -> dict[int, float]:
    before = {b: _cpu_seconds(pid) for b, pid in pids.items()}
    time.sleep(seconds)
    return {b: (_cpu_seconds(pid) - before[b]) / seconds * 100 for b, pid in pids.items()}


def _create_partitions(cluster, partitions: int) -> float:
    """Topics of at most 200 partitions each (RF 3) until `partitions`, all led with a full
    ISR; returns the seconds it took."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "socket.timeout.ms": 300000})
    began = time.monotonic()
    sizes = []
    left = partitions
    while left > 0:
        sizes.append(min(200, left))
        left -= sizes[-1]
    for number, size in enumerate(sizes):
        name = f"idle-{number}"
        admin.create_topics([NewTopic(name, size, 3)], request_timeout=600)[name].result(900)

    def settled(meta) -> bool:
        states = [
            s for t, ps in meta["topics"].items() if t.startswith("idle-") for s in ps.values()
        ]
        return len(states) == partitions and all(
            s["leader"] in meta["brokers"] and len(s["isr"]) == 3 for s in states
        )

    cluster.wait_for(settled, 900, f"{partitions} partitions led with a full ISR")
    seconds = time.monotonic() - began
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 50})
    for number, size in enumerate(sizes):
        for p in range(size):
            producer.produce(f"idle-{number}", b"x" * 100, partition=p)
        producer.poll(0)
    producer.flush(120)
    return seconds


def _idle_cluster(partitions: int, quick: bool) -> list[Result]:
    from tests.cluster.conftest import Cluster
    from tests.harness import ZooKeeper

    quiet = 10.0 if quick else 30.0
    with scratch_dir("idle") as base:
        zookeeper = ZooKeeper(base / "zookeeper").start()
        try:
            # Kafka's default replica.lag.time.max.ms (the test clusters' 3 s makes followers'
            # sessions sweep and the ISR check run ten times as often).
            cluster = Cluster(zookeeper, _Dirs(base), replica_lag_time_max_ms="30000").start()
            try:
                pids = {b: broker.process.pid for b, broker in cluster.brokers.items()}
                time.sleep(3)
                empty_cpu = _idle_cpu_percent(pids, quiet)
                empty_rss = {b: _rss_mib(pid) for b, pid in pids.items()}
                say(
                    "idle: empty cluster, CPU per broker "
                    + ", ".join(f"{c:.1f} %" for c in empty_cpu.values())
                    + ", RSS "
                    + ", ".join(f"{r:.0f} MiB" for r in empty_rss.values())
                )
                created = _create_partitions(cluster, partitions)
                say(f"  {partitions} partitions at RF 3 created and led in {created:.0f} s")
                # The clients made while waiting (AdminClients of Cluster.wait_for) gone,
                # sessions open, followers told the last HW.
                gc.collect()
                time.sleep(20)
                cpu = _idle_cpu_percent(pids, quiet)
                rss = {b: _rss_mib(pid) for b, pid in pids.items()}
                say(
                    f"  idle over {quiet:.0f} s: CPU per broker "
                    + ", ".join(f"{c:.1f} %" for c in cpu.values())
                    + ", RSS "
                    + ", ".join(f"{r:.0f} MiB" for r in rss.values())
                )
            finally:
                cluster.kill_all()
        finally:
            zookeeper.stop()
    worst = max(cpu.values())
    per_replica_kib = statistics.median((rss[b] - empty_rss[b]) * 1024 / partitions for b in rss)
    return [
        Result(
            "idle",
            f"idle CPU per broker, {partitions} replicas each (RF 3)",
            "% of a core",
            "busiest broker",
            worst,
            "budget (a few % of a core)",
            CPU_BUDGET_PERCENT,
            worst / CPU_BUDGET_PERCENT,
            aim_at_most=1.0,
            note=f"empty cluster: {max(empty_cpu.values()):.1f} %",
        ),
        Result(
            "idle",
            f"RSS per broker, {partitions} replicas each (RF 3)",
            "MiB",
            "with the partitions",
            max(rss.values()),
            "empty broker",
            max(empty_rss.values()),
            max(rss.values()) / max(empty_rss.values()),
            note=f"{per_replica_kib:.0f} KiB per replica (median over brokers)",
        ),
    ]
