"""Broker throughput with librdkafka (kcat) vs Redis Streams on the same machine.

A real ZooKeeper and one broker (tests/harness.py) on loopback; one partition; N records of
100-byte values, acks=1. Cases:

* produce: `kcat -P` sends the N records (librdkafka batching); records/s and MB/s of
  values, vs `redis-benchmark -P 64 -n N XADD` of the same 100-byte value into a stream of
  our own redis-server (--save '' --appendonly no). Ratio = brokerd records/s / Redis's.
* consume: `kcat -C -e` reads the N records back, vs redis-benchmark `XRANGE ... COUNT 1000`
  over that stream (records/s = requests/s x 1000).
* CPU per GB: CPU seconds (utime + stime from /proc/<pid>/stat) the broker spent per GB of
  values ingested in the produce case, vs the same for redis-server. Ratio = broker / Redis.

Helpers here (`BrokerUnderTest`, `cpu_seconds`, `RedisServer`) serve the other broker_*
benchmarks too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from bench import Result, say, scratch_dir

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

VALUE_BYTES = 100
TOPIC = "bench"


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class BrokerUnderTest:
    """ZooKeeper + one broker under `base`, with a one-partition topic."""

    def __init__(self, base: Path, **props: str):
        from tests.harness import BrokerProcess, ZooKeeper

        self.zookeeper = ZooKeeper(base / "zookeeper").start()
        self.broker = BrokerProcess(
            base / "broker", f"{self.zookeeper.connect}/bench", num_partitions="1", **props
        ).start()

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    @property
    def pid(self) -> int:
        return self.broker.process.pid

    def create_topic(self, name: str, **configs: str) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        admin.create_topics([NewTopic(name, 1, 1, config=configs)])[name].result(30)

    def end_offset(self, topic: str) -> int:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "bench"})
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
        finally:
            consumer.close()

    def stop(self) -> None:
        self.broker.kill()
        self.zookeeper.stop()


class RedisServer:
    def __init__(self, base: Path):
        from tests.harness import free_port, wait_for_port

        self.port = free_port()
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(base),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, 10, self.process)

    def benchmark(self, requests: int, *command: str, pipeline: int = 64) -> float:
        """requests/s of `redis-benchmark -P pipeline -n requests <command>`."""
        out = subprocess.run(
            ["redis-benchmark", "-h", "127.0.0.1", "-p", str(self.port), "-P", str(pipeline)]
            + ["-n", str(requests), "--csv", *command],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        ).stdout
        row = [line for line in out.splitlines() if line and not line.startswith('"test"')][-1]
        return float(row.split('","')[1])

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(10)


def _kcat(bootstrap: str, *args: str, stdout=subprocess.DEVNULL) -> float:
    """Seconds a kcat run took."""
    start = time.perf_counter()
    subprocess.run(["kcat", "-b", bootstrap, "-q", *args], stdout=stdout, check=True, timeout=600)
    return time.perf_counter() - start


def run(quick: bool) -> list[Result]:
    count = 200_000 if quick else 1_000_000
    value = b"v" * VALUE_BYTES
    results = []
    with scratch_dir("broker-throughput") as base:
        lines = base / "records.txt"
        lines.write_bytes((value + b"\n") * count)
        env = BrokerUnderTest(base)
        redis = RedisServer(base)
        try:
            env.create_topic(TOPIC)
            say(f"broker_throughput: producing {count:,} records of {VALUE_BYTES} B with kcat")
            cpu_before = cpu_seconds(env.pid)
            produce_s = _kcat(
                env.bootstrap,
                *("-P", "-t", TOPIC, "-p", "0", "-l", str(lines)),
                *("-X", "acks=1", "-X", "linger.ms=5", "-X", "batch.size=1000000"),
                *("-X", "queue.buffering.max.messages=2000000"),
            )
            broker_cpu = cpu_seconds(env.pid) - cpu_before
            assert env.end_offset(TOPIC) == count, "not every record arrived"
            say("broker_throughput: consuming them with kcat")
            consume_s = _kcat(
                env.bootstrap,
                *("-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e", "-c", str(count)),
                *("-f", "%s"),
            )
            say(f"broker_throughput: redis-benchmark -P 64 XADD x {count:,}")
            redis_cpu_before = cpu_seconds(redis.process.pid)
            xadd_rps = redis.benchmark(count, "XADD", "bench:stream", "*", "v", value.decode())
            redis_cpu = cpu_seconds(redis.process.pid) - redis_cpu_before
            xrange_rps = redis.benchmark(
                max(count // 100, 1000), "XRANGE", "bench:stream", "-", "+", "COUNT", "1000"
            )
        finally:
            redis.stop()
            env.stop()

    produce_rps = count / produce_s
    consume_rps = count / consume_s
    megabytes = count * VALUE_BYTES / 1e6
    xadd_s = count / xadd_rps
    results.append(
        Result(
            "broker_throughput",
            "produce 100 B, acks=1, records/s",
            "records/s",
            f"{produce_rps:,.0f} rec/s ({megabytes / produce_s:,.1f} MB/s)",
            produce_rps,
            f"{xadd_rps:,.0f} rec/s ({megabytes / xadd_s:,.1f} MB/s) (redis XADD -P 64)",
            xadd_rps,
            produce_rps / xadd_rps,
            aim_at_least=1.0,
        )
    )
    xrange_records = xrange_rps * 1000
    results.append(
        Result(
            "broker_throughput",
            "consume 100 B, records/s",
            "records/s",
            f"{consume_rps:,.0f} rec/s ({megabytes / consume_s:,.1f} MB/s)",
            consume_rps,
            f"{xrange_records:,.0f} rec/s (redis XRANGE COUNT 1000)",
            xrange_records,
            consume_rps / xrange_records,
        )
    )
    gigabytes = count * VALUE_BYTES / 1e9
    broker_per_gb, redis_per_gb = broker_cpu / gigabytes, redis_cpu / gigabytes
    results.append(
        Result(
            "broker_throughput",
            "CPU seconds per GB ingested",
            "CPU s/GB",
            f"{broker_per_gb:,.1f} CPU s/GB",
            broker_per_gb,
            f"{redis_per_gb:,.1f} CPU s/GB (redis-server)",
            redis_per_gb,
            broker_per_gb / redis_per_gb if redis_per_gb else float("inf"),
            note="lower is better",
        )
    )
    return results
