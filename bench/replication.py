"""Replication: the price of acks=all over three replicas, and failover time after kill -9.

Runs a real ZooKeeper and three broker processes on loopback (tests/cluster's `Cluster`:
min.insync.replicas 2, a 4 s ZooKeeper session). Cases:

* acks=all RF 3 vs acks=1 RF 1: the same confluent-kafka producer settings (linger.ms 5,
  100-byte values) into two one-partition topics led by the same broker, alternating the
  two in each repetition; ratio = median of (acks=all records/s / acks=1 records/s). Kafka's
  own 2014 benchmark measured 421,823 vs 821,557 records/s, about 0.51; aim >= 0.5.
* failover: an idempotent acks=all producer writes ~1,000 records/s; the leader is killed
  with SIGKILL; the time until the first record produced after the kill is acknowledged.
  p50 and p99 over the kills (the killed broker restarts and rejoins the ISR in between).
  A dead broker is noticed when its ZooKeeper session expires, so the peer is that session
  timeout: the ratio says how much the election, LeaderAndIsr and the client's metadata
  refresh add to it (aim <= 1.5).
"""

from __future__ import annotations

import bisect
import itertools
import statistics
import sys
import threading
import time
from pathlib import Path

from bench import Result, say, scratch_dir

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

VALUE = b"x" * 100


class _Dirs:
    """The part of pytest's tmp_path_factory that tests/cluster's Cluster uses."""

    def __init__(self, base: Path):
        self.base = base
        self._numbers = itertools.count()

    def mktemp(self, name: str) -> Path:
        path = self.base / f"{name}-{next(self._numbers)}"
        path.mkdir(parents=True)
        return path


def _create(cluster, topic: str, replicas: list[int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new_topic = NewTopic(
        topic,
        num_partitions=1,
        replication_factor=-1,
        replica_assignment=[replicas],
        config={"min.insync.replicas": str(min(2, len(replicas)))},
    )
    admin.create_topics([new_topic])[topic].result(30)

    def led(meta) -> bool:
        state = meta["topics"].get(topic, {}).get(0)
        return (
            state is not None
            and state["leader"] == replicas[0]
            and len(state["isr"]) == len(replicas)
        )

    cluster.wait_for(led, 60, f"{topic} led by {replicas[0]} with a full ISR")


def _records_per_second(bootstrap: str, topic: str, acks: str, count: int) -> float:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": acks,
            "linger.ms": 5,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    for _ in range(2000):  # connections and metadata before the clock starts
        producer.produce(topic, VALUE)
    producer.flush(60)
    start = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, VALUE)
                break
            except BufferError:
                producer.poll(0.001)
    if producer.flush(120):
        raise RuntimeError(f"{topic}: records still unacknowledged after 120 s")
    return count / (time.perf_counter() - start)


def _throughput(cluster, quick: bool) -> list[Result]:
    leader, *followers = list(cluster.brokers)
    _create(cluster, "bench-rf3", [leader, *followers])
    _create(cluster, "bench-rf1", [leader])
    count = 100_000 if quick else 400_000
    repetitions = 1 if quick else 3
    ratios, all_rates, one_rates = [], [], []
    for repetition in range(repetitions):
        one = _records_per_second(cluster.bootstrap, "bench-rf1", "1", count)
        every = _records_per_second(cluster.bootstrap, "bench-rf3", "all", count)
        say(
            f"  repetition {repetition + 1}: acks=all RF 3 {every:,.0f}/s, acks=1 RF 1 {one:,.0f}/s"
        )
        ratios.append(every / one)
        all_rates.append(every)
        one_rates.append(one)
    return [
        Result(
            "replication",
            "acks=all RF 3 vs acks=1 RF 1, 100 B",
            "records/s",
            "acks=all, RF 3, min.insync 2",
            statistics.median(all_rates),
            "acks=1, RF 1",
            statistics.median(one_rates),
            statistics.median(ratios),
            aim_at_least=0.5,
        )
    ]


class _AckClock:
    """An idempotent acks=all producer at ~1,000 records/s, noting each ack's time."""

    def __init__(self, bootstrap: str, topic: str):
        from confluent_kafka import Producer

        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 1,
                "message.timeout.ms": 120000,
                "retry.backoff.ms": 50,
                "reconnect.backoff.ms": 50,
                "reconnect.backoff.max.ms": 200,
            }
        )
        self.topic = topic
        self.acked_at: dict[int, float] = {}  # record number -> ack time
        self.sent_at: list[float] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            number = len(self.sent_at)
            self.sent_at.append(time.monotonic())
            self.producer.produce(
                self.topic, VALUE, on_delivery=lambda err, _msg, n=number: self._done(err, n)
            )
            self.producer.poll(0.001)
        self.producer.flush(60)

    def _done(self, err, number: int) -> None:
        if err is None:
            self.acked_at[number] = time.monotonic()
        else:
            self.errors.append(str(err))

    def first_ack_sent_after(self, moment: float, timeout: float = 120) -> float:
        """Seconds from `moment` to the ack of the first record produced after it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            first = bisect.bisect_left(self.sent_at, moment)
            if first in self.acked_at:
                return self.acked_at[first] - moment
            time.sleep(0.005)
        raise TimeoutError(f"no write acknowledged {timeout}s after the kill: {self.errors[-3:]}")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _failover(cluster, quick: bool, session_timeout_s: float) -> list[Result]:
    topic = "bench-failover"
    _create(cluster, topic, list(cluster.brokers))
    clock = _AckClock(cluster.bootstrap, topic)
    kills = 3 if quick else 10
    times = []
    try:
        clock.first_ack_sent_after(time.monotonic())
        for kill in range(kills):
            leader = cluster.leader_of(topic)
            killed_at = time.monotonic()
            cluster.brokers[leader].kill()
            seconds = clock.first_ack_sent_after(killed_at)
            times.append(seconds)
            say(
                f"  kill {kill + 1}: broker {leader}, next acknowledged write after {seconds:.2f} s"
            )
            cluster.brokers[leader].start()
            cluster.wait_full_isr(topic)
    finally:
        clock.stop()
    p50, p99 = statistics.median(times), _percentile(times, 0.99)
    peer_label = "ZooKeeper session timeout"
    return [
        Result(
            "replication",
            f"failover p50 over {kills} leader kills",
            "s",
            "kill -9 -> next ack",
            p50,
            peer_label,
            session_timeout_s,
            p50 / session_timeout_s,
            aim_at_most=1.5,
        ),
        Result(
            "replication",
            f"failover p99 over {kills} leader kills",
            "s",
            "kill -9 -> next ack",
            p99,
            peer_label,
            session_timeout_s,
            p99 / session_timeout_s,
            aim_at_most=1.5,
        ),
    ]


def run(quick: bool) -> list[Result]:
    from tests.cluster.conftest import SESSION_TIMEOUT_MS, Cluster
    from tests.harness import ZooKeeper

    with scratch_dir("replication") as base:
        zookeeper = ZooKeeper(base / "zookeeper").start()
        cluster = None
        try:
            cluster = Cluster(zookeeper, _Dirs(base)).start()
            say("replication: acks=all RF 3 vs acks=1 RF 1")
            results = _throughput(cluster, quick)
            say("replication: failover after kill -9 of the leader")
            results += _failover(cluster, quick, SESSION_TIMEOUT_MS / 1000)
            return results
        finally:
            if cluster is not None:
                cluster.kill_all()
            zookeeper.stop()
