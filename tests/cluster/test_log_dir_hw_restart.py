"""A broker restarted after kill -9 with a partition its replication-offset-checkpoint lacks
(the topic was made after the last checkpoint) must not take its log end as the high
watermark: it holds records the ISR has not all got. Kafka starts such a replica at high
watermark 0 (Partition.createLog) and lets the leader's fetch responses raise it; brokerd took
the log end, so once that broker led, a consumer read records above the true high watermark,
records a later failover could lose.

The scene, on three brokers (A the controller, replicas [A, B, C], A leading): 10 records
with acks=all, then C paused (SIGSTOP; its long session keeps it alive and in the ISR) and
10 more with acks=1, which A and B hold and C does not (high watermark 10). B is killed and
restarted (its checkpoint never held the topic), catches up from A, then A is killed, so B
leads with C still in its ISR. The true high watermark is 10: a consumer must read exactly
10 records until C is back, then all 20."""

from __future__ import annotations

import os
import re
import signal
import struct
import time
import urllib.request

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from brokerd.log.checkpoints import OffsetCheckpointFile

from .conftest import Cluster

TOPIC = "hw-after-restart"


def _read(bootstrap: str, settle_s: float, expected: int) -> list[bytes]:
    """Every record of partition 0 a consumer gets: until `expected` arrived, then for
    `settle_s` more seconds (anything above the high watermark would arrive meanwhile)."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, request_timeout_ms=15000
    )
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    settle_until = None
    try:
        while time.monotonic() < (settle_until or deadline):
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(r.value for r in records)
            if settle_until is None and len(got) >= expected:
                settle_until = time.monotonic() + settle_s
    finally:
        consumer.close()
    return got


def test_a_restarted_replica_never_serves_above_the_true_high_watermark(
    zookeeper, tmp_path_factory
):
    cluster = Cluster(
        zookeeper,
        tmp_path_factory,
        size=3,
        min_insync_replicas="1",
        # C stays in the ISR while paused; no periodic checkpoint holds the new topic.
        replica_lag_time_max_ms="120000",
        log_flush_offset_checkpoint_interval_ms="3600000",
        replica_high_watermark_checkpoint_interval_ms="3600000",
    )
    a, b, c = (cluster.brokers[i] for i in (1, 2, 3))
    c.props["zookeeper.session.timeout.ms"] = "60000"
    a.start()  # first: the controller
    b.start()
    c.start()
    paused = False
    try:
        assert cluster.wait_for(lambda m: m["controller"] == 1, what="A controls")
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        admin.create_topics([NewTopic(TOPIC, replica_assignments={0: [1, 2, 3]})])
        admin.close()
        cluster.wait_full_isr(TOPIC)
        committed = KafkaProducer(bootstrap_servers=a.bootstrap, acks="all", retries=5)
        for i in range(10):
            committed.send(TOPIC, b"committed-%d" % i, partition=0).get(30)
        committed.close()
        os.killpg(c.process.pid, signal.SIGSTOP)
        paused = True
        leader_only = KafkaProducer(bootstrap_servers=a.bootstrap, acks=1, retries=5)
        for i in range(10):
            leader_only.send(TOPIC, b"uncommitted-%d" % i, partition=0).get(30)
        leader_only.close()
        # B fetched them (its log end reaches 20); the high watermark stays at 10.
        b_log = next((b.dir / "logs").glob(f"{TOPIC}-0"))
        cluster.wait_for(lambda m: _log_end(b_log) >= 20, what="B holds the 20 records")
        b.kill()
        held = OffsetCheckpointFile(b.dir / "logs" / "replication-offset-checkpoint").read()
        assert (TOPIC, 0) not in held  # the case: no checkpointed high watermark
        b.start()
        cluster.wait_for(
            lambda m: 2 in m["topics"][TOPIC][0]["isr"] and 2 in m["brokers"],
            what="B back in the ISR",
        )
        # A's fetch responses raise B's high watermark to A's (10). Before the fix it
        # was 20 already, the log end, and stayed there.
        deadline = time.monotonic() + 60
        while (_metric(b, "high_watermark") or 0) < 10:
            assert time.monotonic() < deadline, "B's high watermark was never raised by A"
            time.sleep(0.2)
        a.kill()
        led = cluster.wait_for(
            lambda m: m["topics"].get(TOPIC, {}).get(0, {}).get("leader") == 2,
            timeout=90,
            what="B leads",
        )
        # The scene holds only while C (paused) is still in the ISR: its session (the
        # ZooKeeper's 60 s cap) outlives all of this.
        assert 3 in led["topics"][TOPIC][0]["isr"], led["topics"][TOPIC]
        seen = _read(b.bootstrap, settle_s=3.0, expected=10)
        assert seen == [b"committed-%d" % i for i in range(10)], (
            f"read {len(seen)} records; the true high watermark is 10"
        )
        os.killpg(c.process.pid, signal.SIGCONT)
        paused = False
        every = [b"committed-%d" % i for i in range(10)]
        every += [b"uncommitted-%d" % i for i in range(10)]
        assert _read(b.bootstrap, settle_s=0.5, expected=20) == every
    finally:
        if paused:
            os.killpg(c.process.pid, signal.SIGCONT)
        cluster.kill_all()


def _log_end(directory) -> int:
    """The log end offset of a partition directory's segment files (batch headers only:
    base offset, length, and the last offset delta at byte 23)."""
    end = 0
    for path in sorted(directory.glob("*.log")):
        data = path.read_bytes()
        pos = 0
        while pos + 27 <= len(data):
            base, length = struct.unpack_from(">qi", data, pos)
            if length <= 0 or pos + 12 + length > len(data):
                break
            (delta,) = struct.unpack_from(">i", data, pos + 23)
            end = max(end, base + delta + 1)
            pos += 12 + length
    return end


def _metric(broker, name: str) -> float | None:
    """A partition gauge of the broker's /metrics (brokerd_partition_<name>) for TOPIC-0."""
    port = re.findall(r"admin API listening on http://127.0.0.1:(\d+)", broker.output)[-1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    prefix = f'brokerd_partition_{name}{{partition="0",topic="{TOPIC}"}} '
    found = [line[len(prefix) :] for line in text.splitlines() if line.startswith(prefix)]
    return float(found[0]) if found else None
