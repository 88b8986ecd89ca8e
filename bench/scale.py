"""Scale: a wide topic's creation, a controlled shutdown and a controller failover.

A real ZooKeeper and three broker processes on loopback (tests/cluster's `Cluster`: a 4 s
ZooKeeper session; Kafka's default replica.lag.time.max.ms, 30 s). Cases:

* creation: confluent-kafka's AdminClient creates a topic of WIDE partitions at RF 3 and one
  of 10; the time from the request until every partition serves (its leader in Metadata
  and ListOffsets answered by that leader, i.e. its log exists). Ratio wide / narrow; aim
  <= 20 (issue 15), where the pre-pipelining controller took 115x for 1,000 vs 10.
* controlled shutdown: SIGTERM of a broker that is not the controller, holding a third of
  the wide topic's leaderships; seconds until the controller answered that it leads none
  ("controlled shutdown succeeded" in its log; the process exit after is printed too). Kafka 1.1 published 3 s for a broker with 10,000 partitions (6.5 minutes before).
* restart: the broker just shut down started again; seconds until it is back in the ISR of
  every partition it holds (its logs loaded, caught up, re-admitted); aim 30 s (issue 15).
* Metadata for all topics: confluent-kafka's list_topics() (every topic, every partition)
  timed per request (median of several) with the wide topic in the cluster, against the
  same with only the narrow one (measured before the wide topic exists). Ratio.
* produce to the WIDE partitions (at most 1,000 of them) at once vs to one partition:
  confluent-kafka, the same number of 100-byte records (acks=1, linger 5 ms) spread
  round-robin over those partitions of the wide topic, then all to partition 0; records/s ratio, aim >= 0.7 (issue 15).
  librdkafka sends one partition per Produce request (its issue #1700), so spread over
  WIDE partitions each request carries a record or two; the same case is then measured with
  Kafka's own Java producer (bench/java/ProducerRate.java), whose requests carry every
  ready partition of a broker, as Kafka's own benchmarks would.
* controller failover: kill -9 of the controller; seconds until a new controller has given
  every partition a live leader. It includes the ZooKeeper session expiry that reveals the
  death (the peer number); Kafka 1.1 published about 14 s to reload 100,000 partitions.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import statistics
import sys
import time
from pathlib import Path

from bench import Result, say, scratch_dir

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

NARROW = 10
PRODUCE_SPREAD = 1000


def _serving(admin, topic: str, partitions: int, excluded: int | None = None) -> bool:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    found = admin.list_topics(topic=topic, timeout=10)
    described = found.topics.get(topic)
    if described is None or described.error is not None:
        return False
    parts = described.partitions
    if len(parts) != partitions or any(
        p.leader not in found.brokers or p.leader == excluded for p in parts.values()
    ):
        return False
    wanted = {TopicPartition(topic, p): OffsetSpec.latest() for p in parts}
    try:
        for future in admin.list_offsets(wanted, request_timeout=30).values():
            future.result()
    except Exception:  # noqa: BLE001 - a leader without its log yet: not serving
        return False
    return True


def described_partitions(admin, topic: str) -> dict:
    """Metadata's partitions of `topic` (id -> PartitionMetadata); {} if it has none."""
    described = admin.list_topics(topic=topic, timeout=30).topics.get(topic)
    if described is None or described.error is not None:
        return {}
    return described.partitions


def _back_in_every_isr(admin, topic: str, broker: int) -> bool:
    """Every partition of `topic` that `broker` is a replica of has it in its ISR."""
    parts = described_partitions(admin, topic)
    return bool(parts) and all(broker in p.isrs for p in parts.values() if broker in p.replicas)


def timed_wait(check, timeout: float = 300) -> float:
    """Seconds until `check()` holds (polled every 50 ms); TimeoutError after `timeout`."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise TimeoutError("not reached")
        time.sleep(0.05)
    return time.monotonic() - started


def _create(admin, topic: str, partitions: int) -> float:
    from confluent_kafka.admin import NewTopic

    started = time.monotonic()
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=3)],
        operation_timeout=300,
        request_timeout=300,
    )
    futures[topic].result(300)
    timed_wait(lambda: _serving(admin, topic, partitions))
    return time.monotonic() - started


def _metadata_s(admin, rounds: int = 7) -> float:
    """Median seconds of a Metadata request for every topic."""
    times = []
    for _ in range(rounds):
        began = time.monotonic()
        admin.list_topics(timeout=60)
        times.append(time.monotonic() - began)
    return statistics.median(times)


def _produce_rate(bootstrap: str, topic: str, partitions: list[int], records: int) -> float:
    """Records/s of `records` 100-byte records round-robin over `partitions`, acknowledged."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "linger.ms": 5,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    value = b"x" * 100
    producer.produce(topic, value, partition=partitions[0])  # connections and metadata
    producer.flush(60)
    began = time.monotonic()
    for n in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=partitions[n % len(partitions)])
                break
            except BufferError:
                producer.poll(0.01)
        if n % 1000 == 0:
            producer.poll(0)
    left = producer.flush(300)
    if left:
        raise RuntimeError(f"{left} records not acknowledged")
    return records / (time.monotonic() - began)


