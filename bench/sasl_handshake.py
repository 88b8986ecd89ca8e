"""SASL authentications per second: SCRAM-SHA-512 and SCRAM-SHA-256 vs PLAIN, one broker, the
same run.

A real ZooKeeper and one broker (tests/harness.py) whose SASL_PLAINTEXT listener enables
PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; the SCRAM users are made with `brokerd configs` on
ZooKeeper before it starts (iterations 4096, Kafka's default). CONCURRENCY client loops
(brokerd.client's BrokerConnection, as a client connects: TCP connect, ApiVersions,
SaslHandshake, SaslAuthenticate until done, close) each authenticate again and again for
SECONDS; the three mechanisms alternate, ROUNDS rounds, medians. PLAIN is the peer: the same
connection with one SaslAuthenticate round trip and a constant-time password compare, where
SCRAM takes two round trips and the broker's HMACs (the broker keeps only StoredKey and
ServerKey, so it never runs PBKDF2). The clients cache the salted password per salt and
iteration count (RFC 5802 section 5.1 allows it; Kafka's Java client recomputes it), so the
client's PBKDF2 does not bound the rate: what is measured is the broker. The note gives the
broker's CPU milliseconds per authentication (from /proc), steadier than the rate on a shared
machine.
"""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import sys
import time
from pathlib import Path

from bench import Result, median, say, scratch_dir
from bench.broker_throughput import ROOT  # noqa: F401 - puts the repo on sys.path

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
PASSWORD = "bench-secret"
CONCURRENCY = 8
ROUNDS = 3


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


async def _authenticate_for(bootstrap: str, mechanism: str, seconds: float) -> int:
    from brokerd.client.connection import BrokerConnection, ClientSecurity

    host, port = bootstrap.split(":")
    user = "admin" if mechanism == "PLAIN" else "bench"
    password = "admin-secret" if mechanism == "PLAIN" else PASSWORD
    security = ClientSecurity(
        "SASL_PLAINTEXT", sasl_mechanism=mechanism, sasl_username=user, sasl_password=password
    )
    deadline = time.monotonic() + seconds
    done = 0

    async def loop() -> None:
        nonlocal done
        while time.monotonic() < deadline:
            connection = BrokerConnection(host, int(port), security=security, request_timeout=30)
            try:
                await connection.connect()
            finally:
                await connection.close()
            done += 1

    await asyncio.gather(*(loop() for _ in range(CONCURRENCY)))
    return done


def run(quick: bool) -> list[Result]:
    from brokerd.security.sasl import scram
    from tests.harness import BrokerProcess, ZooKeeper
    from tests.sasl_support import sasl_listener_props

    # The clients' salted-password cache (see the module's docstring).
    scram.salted_password = functools.lru_cache(maxsize=16)(scram.salted_password)
    seconds = 3.0 if quick else 10.0
    rates: dict[str, list[float]] = {m: [] for m in MECHANISMS}
    cpu_ms: dict[str, list[float]] = {m: [] for m in MECHANISMS}
    with scratch_dir("sasl-handshake") as base:
        zookeeper = ZooKeeper(base / "zookeeper").start()
        broker = BrokerProcess(
            base / "broker", f"{zookeeper.connect}/bench", client_protocol="SASL_PLAINTEXT"
        )
        broker.props.update(sasl_listener_props("SASL_PLAINTEXT", mechanisms=",".join(MECHANISMS)))
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
                    f"SCRAM-SHA-256=[iterations=4096,password={PASSWORD}],"
                    f"SCRAM-SHA-512=[iterations=4096,password={PASSWORD}]",
                    "--entity-type",
                    "users",
                    "--entity-name",
                    "bench",
                ],  # fmt: skip
                cwd=ROOT,
                check=True,
                capture_output=True,
                timeout=120,
            )
            broker.start()
            assert broker.process is not None
            pid = broker.process.pid
            for mechanism in MECHANISMS:  # warm up: first connections, caches
                asyncio.run(_authenticate_for(broker.bootstrap, mechanism, 0.5))
            for round_ in range(ROUNDS):
                for mechanism in MECHANISMS:
                    say(f"sasl_handshake: round {round_ + 1}, {mechanism} for {seconds:g} s")
                    cpu_before, start = _cpu_seconds(pid), time.perf_counter()
                    count = asyncio.run(_authenticate_for(broker.bootstrap, mechanism, seconds))
                    elapsed = time.perf_counter() - start
                    cpu = _cpu_seconds(pid) - cpu_before
                    rates[mechanism].append(count / elapsed)
                    cpu_ms[mechanism].append(cpu * 1000 / max(count, 1))
                    say(
                        f"sasl_handshake: {count / elapsed:,.0f}/s, broker CPU "
                        f"{cpu_ms[mechanism][-1]:.2f} ms per authentication"
                    )
        finally:
            broker.kill()
            zookeeper.stop()

    plain = median(rates["PLAIN"])
    results = []
    for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
        rate = median(rates[mechanism])
        results.append(
            Result(
                "sasl_handshake",
                f"{mechanism} authentications/s vs PLAIN ({CONCURRENCY} clients)",
                "auth/s",
                f"{mechanism}; broker CPU {median(cpu_ms[mechanism]):.2f} ms each",
                rate,
                f"PLAIN; broker CPU {median(cpu_ms['PLAIN']):.2f} ms each",
                plain,
                rate / plain,
                aim_at_least=0.5,
                note=(
                    f"broker CPU per authentication: {median(cpu_ms[mechanism]):.2f} ms "
                    f"({mechanism}) vs {median(cpu_ms['PLAIN']):.2f} ms (PLAIN)"
                ),
            )
        )
    return results
