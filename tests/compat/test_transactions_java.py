"""Kafka's own Java client (kafka-clients 3.9.2) runs transactions against the broker
(tests/compat/java/TxnClient.java): a commit over two topics and partitions with the
group's offsets sent to the transaction, an abort, a zombie fenced by a second producer of
the same transactional id; its read_committed consumer reads exactly the committed records,
its read_uncommitted one every record and no marker, and the group's offset is committed."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import new_broker

from .java_client import JAR, SLF4J

SOURCE = Path(__file__).parent / "java" / "TxnClient.java"
TIMEOUT = 30


@pytest.fixture(scope="module")
def java_txn_broker(zookeeper, tmp_path_factory):
    process = new_broker(
        zookeeper,
        tmp_path_factory,
        num_partitions="2",
        offsets_topic_num_partitions="3",
        offsets_topic_replication_factor="1",
        transaction_state_log_num_partitions="3",
        transaction_state_log_replication_factor="1",
        transaction_state_log_min_isr="1",
    ).start()
    yield process
    process.kill()


def test_java_client_transactions(java_txn_broker, tmp_path, topic_name):
    if shutil.which("javac") is None or not JAR.exists() or not SLF4J.exists():
        pytest.skip(f"needs javac, {JAR} (make setup fetches it) and {SLF4J}")
    bootstrap = java_txn_broker.bootstrap
    topic_a, topic_b = f"{topic_name}-a", f"{topic_name}-b"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 2, 1) for t in (topic_a, topic_b)]).values():
        future.result(TIMEOUT)
    classes = tmp_path / "classes"
    classpath = f"{JAR}:{SLF4J}"
    subprocess.run(
        ["javac", "-nowarn", "-cp", classpath, "-d", str(classes), str(SOURCE)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    group = f"java-txn-{uuid.uuid4()}"
    done = subprocess.run(
        ["java", "-Xmx256m", "-cp", f"{classes}:{classpath}", "TxnClient"]
        + [bootstrap, topic_a, topic_b, f"java-{uuid.uuid4()}", group],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(("OK", "ERROR"))]
    assert done.returncode == 0, done.stderr[-3000:]
    assert lines[:3] == ["OK initialised", "OK committed", "OK aborted"]
    assert lines[3] == "ERROR ProducerFencedException", lines  # the zombie's commit
    assert lines[4] == "OK successor-committed"
    committed = lines[5].removeprefix("OK read_committed ").split(",")
    assert committed == sorted(
        [f"{topic_a}/0/c0", f"{topic_a}/1/c1", f"{topic_b}/0/c2", f"{topic_b}/1/c3"]
        + [f"{topic_b}/0/n0"]
    )
    everything = lines[6].removeprefix("OK read_uncommitted ").split(",")
    assert everything == sorted(
        committed + [f"{topic_a}/0/a0", f"{topic_b}/1/a1", f"{topic_a}/1/z0"]
    )
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [offset] = consumer.committed([TopicPartition(topic_a, 0)], timeout=TIMEOUT)
    finally:
        consumer.close()
    assert offset.offset == 7  # sendOffsetsToTransaction, visible once committed
