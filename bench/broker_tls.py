"""Produce and consume throughput over SSL vs PLAINTEXT, on one broker in the same run.

A real ZooKeeper and one broker (tests/harness.py) with two listeners: PLAINTEXT and SSL
(PEM key store from a throwaway CA, tests/tls_certs.py; server TLS, TLS 1.3 as negotiated by
librdkafka). kcat produces N records of 1000-byte values (acks=1) to a topic of its own over
each listener, then consumes them back; the two sides alternate, three rounds, medians.
Ratio = SSL MB/s / PLAINTEXT MB/s (Kafka's own TLS cost puts it around 0.6-0.8); a fetch over
TLS is read from the segment in 256 KiB chunks instead of sendfile.
"""

from __future__ import annotations

import subprocess
import time

from bench import Result, median, say, scratch_dir
from bench.broker_throughput import ROOT  # noqa: F401 - puts the repo on sys.path

VALUE_BYTES = 1000
ROUNDS = 3


def _kcat(bootstrap: str, security: list[str], *args: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        ["kcat", "-b", bootstrap, "-q", *security, *args],
        stdout=subprocess.DEVNULL,
        check=True,
        timeout=600,
    )
    return time.perf_counter() - start


def run(quick: bool) -> list[Result]:
    from tests.harness import BrokerProcess, ZooKeeper
    from tests.tls_certs import make_pki, ssl_props

    count = 20_000 if quick else 100_000
    megabytes = count * VALUE_BYTES / 1e6
    timings: dict[tuple[str, str], list[float]] = {}
    with scratch_dir("broker-tls") as base:
        pki = make_pki(base / "pki")
        lines = base / "records.txt"
        lines.write_bytes((b"v" * VALUE_BYTES + b"\n") * count)
        zookeeper = ZooKeeper(base / "zookeeper").start()
        broker = BrokerProcess(
            base / "broker",
            f"{zookeeper.connect}/bench",
            internal_protocol="SSL",
            num_partitions="1",
            **ssl_props(pki),
        )
        try:
            broker.start()
            sides = {
                "PLAINTEXT": (broker.bootstrap, []),
                "SSL": (
                    broker.internal_bootstrap,
                    ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={pki.ca}"],
                ),
            }
            for round_ in range(ROUNDS):
                for name, (bootstrap, security) in sides.items():
                    topic = f"tls-bench-{name.lower()}-{round_}"
                    say(f"broker_tls: round {round_ + 1}, {name}: {count:,} records of 1000 B")
                    produce = _kcat(
                        bootstrap,
                        security,
                        *("-P", "-t", topic, "-p", "0", "-l", str(lines)),
                        *("-X", "acks=1", "-X", "linger.ms=5", "-X", "batch.size=1000000"),
                    )
                    consume = _kcat(
                        bootstrap,
                        security,
                        *("-C", "-t", topic, "-p", "0", "-o", "beginning", "-e"),
                        *("-c", str(count), "-f", "%s"),
                    )
                    timings.setdefault((name, "produce"), []).append(produce)
                    timings.setdefault((name, "consume"), []).append(consume)
        finally:
            broker.kill()
            zookeeper.stop()

    results = []
    for case in ("produce", "consume"):
        ssl_mb = megabytes / median(timings[("SSL", case)])
        plain_mb = megabytes / median(timings[("PLAINTEXT", case)])
        results.append(
            Result(
                "broker_tls",
                f"{case} 1000 B over SSL vs PLAINTEXT, MB/s",
                "MB/s",
                f"{ssl_mb:,.1f} MB/s (SSL)",
                ssl_mb,
                f"{plain_mb:,.1f} MB/s (PLAINTEXT)",
                plain_mb,
                ssl_mb / plain_mb,
                aim_at_least=0.6,
            )
        )
    return results
