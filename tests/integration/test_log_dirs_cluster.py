"""A failed log dir on one broker of two, while a producer writes: the partitions on that
dir go offline on that broker alone, the controller (told through
/log_dir_event_notification, then KAFKA_STORAGE_ERROR answers to LeaderAndIsr) moves their
leadership to the other replica and drops the failed replica from their ISRs, and nothing
acknowledged is lost. The broker's other dir keeps its replicas in the ISRs."""

from __future__ import annotations

import threading
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from tests.cluster.conftest import Cluster


def test_leadership_moves_off_a_failed_dir(zookeeper, tmp_path_factory):
    cluster = Cluster(
        zookeeper,
        tmp_path_factory,
        size=2,
        default_replication_factor="2",
        min_insync_replicas="1",
        offsets_topic_replication_factor="2",
        log_flush_offset_checkpoint_interval_ms="300",
    )
    for broker in cluster.brokers.values():
        broker.props["log.dirs"] = f"{broker.dir / 'd0'},{broker.dir / 'd1'}"
    cluster.start()
    topic = "dir-failover"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap, acks="all", linger_ms=5, retries=1000
    )
    acked: list[bytes] = []
    failed: list[BaseException] = []
    stop = threading.Event()

    def produce():
        i = 0
        while not stop.is_set():
            value = b"%d-%08d" % (i % 4, i)
            future = producer.send(topic, value=value, partition=i % 4)
            future.add_callback(lambda _m, v=value: acked.append(v))
            future.add_errback(failed.append)
            i += 1
            if i % 100 == 0:
                producer.flush()
                time.sleep(0.01)

    try:
        admin.create_topics([NewTopic(topic, 4, 2)])
        cluster.wait_full_isr(topic, 4)
        victim = cluster.brokers[2]
        led = {
            p
            for p, state in cluster.metadata(topic)["topics"][topic].items()
            if state["leader"] == 2
        }
        assert led
        placed = {}
        for answer in admin.describe_log_dirs(brokers=[2]):
            for result in answer["log_dirs"]:
                for t in result["topics"]:
                    if t["name"] == topic:
                        for p in t["partitions"]:
                            placed[p["partition_index"]] = result["log_dir"]
        failing = placed[min(led)]
        moved = {p for p in led if placed[p] == failing}
        on_failing = {p for p, d in placed.items() if d == failing}
        healthy = set(placed) - on_failing

        writer = threading.Thread(target=produce)
        writer.start()
        try:
            time.sleep(1)
            broken = victim.dir / "broken"
            (victim.dir / failing.rsplit("/", 1)[1]).rename(broken)
            (victim.dir / failing.rsplit("/", 1)[1]).write_text("not a directory any more")

            def settled(meta) -> bool:
                parts = meta["topics"][topic]
                return all(
                    parts[p]["leader"] == 1 and parts[p]["isr"] == [1] for p in moved
                ) and all(parts[p]["isr"] == [1] for p in on_failing)

            meta = cluster.wait_for(settled, timeout=30, what="leadership off the failed dir")
            for p in healthy:
                assert sorted(meta["topics"][topic][p]["isr"]) == [1, 2]
            count = len(acked)
            deadline = time.monotonic() + 30
            while len(acked) < count + 500:
                assert time.monotonic() < deadline, "writes stopped after the failover"
                time.sleep(0.05)
        finally:
            stop.set()
            writer.join()
            producer.flush()
        assert not failed, failed[:3]
        assert victim.alive()

        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap,
            enable_auto_commit=False,
            consumer_timeout_ms=5000,
        )
        tps = [TopicPartition(topic, p) for p in range(4)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        values: list[bytes] = []
        while sum(1 for _ in values) < sum(ends.values()):
            batch = consumer.poll(timeout_ms=3000)
            if not batch:
                break
            for records in batch.values():
                values += [r.value for r in records]
        consumer.close()
        assert set(acked) <= set(values)
    finally:
        stop.set()
        producer.close()
        admin.close()
        cluster.kill_all()