def _java_produce_rate(
    base: Path, bootstrap: str, topic: str, partitions: int, records: int
) -> float | None:
    """Records/s of Kafka's own Java producer (bench/java/ProducerRate.java), or None when
    javac or the kafka-clients jar (`make setup` fetches it) is missing."""
    import shutil
    import subprocess

    jar = ROOT / ".venv" / "java" / "kafka-clients-3.9.2.jar"
    slf4j = Path("/usr/share/java/slf4j-api.jar")
    if shutil.which("javac") is None or not jar.exists():
        return None
    classes = base / "java-classes"
    classpath = f"{classes}:{jar}:{slf4j}"
    if not (classes / "ProducerRate.class").exists():
        source = ROOT / "bench" / "java" / "ProducerRate.java"
        subprocess.run(
            ["javac", "-nowarn", "-cp", classpath, "-d", str(classes), str(source)], check=True
        )
    done = subprocess.run(
        [
            "java",
            "-Xmx512m",
            "-cp",
            classpath,
            "ProducerRate",
            bootstrap,
            topic,
            str(partitions),
            str(records),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith(("OK", "ERROR"))), "")
    if not line.startswith("OK"):
        raise RuntimeError(f"ProducerRate failed: {line or done.stderr[-2000:]}")
    return float(line.split()[1])


def controller_cases(cluster, admin, benchmark: str, wide: int, total: int) -> list[Result]:
    """The controller's big operations on the topic "scale-wide" (`wide` partitions of the
    cluster's `total`), as Results named `benchmark`: a controlled shutdown of a broker that
    is not the controller, its restart until it is back in every ISR, then kill -9 of the
    controller until every partition serves again."""
    from tests.cluster.conftest import SESSION_TIMEOUT_MS

    results = []
    meta = admin.list_topics(topic="scale-wide", timeout=10)
    controller = meta.controller_id
    stopping_id = next(b for b in cluster.brokers if b != controller)
    led = sum(1 for p in meta.topics["scale-wide"].partitions.values() if p.leader == stopping_id)
    stopping = cluster.brokers[stopping_id]
    already = len(stopping.output)
    started = time.monotonic()
    stopping.process.send_signal(signal.SIGTERM)
    shutdown_s = timed_wait(lambda: "controlled shutdown succeeded" in stopping.output[already:])
    stopping.terminate(120)
    exited_s = time.monotonic() - started
    say(
        f"{benchmark}: controlled shutdown of broker {stopping_id} leading {led} partitions: "
        f"leaders moved after {shutdown_s:.2f} s, process exited after {exited_s:.2f} s"
    )
    results.append(
        Result(
            benchmark,
            f"controlled shutdown, broker leading {led} of {total} partitions",
            "s",
            "SIGTERM -> all leaders moved",
            shutdown_s,
            "Kafka 1.1, 10,000 partitions",
            3.0,
            shutdown_s / 3.0,
            note="aim (issue 15): 5 s",
        )
    )
    restarted_at = time.monotonic()
    cluster.brokers[stopping_id].start(600)
    started_s = time.monotonic() - restarted_at
    hosted = sum(
        1 for p in meta.topics["scale-wide"].partitions.values() if stopping_id in p.replicas
    )
    timed_wait(lambda: _back_in_every_isr(admin, "scale-wide", stopping_id), 900)
    restart_s = time.monotonic() - restarted_at
    say(
        f"{benchmark}: restart of broker {stopping_id} (replica of {hosted} partitions): "
        f"serving after {started_s:.2f} s, back in every ISR after {restart_s:.2f} s"
    )
    results.append(
        Result(
            benchmark,
            f"restart of a broker holding {hosted} of {total} partitions, until "
            "it is back in every ISR",
            "s",
            "start -> in every ISR",
            restart_s,
            "aim (issue 15)",
            30.0,
            restart_s / 30.0,
            aim_at_most=1.0,
            note=f"process serving after {started_s:.1f} s",
        )
    )

    controller = admin.list_topics(timeout=10).controller_id
    killed_at = time.monotonic()
    cluster.brokers[controller].kill()
    timed_wait(
        lambda: (
            _serving(admin, "scale-wide", wide, excluded=controller)
            and admin.list_topics(timeout=10).controller_id not in (controller, -1)
        )
    )
    failover_s = time.monotonic() - killed_at
    session_s = SESSION_TIMEOUT_MS / 1000
    say(
        f"{benchmark}: kill -9 of controller {controller}: all {wide} serving after {failover_s:.2f} s"
    )
    results.append(
        Result(
            benchmark,
            f"kill -9 of the controller until all {wide} partitions serve",
            "s",
            "kill -9 -> all serving",
            failover_s,
            "ZooKeeper session timeout",
            session_s,
            failover_s / session_s,
            aim_at_most=1.5,
        )
    )
    return results


