"""The message browser on a large topic: page latency at its start, middle and end, and a
value filter over N records vs reading the same records with kcat.

A real ZooKeeper and broker (tests/harness.py) and a real dashboard (daphne, set up as the
web tests set it up: migrate, an admin, the cluster registered) on loopback. One partition
of ~200-byte JSON records, written with `kcat -P` (librdkafka batching, 1 MB batches) in
segments of 64 MiB (8 MiB with `--quick`), so the start, the middle and the end lie in
different segments.

* page latency: GET of the messages page (`/clusters/local/topics/T/messages/`, 50 records,
  a logged-in session) from the earliest offset, from the middle offset, from the time of
  the middle record and the latest 50; each page is timed singly, the positions in turn,
  after one untimed round (30 rounds, 10 with `--quick`). Ratio = median at the middle (or
  end) ÷ median at the start; aim <= 1.5: the browser seeks through the broker's offset and
  time indexes, so a page costs the same wherever it is (a scan from the start would grow
  with the offset).
* value filter: GET `.../records?offset=0&value=NEEDLE&value_match=substring&max_scan=N`
  (the browse the page runs, as JSON), paged with its cursor until N records were scanned;
  the needle is in one record of 10,000 (a flag in the JSON), so few records match. Peer:
  `kcat -C -o 0 -c N -e -f '%s\\n' | grep -c NEEDLE`, reading and filtering the same N
  records in C. Ratio = filter records/s ÷ kcat's. Also the same filter written as an
  expression (`$.flag == "hit"`), which parses every value as JSON; no aim for either.

Sizes: BENCH_MESSAGES_TOPIC_MIB (default 256, `--quick` 32; 10240 for the issue's 10 GiB)
and BENCH_MESSAGES_FILTER_RECORDS (default 200,000, `--quick` 50,000; at most what the
topic holds).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from bench import MIB, Result, median, say, scratch_dir

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TOPIC = "browse"
PAD = "x" * 120
FLAG_EVERY = 10_000
NEEDLE = '"flag": "hit"'
PAGE_SIZE = 50


def _record(i: int) -> bytes:
    flag = "hit" if i % FLAG_EVERY == 0 else "-"
    doc = {"id": i, "customer": f"c{i % 1000:04d}", "flag": flag, "pad": PAD}
    return json.dumps(doc).encode() + b"\n"


def _fill(bootstrap: str, topic_bytes: int) -> int:
    """Writes records through `kcat -P` until about `topic_bytes` of values; their count."""
    kcat = subprocess.Popen(
        ["kcat", "-b", bootstrap, "-q", "-P", "-t", TOPIC, "-p", "0"]
        + ["-X", "acks=1", "-X", "linger.ms=5", "-X", "batch.size=1000000"]
        + ["-X", "queue.buffering.max.messages=2000000"],
        stdin=subprocess.PIPE,
    )
    written = count = 0
    while written < topic_bytes:
        chunk = b"".join(_record(i) for i in range(count, count + 10_000))
        kcat.stdin.write(chunk)
        written += len(chunk)
        count += 10_000
    kcat.stdin.close()
    if kcat.wait(3600) != 0:
        raise RuntimeError("kcat -P failed")
    return count


class _Dirs:
    """What running_dashboard needs of pytest's tmp_path_factory."""

    def __init__(self, base: Path):
        self.base = base

    def mktemp(self, name: str) -> Path:
        path = self.base / name
        path.mkdir(parents=True, exist_ok=True)
        return path


class _Session:
    """A logged-in browser session on the dashboard (cookies, CSRF), and its API token."""

    def __init__(self, dashboard):
        import requests

        self.base = dashboard.url
        self.http = requests.Session()
        form = self.http.get(f"{self.base}/login/", timeout=30)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        answer = self.http.post(
            f"{self.base}/login/",
            data={
                "username": dashboard.username,
                "password": dashboard.password,
                "csrfmiddlewaretoken": token,
            },  # fmt: skip
            headers={"Referer": f"{self.base}/login/"},
            timeout=30,
        )
        answer.raise_for_status()
        self.api = requests.Session()
        self.api.headers["Authorization"] = f"Token {dashboard.token}"

    def page(self, **params) -> float:
        """Seconds for one messages page; checks it shows PAGE_SIZE records."""
        url = f"{self.base}/clusters/local/topics/{TOPIC}/messages/"
        start = time.perf_counter()
        answer = self.http.get(url, params={"partition": 0, "limit": PAGE_SIZE, **params})
        elapsed = time.perf_counter() - start
        answer.raise_for_status()
        shown = re.search(r'<span id="matched">(\d+)</span>', answer.text)
        if shown is None or int(shown.group(1)) != PAGE_SIZE:
            raise RuntimeError(f"page {params} did not show {PAGE_SIZE} records")
        return elapsed

    def records(self, **params) -> dict:
        url = f"{self.base}/api/v3/clusters/local/topics/{TOPIC}/records"
        answer = self.api.get(url, params=params, timeout=600)
        answer.raise_for_status()
        return answer.json()

    def scan(self, count: int, **filters) -> tuple[float, int, int]:
        """(seconds, records scanned, matches) of a filter over the first `count` records,
        paged with the answer's cursor as the browser pages."""
        start = time.perf_counter()
        scanned = matches = 0
        position: dict = {"offset": 0}
        while scanned < count:
            budget = min(count - scanned, 1_000_000)
            body = self.records(partition_id=0, limit=500, max_scan=budget, **filters, **position)
            scanned += body["scan"]["scanned_records"]
            matches += len(body["data"])
            position = {"cursor": body["scan"]["next_cursor"]}
            if body["scan"]["complete"]:
                break
        return time.perf_counter() - start, scanned, matches


