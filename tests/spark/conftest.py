"""Real Spark (local[2], two attempts per task) against real brokers (tests/conftest.py)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

from brokerd.client import NewTopic, SyncClient

ROOT = Path(__file__).resolve().parents[2]


def spark_environment() -> dict[str, str]:
    """What Spark's Python workers need: this interpreter, and the project importable."""
    path = os.environ.get("PYTHONPATH", "")
    return {
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else str(ROOT),
    }


@pytest.fixture(scope="session")
def spark():
    os.environ.update(spark_environment())
    from pyspark.sql import SparkSession

    from spark_jobs.source import register

    session = (
        SparkSession.builder.master("local[2,2]")  # 2 cores; a failed task runs once more
        .appName("brokerd-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    logging.getLogger("py4j").setLevel(logging.WARNING)  # quiet at interpreter exit
    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def client(broker):
    with SyncClient(broker.bootstrap) as sync:
        yield sync


@pytest.fixture
def make_topic(client, topic_name):
    """Create a topic (default 3 partitions) named after the test; returns its name."""

    def make(partitions: int = 3, suffix: str = "", **configs: str) -> str:
        name = topic_name + suffix
        client.admin.create_topics([NewTopic(name, partitions, 1, configs)])
        return name

    return make


def produce_confluent(bootstrap: str, topic: str, records, partition: int | None = None) -> None:
    """Produce (key, value[, headers]) tuples quickly with confluent-kafka (librdkafka)."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True}
    )
    for record in records:
        key, value, *rest = record
        kwargs = {"headers": rest[0]} if rest else {}
        if partition is not None:
            kwargs["partition"] = partition
        while True:
            try:
                producer.produce(topic, value=value, key=key, **kwargs)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(60) == 0
