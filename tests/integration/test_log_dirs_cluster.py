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
from tests.integration.wire import WireClient, nested, request


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


def _offline_replicas(bootstrap: str, topic: str) -> tuple[dict, dict]:
    """{partition: offline replicas} from Metadata v12 and from DescribeTopicPartitions."""
    with WireClient(bootstrap) as client:
        meta = client.call(
            request(
                3,
                12,
                topics=(nested(3, 12, "MetadataRequestTopic", name=topic, topic_id=None),),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
        described = client.call(
            request(
                75,
                0,
                topics=(nested(75, 0, "TopicRequest", name=topic),),
                response_partition_limit=2000,
                cursor=None,
            )
        )
    by_metadata = {
        p.partition_index: sorted(p.offline_replicas) for t in meta.topics for p in t.partitions
    }
    by_describe = {
        p.partition_index: sorted(p.offline_replicas)
        for t in described.topics
        for p in t.partitions
    }
    return by_metadata, by_describe


def test_a_followers_failed_write_takes_its_dir_offline_at_once(zookeeper, tmp_path_factory):
    """Broker 2 follows 4 partitions led by broker 1, two on each of its dirs. One dir is
    replaced by a file; the follower's next segment roll there fails. The dir goes offline
    then (not at the next offset checkpoint, 10 minutes away here): DescribeLogDirs answers
    KAFKA_STORAGE_ERROR for it, and both brokers' Metadata and DescribeTopicPartitions name
    replica 2 in offline_replicas for its partitions alone, while broker 2 stays live. Once
    the dir is repaired and broker 2 restarted, no broker names them any more."""
    cluster = Cluster(
        zookeeper,
        tmp_path_factory,
        size=2,
        default_replication_factor="2",
        min_insync_replicas="1",
        offsets_topic_replication_factor="2",
        log_flush_offset_checkpoint_interval_ms="600000",
    )
    victim = cluster.brokers[2]
    victim.props["log.dirs"] = f"{victim.dir / 'd0'},{victim.dir / 'd1'}"
    cluster.start()
    topic = "follower-dir-failure"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    victim_admin = KafkaAdminClient(bootstrap_servers=victim.bootstrap)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks=1, linger_ms=5)
    try:
        admin.create_topics(
            [
                NewTopic(
                    topic,
                    replica_assignments={p: [1, 2] for p in range(4)},
                    topic_configs={"segment.bytes": "2048"},
                )
            ]
        )
        cluster.wait_full_isr(topic, 4)
        for p in range(4):
            producer.send(topic, value=b"before", partition=p)
        producer.flush()

        def dirs_of_victim() -> dict[str, dict]:
            (answer,) = victim_admin.describe_log_dirs(brokers=[2])
            return {r["log_dir"]: r for r in answer["log_dirs"]}

        placed = {
            p["partition_index"]: log_dir
            for log_dir, result in dirs_of_victim().items()
            for t in result["topics"]
            if t["name"] == topic
            for p in t["partitions"]
        }
        failing = str(victim.dir / "d0")
        on_failing = {p for p, d in placed.items() if d == failing}
        assert len(on_failing) == 2 and len(placed) == 4, placed
        assert _offline_replicas(victim.bootstrap, topic)[0] == {p: [] for p in range(4)}

        (victim.dir / "d0").rename(victim.dir / "d0.broken")
        (victim.dir / "d0").write_text("not a directory any more")
        value = b"x" * 200
        deadline = time.monotonic() + 60
        while dirs_of_victim()[failing]["error_code"] != 56:
            assert time.monotonic() < deadline, "the follower's dir did not go offline"
            for p in range(4):
                producer.send(topic, value=value, partition=p)
            producer.flush()
            time.sleep(0.1)
        assert dirs_of_victim()[str(victim.dir / "d1")]["error_code"] == 0
        assert "a follower's write failed" in victim.output

        expected = {p: [2] if p in on_failing else [] for p in range(4)}
        for broker in cluster.brokers.values():
            deadline = time.monotonic() + 30
            while (found := _offline_replicas(broker.bootstrap, topic)) != (expected, expected):
                assert time.monotonic() < deadline, (broker.broker_id, found, expected)
                time.sleep(0.2)
        assert victim.alive()

        # Repaired and restarted: the controller forgets the offline replicas and tells
        # every broker (broker 1 would otherwise keep naming replica 2 offline).
        victim.kill()
        (victim.dir / "d0").unlink()
        (victim.dir / "d0.broken").rename(victim.dir / "d0")
        victim.start()
        cleared = {p: [] for p in range(4)}
        for broker in cluster.brokers.values():
            deadline = time.monotonic() + 60
            while (found := _offline_replicas(broker.bootstrap, topic)) != (cleared, cleared):
                assert time.monotonic() < deadline, (broker.broker_id, found)
                time.sleep(0.2)
    finally:
        producer.close()
        victim_admin.close()
        admin.close()
        cluster.kill_all()