def _kcat_filter(bootstrap: str, count: int) -> tuple[float, int]:
    """(seconds, matches) of kcat reading `count` records from offset 0 into grep -c."""
    command = (
        f"kcat -b {bootstrap} -q -C -t {TOPIC} -p 0 -o 0 -c {count} -e -f '%s\\n'"
        f" | grep -c {shlex.quote(NEEDLE)}"
    )
    start = time.perf_counter()
    out = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=3600)
    elapsed = time.perf_counter() - start
    return elapsed, int(out.stdout.strip() or 0)


def _sizes(quick: bool) -> tuple[int, int]:
    topic_mib = int(os.environ.get("BENCH_MESSAGES_TOPIC_MIB") or (32 if quick else 256))
    records = int(os.environ.get("BENCH_MESSAGES_FILTER_RECORDS") or (50_000 if quick else 200_000))
    return topic_mib * MIB, records


def run(quick: bool) -> list[Result]:
    from bench.broker_throughput import BrokerUnderTest
    from tests.web.conftest import running_dashboard

    topic_bytes, filter_records = _sizes(quick)
    rounds = 10 if quick else 30
    segment = (8 if quick else 64) * MIB
    with scratch_dir("message-browser") as base:
        env = BrokerUnderTest(base)
        try:
            env.create_topic(TOPIC, **{"segment.bytes": str(segment)})
            say(f"message_browser: writing ~{topic_bytes // MIB:,} MiB of JSON records with kcat")
            count = _fill(env.bootstrap, topic_bytes)
            high = env.end_offset(TOPIC)
            assert high == count, f"{high} of {count} records arrived"
            filter_records = min(filter_records, count)
            say(f"message_browser: {count:,} records; starting a dashboard")
            os.environ["DASHBOARD_SECRETS_DIRS"] = str(base)  # where the admin token is
            dashboard_cm = running_dashboard(
                _Dirs(base / "dashboard"),
                "redis://127.0.0.1:9/0",  # pages and the REST API never use it
                env.bootstrap,
                env.broker.props["zookeeper.connect"],
                f"file:{env.broker.dir / 'logs' / 'admin.token'}",
            )
            with dashboard_cm as dashboard:
                session = _Session(dashboard)
                middle = count // 2
                middle_ts = session.records(partition_id=0, offset=middle, limit=1)["data"][0][
                    "timestamp"
                ]
                positions = {
                    "start": {"start": "earliest"},
                    "middle": {"start": "offset", "offset": middle},
                    "middle by time": {"start": "timestamp", "timestamp": middle_ts},
                    "end": {"start": "latest"},
                }
                times: dict[str, list[float]] = {name: [] for name in positions}
                say(f"message_browser: {rounds} pages at each of {', '.join(positions)}")
                for round_no in range(rounds + 1):
                    for name, params in positions.items():
                        elapsed = session.page(**params)
                        if round_no:  # the first round warms caches and connections
                            times[name].append(elapsed)
                say(f"message_browser: a value filter over {filter_records:,} records")
                filter_s, scanned, matches = session.scan(
                    filter_records, value=NEEDLE, value_match="substring"
                )
                expr_s, expr_scanned, expr_matches = session.scan(
                    filter_records, filter='$.flag == "hit"'
                )
            kcat_s, kcat_matches = _kcat_filter(env.bootstrap, filter_records)
        finally:
            env.stop()
    if not (matches == expr_matches == kcat_matches) or scanned != filter_records:
        raise RuntimeError(
            f"filters disagree: {matches} / {expr_matches} / kcat {kcat_matches} matches, "
            f"{scanned} of {filter_records} scanned"
        )

    results = []
    start_ms = median(times["start"]) * 1000
    size = f"{topic_bytes / MIB:,.0f} MiB, {count:,} records"
    for name in ("middle", "middle by time", "end"):
        ms = median(times[name]) * 1000
        results.append(
            Result(
                "message_browser",
                f"page of {PAGE_SIZE} at the {name} vs the start ({size})",
                "ms",
                f"{ms:,.1f} ms",
                ms,
                f"{start_ms:,.1f} ms (start)",
                start_ms,
                ms / start_ms,
                aim_at_most=1.5,
            )
        )
    kcat_rps = filter_records / kcat_s
    for label, seconds, done in (
        ("value filter (substring)", filter_s, scanned),
        ('expression filter ($.flag == "hit")', expr_s, expr_scanned),
    ):
        rps = done / seconds
        results.append(
            Result(
                "message_browser",
                f"{label} over {done:,} records, {matches} match",
                "records/s",
                f"{rps:,.0f} rec/s ({seconds:.2f} s)",
                rps,
                f"{kcat_rps:,.0f} rec/s ({kcat_s:.2f} s, kcat | grep -c)",
                kcat_rps,
                rps / kcat_rps,
            )
        )
    return results