@contextlib.contextmanager
def three_brokers(name: str):
    """A ZooKeeper and tests/cluster's three brokers in a scratch dir, with an AdminClient;
    BENCH_SCALE_LOGS=<dir> keeps the brokers' logs there (the timeline of each case).

    The brokers run with Kafka's default replica.lag.time.max.ms (30 s), as a broker holding
    thousands of partitions is configured and as Kafka's published figures were measured:
    with the test clusters' 3 s, followers still busy making 10,000 new logs miss the lag
    and their leaders shrink thousands of ISRs, which the next case then pays for."""
    from confluent_kafka.admin import AdminClient

    from bench.replication import _Dirs
    from tests.cluster.conftest import Cluster
    from tests.harness import ZooKeeper

    with scratch_dir(name) as base:
        zookeeper = ZooKeeper(base / "zookeeper").start()
        cluster = None
        try:
            cluster = Cluster(zookeeper, _Dirs(base), replica_lag_time_max_ms="30000").start()
            admin = AdminClient(
                {"bootstrap.servers": cluster.bootstrap, "socket.timeout.ms": 300000}
            )
            yield base, cluster, admin
        finally:
            if cluster is not None:
                cluster.kill_all()
            zookeeper.stop()
            keep = os.environ.get("BENCH_SCALE_LOGS")
            if keep:
                Path(keep).mkdir(parents=True, exist_ok=True)
                for log_path in base.glob("*/broker.log"):
                    shutil.copy(log_path, Path(keep) / f"{log_path.parent.name}.log")


def run(quick: bool) -> list[Result]:
    wide = int(os.environ.get("BENCH_SCALE_PARTITIONS") or (300 if quick else 1000))
    results = []
    with three_brokers("scale") as (base, cluster, admin):
        narrow_s = _create(admin, "scale-narrow", NARROW)
        say(f"scale: {NARROW} partitions RF 3 serving after {narrow_s:.2f} s")
        narrow_metadata_s = _metadata_s(admin)
        wide_s = _create(admin, "scale-wide", wide)
        say(f"scale: {wide} partitions RF 3 serving after {wide_s:.2f} s")
        results.append(
            Result(
                "scale",
                f"create {wide} vs {NARROW} partitions, RF 3, until all serve",
                "s",
                f"{wide} partitions",
                wide_s,
                f"{NARROW} partitions",
                narrow_s,
                wide_s / narrow_s,
                aim_at_most=20,
            )
        )
        wide_metadata_s = _metadata_s(admin)
        say(
            f"scale: Metadata for all topics {wide_metadata_s * 1000:.1f} ms at "
            f"{wide + NARROW} partitions, {narrow_metadata_s * 1000:.1f} ms at {NARROW}"
        )
        results.append(
            Result(
                "scale",
                f"Metadata for all topics, {wide + NARROW} vs {NARROW} partitions",
                "ms",
                f"{wide + NARROW} partitions",
                wide_metadata_s * 1000,
                f"{NARROW} partitions",
                narrow_metadata_s * 1000,
                wide_metadata_s / narrow_metadata_s,
            )
        )
        records = 50_000 if quick else 200_000
        # At most 1,000 partitions at once (the case), whatever the topic's size.
        spread_over = min(wide, PRODUCE_SPREAD)
        spread = _produce_rate(cluster.bootstrap, "scale-wide", list(range(spread_over)), records)
        single = _produce_rate(cluster.bootstrap, "scale-wide", [0], records)
        say(
            f"scale: produce {records} records to {spread_over} partitions {spread:,.0f}/s, "
            f"to one partition {single:,.0f}/s"
        )
        results.append(
            Result(
                "scale",
                f"produce to {spread_over} partitions at once vs to one (acks=1)",
                "records/s",
                f"{spread_over} partitions",
                spread,
                "one partition",
                single,
                spread / single,
                aim_at_least=0.7,
            )
        )

        java_records = 200_000 if quick else 1_000_000
        java_spread = _java_produce_rate(
            base, cluster.bootstrap, "scale-wide", spread_over, java_records
        )
        if java_spread is not None:
            java_single = _java_produce_rate(base, cluster.bootstrap, "scale-wide", 1, java_records)
            assert java_single is not None
            say(
                f"scale: Java producer, {java_records} records to {spread_over} partitions "
                f"{java_spread:,.0f}/s, to one partition {java_single:,.0f}/s"
            )
            results.append(
                Result(
                    "scale",
                    f"produce to {spread_over} partitions at once vs to one, Kafka's Java "
                    "producer (acks=1)",
                    "records/s",
                    f"{spread_over} partitions",
                    java_spread,
                    "one partition",
                    java_single,
                    java_spread / java_single,
                    aim_at_least=0.7,
                )
            )

        results += controller_cases(cluster, admin, "scale", wide, wide + NARROW)
    return results
