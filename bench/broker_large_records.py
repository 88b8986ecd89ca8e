"""Large records: broker ingest of 10 KiB values vs `dd` writing as many bytes.

One broker (see broker_throughput) with its log dir in the scratch dir; `kcat -P` sends N
records of 10 KiB values (acks=1) into one partition; the peer is `dd if=/dev/zero bs=10240
count=N` into a file in the same scratch dir (same disk, no fsync on either side). Ratio =
broker MB/s / dd MB/s (values only; aim >= 0.5).
"""

from __future__ import annotations

import subprocess
import time

from bench import Result, mb_per_s, say, scratch_dir
from bench.broker_throughput import BrokerUnderTest, _kcat

VALUE_BYTES = 10 * 1024
TOPIC = "large"


def _dd(path, count: int) -> float:
    start = time.perf_counter()
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={path}", f"bs={VALUE_BYTES}", f"count={count}"],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return time.perf_counter() - start


def run(quick: bool) -> list[Result]:
    count = 5_000 if quick else 20_000
    total = count * VALUE_BYTES
    with scratch_dir("broker-large") as base:
        lines = base / "records.txt"
        lines.write_bytes((b"x" * VALUE_BYTES + b"\n") * count)
        env = BrokerUnderTest(base)
        try:
            env.create_topic(TOPIC)
            say(f"broker_large_records: {count:,} records of 10 KiB with kcat, then dd")
            # One untimed warm-up round each (first touches of fresh page-cache pages).
            _dd(base / "warm.dd", count // 5)
            broker_s = _kcat(
                env.bootstrap,
                *("-P", "-t", TOPIC, "-p", "0", "-l", str(lines)),
                *("-X", "acks=1", "-X", "linger.ms=5", "-X", "batch.size=1000000"),
            )
            assert env.end_offset(TOPIC) == count, "not every record arrived"
            dd_s = _dd(base / "peer.dd", count)
        finally:
            env.stop()
    broker_rate, dd_rate = mb_per_s(total, broker_s), mb_per_s(total, dd_s)
    return [
        Result(
            "broker_large_records",
            "ingest 10 KiB values, acks=1",
            "MB/s",
            f"{broker_rate:,.0f} MB/s (kcat -> broker)",
            broker_rate,
            f"{dd_rate:,.0f} MB/s (dd bs=10240)",
            dd_rate,
            broker_rate / dd_rate,
            aim_at_least=0.5,
        )
    ]
