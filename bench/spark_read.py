"""Spark reads through the brokerd data source vs one confluent-kafka consumer.

Runs a real ZooKeeper and broker (tests/harness.py) on loopback, fills a 3-partition topic
with 100-byte records (confluent-kafka), then times reading all of it:

* peer: one confluent-kafka (librdkafka) consumer in this process, assigned every partition
  from offset 0, polling until it has every record;
* measured: `spark.read.format("brokerd")` on `local[1]` and `local[2]`, written to Spark's
  `noop` sink (every row is read and converted, nothing is collected), after one untimed
  warm-up read that starts the Python workers. Ranges are split into as many input
  partitions as cores.

Ratio = Spark records/s ÷ confluent-kafka records/s. Both decode every record; Spark adds
Arrow conversion and the JVM hop, and gains parallel Python workers with more cores.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from bench import Result, median, say

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

VALUE_BYTES = 100


def _fill(bootstrap: str, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20})
    value = b"v" * VALUE_BYTES
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value=value, key=b"%d" % i)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)


def _confluent_read(bootstrap: str, topic: str, count: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-spark-read",
            "enable.auto.commit": False,
            "fetch.max.bytes": 64 << 20,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    start = time.perf_counter()
    seen = 0
    while seen < count:
        for message in consumer.consume(10_000, 1.0):
            if message.error() is None:
                seen += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


def _spark_read(bootstrap: str, topic: str, count: int, cores: int, repetitions: int) -> float:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = str(ROOT)
    from pyspark.sql import SparkSession

    from spark_jobs.source import register

    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)

    def read() -> None:
        frame = (
            spark.read.format("brokerd")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("minPartitions", str(cores))
            .load()
        )
        frame.write.format("noop").mode("overwrite").save()

    try:
        read()  # warm-up: Python workers, imports, connections
        times = []
        for _ in range(repetitions):
            start = time.perf_counter()
            read()
            times.append(time.perf_counter() - start)
        return median(times)
    finally:
        spark.stop()


def run(quick: bool) -> list[Result]:
    from tests.harness import BrokerProcess, ZooKeeper

    count = 100_000 if quick else 600_000
    repetitions = 1 if quick else 3
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as scratch:
        base = Path(scratch)
        zookeeper = ZooKeeper(base / "zookeeper").start()
        broker = BrokerProcess(
            base / "broker", f"{zookeeper.connect}/bench-spark", num_partitions="3"
        ).start()
        try:
            topic = "bench-spark-read"
            say(f"spark_read: producing {count:,} records of {VALUE_BYTES} bytes")
            _fill(broker.bootstrap, topic, count)
            peer = median(
                [_confluent_read(broker.bootstrap, topic, count) for _ in range(repetitions)]
            )
            peer_rate = count / peer
            say(f"spark_read: confluent-kafka consumer {peer_rate:,.0f} records/s")
            for cores in (1, 2):
                elapsed = _spark_read(broker.bootstrap, topic, count, cores, repetitions)
                rate = count / elapsed
                say(f"spark_read: Spark local[{cores}] {rate:,.0f} records/s")
                results.append(
                    Result(
                        "spark_read",
                        f"{cores} core{'s' if cores > 1 else ''}, {count:,} records",
                        "records/s",
                        f"Spark local[{cores}]",
                        rate,
                        "confluent-kafka consumer",
                        peer_rate,
                        rate / peer_rate,
                        note="one process vs Spark's Python workers; JVM and Arrow included",
                    )
                )
        finally:
            broker.kill()
            zookeeper.stop()
    return results
