"""Produce and consume throughput over SSL and SASL_SSL vs PLAINTEXT, on one broker in the
same run.

A real ZooKeeper and one broker (tests/harness.py) with three listeners: PLAINTEXT, SSL
(PEM key store from a throwaway CA, tests/tls_certs.py; server TLS, TLS 1.3 as negotiated by
librdkafka) and SASL_SSL (the same TLS, then SCRAM-SHA-512 as a user made with `brokerd
configs` on ZooKeeper before the broker starts). kcat produces N records of 1000-byte values
(acks=1) to a topic of its own over each listener, then consumes them back; the three sides
alternate, three rounds, medians. Ratio = SSL (or SASL_SSL) MB/s / PLAINTEXT MB/s (Kafka's own
TLS cost puts it around 0.6-0.8); a fetch over TLS is read from the segment in 256 KiB chunks
instead of sendfile. SASL adds only the handshake per connection: SASL_SSL should match SSL.
"""

from __future__ import annotations

import subprocess
import sys
import time

from bench import Result, median, say, scratch_dir
from bench.broker_throughput import ROOT  # also puts the repo on sys.path

VALUE_BYTES = 1000
ROUNDS = 3
USER, PASSWORD = "bench", "bench-secret"


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
    from tests.harness import BrokerProcess, ZooKeeper, free_port
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
        sasl_port = free_port()
        broker.props["listeners"] += f",SASL_SSL://127.0.0.1:{sasl_port}"
        broker.props["listener.security.protocol.map"] += ",SASL_SSL:SASL_SSL"
        broker.props["listener.name.sasl_ssl.sasl.enabled.mechanisms"] = "SCRAM-SHA-512"
        try:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "brokerd",
                    "configs",
                    "--zookeeper",
                    broker.props["zookeeper.connect"],
                    "--alter",
                    "--add-config",
                    f"SCRAM-SHA-512=[iterations=4096,password={PASSWORD}]",
                    "--entity-type",
                    "users",
                    "--entity-name",
                    USER,
                ],  # fmt: skip
                cwd=ROOT,
                check=True,
                capture_output=True,
                timeout=120,
            )
            broker.start()
            tls = ["-X", f"ssl.ca.location={pki.ca}"]
            sides = {
                "PLAINTEXT": (broker.bootstrap, []),
                "SSL": (broker.internal_bootstrap, ["-X", "security.protocol=SSL", *tls]),
                "SASL_SSL": (
                    f"127.0.0.1:{sasl_port}",
                    [
                        *("-X", "security.protocol=SASL_SSL", *tls),
                        *("-X", "sasl.mechanisms=SCRAM-SHA-512"),
                        *("-X", f"sasl.username={USER}", "-X", f"sasl.password={PASSWORD}"),
                    ],
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
        plain_mb = megabytes / median(timings[("PLAINTEXT", case)])
        for secured in ("SSL", "SASL_SSL"):
            secured_mb = megabytes / median(timings[(secured, case)])
            results.append(
                Result(
                    "broker_tls",
                    f"{case} 1000 B over {secured} vs PLAINTEXT, MB/s",
                    "MB/s",
                    f"{secured_mb:,.1f} MB/s ({secured})",
                    secured_mb,
                    f"{plain_mb:,.1f} MB/s (PLAINTEXT)",
                    plain_mb,
                    secured_mb / plain_mb,
                    aim_at_least=0.6,
                )
            )
    return results
