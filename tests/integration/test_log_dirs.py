"""Several log dirs on one broker, with kafka-python's admin client: new partitions spread
over the dirs, DescribeLogDirs per dir, AlterReplicaLogDirs moving a replica to the other
dir while a producer writes to it (nothing acknowledged is lost), and the per-partition
errors of AlterReplicaLogDirs."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import (
    KafkaStorageError,
    LogDirNotFoundError,
    NoError,
    ReplicaNotAvailableError,
)

from brokerd.log.checkpoints import OffsetCheckpointFile
from tests.conftest import new_broker


@pytest.fixture(scope="module")
def two_dir_broker(zookeeper, tmp_path_factory):
    base = tmp_path_factory.mktemp("logdirs")
    dirs = [base / "d0", base / "d1"]
    process = new_broker(
        zookeeper,
        tmp_path_factory,
        log_dirs=",".join(str(d) for d in dirs),
        log_segment_bytes="65536",
        log_segment_delete_delay_ms="0",
        num_partitions="1",
    ).start()
    yield process, [str(d) for d in dirs]
    process.kill()


def admin_for(process) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=process.bootstrap, request_timeout_ms=10000)


def dirs_of(admin, broker_id: int, topic: str) -> dict[int, list[tuple[str, bool, int]]]:
    """partition -> [(log dir, is_future, offset_lag)] from DescribeLogDirs."""
    found: dict[int, list[tuple[str, bool, int]]] = {}
    for answer in admin.describe_log_dirs(brokers=[broker_id]):
        for result in answer["log_dirs"]:
            assert result["error_code"] == 0, result
            for t in result["topics"]:
                if t["name"] != topic:
                    continue
                for p in t["partitions"]:
                    found.setdefault(p["partition_index"], []).append(
                        (result["log_dir"], p["is_future_key"], p["offset_lag"])
                    )
    return found


def wait_for(condition, timeout=30.0, step=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(step)


def test_partitions_spread_and_describe_per_dir(two_dir_broker, topic_name):
    process, dirs = two_dir_broker
    admin = admin_for(process)
    try:
        admin.create_topics([NewTopic(topic_name, 6, 1)])
        placed = wait_for(
            lambda: (
                (found := dirs_of(admin, process.broker_id, topic_name))
                and len(found) == 6
                and found
            )
        )
        per_dir = {d: sum(1 for entries in placed.values() if entries[0][0] == d) for d in dirs}
        assert per_dir == {dirs[0]: 3, dirs[1]: 3}
        assert all(len(e) == 1 and e[0][1] is False and e[0][2] == 0 for e in placed.values())
        # Every configured dir is answered, with its disk's sizes.
        (answer,) = admin.describe_log_dirs(brokers=[process.broker_id])
        results = {r["log_dir"]: r for r in answer["log_dirs"]}
        assert set(results) == set(dirs)
        assert all(r["total_bytes"] > 0 and r["usable_bytes"] > 0 for r in results.values())
    finally:
        admin.close()


def test_alter_replica_log_dirs_errors(two_dir_broker, topic_name, tmp_path):
    process, dirs = two_dir_broker
    admin = admin_for(process)
    try:
        admin.create_topics([NewTopic(topic_name, 1, 1)])
        wait_for(lambda: dirs_of(admin, process.broker_id, topic_name))
        me = process.broker_id
        answer = admin.alter_replica_log_dirs(
            {
                (topic_name, 0, me): str(tmp_path),  # not one of log.dirs
                (topic_name, 7, me): dirs[0],  # no such partition here
                ("no-such-topic-" + topic_name, 0, me): dirs[1],
            }
        )
        codes = {(tpr.topic, tpr.partition): error for tpr, error in answer.items()}
        assert codes == {
            (topic_name, 0): LogDirNotFoundError,
            (topic_name, 7): ReplicaNotAvailableError,
            ("no-such-topic-" + topic_name, 0): ReplicaNotAvailableError,
        }
        # Its own dir: nothing to move, NONE.
        current = dirs_of(admin, me, topic_name)[0][0][0]
        answer = admin.alter_replica_log_dirs({(topic_name, 0, me): current})
        assert list(answer.values()) == [NoError]
        assert dirs_of(admin, me, topic_name)[0] == [(current, False, 0)]
    finally:
        admin.close()


def test_move_a_replica_while_it_is_written(two_dir_broker, topic_name):
    process, dirs = two_dir_broker
    me = process.broker_id
    admin = admin_for(process)
    producer = KafkaProducer(bootstrap_servers=process.bootstrap, acks="all", linger_ms=2)
    acked: list[bytes] = []
    failed: list[BaseException] = []
    stop = threading.Event()

    def produce():
        i = 0
        while not stop.is_set():
            value = b"record-%08d" % i
            future = producer.send(topic_name, value=value, partition=0)
            future.add_callback(lambda _m, v=value: acked.append(v))
            future.add_errback(failed.append)
            i += 1
            if i % 200 == 0:
                producer.flush()

    try:
        admin.create_topics([NewTopic(topic_name, 1, 1)])
        source = wait_for(lambda: dirs_of(admin, me, topic_name))[0][0][0]
        target = next(d for d in dirs if d != source)
        writer = threading.Thread(target=produce)
        writer.start()
        try:
            # Enough data first for the copy to take several steps (several segments).
            wait_for(lambda: len(acked) >= 20000, timeout=60)
            answer = admin.alter_replica_log_dirs({(topic_name, 0, me): target})
            assert list(answer.values()) == [NoError]
            seen_future = []

            def moved():
                entries = dirs_of(admin, me, topic_name)[0]
                seen_future.extend(e for e in entries if e[1])
                return entries == [(target, False, 0)]

            wait_for(moved, timeout=60, step=0.02)
            moved_at = len(acked)
            wait_for(lambda: len(acked) >= moved_at + 2000, timeout=30)  # writes go on
        finally:
            stop.set()
            writer.join()
            producer.flush()
        assert not failed, failed[:3]
        # While moving, the future replica showed in the target dir (when the poll caught it).
        assert all(e[0] == target for e in seen_future)

        consumer = KafkaConsumer(
            bootstrap_servers=process.bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000
        )
        tp = TopicPartition(topic_name, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        values = []
        end = consumer.end_offsets([tp])[tp]
        while len(values) < end:
            batch = consumer.poll(timeout_ms=2000)
            if not batch:
                break
            values += [m.value for m in batch.get(tp, [])]
        consumer.close()
        assert len(values) == end
        assert sorted(acked) == sorted(set(acked))
        assert values == sorted(values)  # in the order produced, none twice
        assert set(acked) <= set(values)
        # The old directory is removed (file.delete.delay.ms is 0 here).
        wait_for(
            lambda: not [p for p in Path(source).iterdir() if p.name.startswith(topic_name)],
            timeout=20,
        )
    finally:
        stop.set()
        producer.close()
        admin.close()


def test_a_failed_dir_goes_offline_alone(make_broker, tmp_path):
    """A dir whose writes fail (here replaced by a file, which blocks writes even as root)
    goes offline at the next checkpoint: DescribeLogDirs answers KAFKA_STORAGE_ERROR for it,
    produce to its partitions KAFKA_STORAGE_ERROR, and the other dir goes on serving."""
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    process = make_broker(
        log_dirs=",".join(str(d) for d in dirs),
        log_flush_offset_checkpoint_interval_ms="300",
        num_partitions="1",
    ).start()
    topic = "failing-dir"
    admin = admin_for(process)
    producer = KafkaProducer(bootstrap_servers=process.bootstrap, acks=1, retries=0)
    try:
        admin.create_topics([NewTopic(topic, 4, 1)])
        placed = wait_for(
            lambda: (
                (found := dirs_of(admin, process.broker_id, topic)) and len(found) == 4 and found
            )
        )
        on = {str(d): [p for p, e in placed.items() if e[0][0] == str(d)] for d in dirs}
        assert len(on[str(dirs[0])]) == 2 and len(on[str(dirs[1])]) == 2
        for p in range(4):
            producer.send(topic, value=b"before-%d" % p, partition=p).get(timeout=10)

        dirs[0].rename(tmp_path / "d0.broken")
        dirs[0].write_text("not a directory any more")

        def results():
            (answer,) = admin.describe_log_dirs(brokers=[process.broker_id])
            return {r["log_dir"]: r for r in answer["log_dirs"]}

        wait_for(lambda: results()[str(dirs[0])]["error_code"] == 56, timeout=20)
        now = results()
        assert now[str(dirs[0])]["topics"] == []
        assert now[str(dirs[1])]["error_code"] == 0
        served = [
            p["partition_index"] for t in now[str(dirs[1])]["topics"] for p in t["partitions"]
        ]
        assert sorted(served) == sorted(on[str(dirs[1])])

        with pytest.raises(KafkaStorageError):
            producer.send(topic, value=b"lost", partition=on[str(dirs[0])][0]).get(timeout=10)
        for p in on[str(dirs[1])]:
            producer.send(topic, value=b"after-%d" % p, partition=p).get(timeout=10)
        consumer = KafkaConsumer(
            bootstrap_servers=process.bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000
        )
        tps = [TopicPartition(topic, p) for p in on[str(dirs[1])]]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        values = sorted(m.value for m in consumer)
        consumer.close()
        assert values == sorted(
            [b"before-%d" % p for p in on[str(dirs[1])]]
            + [b"after-%d" % p for p in on[str(dirs[1])]]
        )
        assert process.alive()
        assert f"log dir {dirs[0]} is offline" in process.output
    finally:
        producer.close()
        admin.close()


def test_a_broker_whose_every_dir_failed_halts(make_broker, tmp_path):
    """As Kafka's handleLogDirFailure: with no log dir left the broker exits (status 1)."""
    only = tmp_path / "only"
    process = make_broker(log_dirs=str(only), log_flush_offset_checkpoint_interval_ms="300").start()
    only.rename(tmp_path / "only.broken")
    only.write_text("not a directory any more")
    assert process.process is not None
    assert process.process.wait(30) == 1
    assert "every log dir has failed" in process.output


def test_a_move_cut_short_by_kill_is_resumed_after_the_restart(make_broker, tmp_path):
    """kill -9 while a replica is being copied to the other dir (its `-future` copy seen on
    disk beside the current replica): after the restart the move goes on and ends in the
    target dir, with every acknowledged record (before, the copy was dropped and the replica
    stayed where it was). If a move ends before the kill lands, it is asked again the other
    way with more data, at most three times."""
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    process = make_broker(
        log_dirs=",".join(str(d) for d in dirs),
        log_segment_bytes="262144",
        num_partitions="1",
    ).start()
    me = process.broker_id
    topic = "resumed-move"
    admin = admin_for(process)
    producer = KafkaProducer(bootstrap_servers=process.bootstrap, acks=1, linger_ms=5)
    acked = 0
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
        source = wait_for(lambda: dirs_of(admin, me, topic))[0][0][0]
        killed_mid_move = False
        for _ in range(3):
            for _i in range(8000):  # ~8 MiB more each round: a copy of many steps
                producer.send(topic, value=b"%07d" % acked + b"v" * 1000, partition=0)
                acked += 1
            producer.flush()
            target = next(str(d) for d in dirs if str(d) != source)
            answer = admin.alter_replica_log_dirs({(topic, 0, me): target})
            assert list(answer.values()) == [NoError]
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                copying = list(Path(target).glob(f"{topic}-0.*-future"))
                if copying and (Path(source) / f"{topic}-0").is_dir():
                    process.kill()
                    killed_mid_move = True
                    break
                if (Path(target) / f"{topic}-0").is_dir():
                    break  # the move finished first: again, the other way
                time.sleep(0.002)
            if killed_mid_move:
                break
            source = target
        assert killed_mid_move, "every move ended before the kill"
        producer.close()
        admin.close()

        process.start()
        admin = admin_for(process)
        wait_for(lambda: dirs_of(admin, me, topic).get(0) == [(target, False, 0)], timeout=60)
        assert not (Path(source) / f"{topic}-0").exists()
        assert "resuming the move of" in process.output
        consumer = KafkaConsumer(
            bootstrap_servers=process.bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000
        )
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        seen = [m.value[:7] for m in consumer]
        consumer.close()
        assert seen == [b"%07d" % i for i in range(acked)]
    finally:
        producer.close()
        admin.close()


def _set_broker_config(bootstrap: str, broker_id: int, name: str, value: str | None) -> None:
    """IncrementalAlterConfigs (confluent-kafka) on this broker's entity: SET, or DELETE."""
    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    resource = ConfigResource(
        "broker",
        str(broker_id),
        incremental_configs=[ConfigEntry(name, value, incremental_operation=op)],
    )
    client = AdminClient({"bootstrap.servers": bootstrap})
    for future in client.incremental_alter_configs([resource]).values():
        future.result(30)


def test_a_move_is_throttled_by_the_dynamic_io_bound(two_dir_broker, topic_name):
    """replica.alter.log.dirs.io.max.bytes.per.second, set dynamically on the broker,
    holds a running move (DescribeLogDirs keeps showing its future replica behind), and
    removing it lets the move finish."""
    process, dirs = two_dir_broker
    me = process.broker_id
    admin = admin_for(process)
    producer = KafkaProducer(bootstrap_servers=process.bootstrap, acks="all", linger_ms=5)
    name = "replica.alter.log.dirs.io.max.bytes.per.second"
    try:
        admin.create_topics([NewTopic(topic_name, 1, 1)])
        source = wait_for(lambda: dirs_of(admin, me, topic_name))[0][0][0]
        target = next(d for d in dirs if d != source)
        value = b"x" * 1000
        for i in range(3000):  # ~3 MiB in 64 KiB segments: one copy step is one segment
            producer.send(topic_name, value + b"%d" % i, partition=0)
        producer.flush()
        _set_broker_config(process.bootstrap, me, name, "1024")
        wait_for(lambda: _broker_config(process.bootstrap, me, name) == "1024")
        answer = admin.alter_replica_log_dirs({(topic_name, 0, me): target})
        assert list(answer.values()) == [NoError]
        moving = wait_for(
            lambda: [e for e in dirs_of(admin, me, topic_name)[0] if e[1] and e[0] == target]
        )
        assert moving[0][2] > 0
        time.sleep(2)  # at 1 KiB/s the copy of ~3 MiB cannot have finished
        entries = dirs_of(admin, me, topic_name)[0]
        assert (source, False, 0) in entries and any(e[1] and e[2] > 0 for e in entries)
        _set_broker_config(process.bootstrap, me, name, None)
        wait_for(lambda: dirs_of(admin, me, topic_name)[0] == [(target, False, 0)], timeout=60)
        consumer = KafkaConsumer(bootstrap_servers=process.bootstrap, consumer_timeout_ms=5000)
        consumer.assign([TopicPartition(topic_name, 0)])
        consumer.seek_to_beginning()
        assert sum(1 for _ in consumer) == 3000
        consumer.close()
    finally:
        producer.close()
        _set_broker_config(process.bootstrap, me, name, None)
        admin.close()


def _broker_config(bootstrap: str, broker_id: int, name: str) -> str | None:
    """A broker config's value, from DescribeConfigs (confluent-kafka)."""
    client = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = client.describe_configs([ConfigResource("broker", str(broker_id))]).values()
    entry = future.result(30)[name]
    return entry.value


def test_high_watermarks_are_checkpointed_on_their_own_interval(make_broker, tmp_path):
    """replica.high.watermark.checkpoint.interval.ms (Kafka's 5 s) writes each dir's
    replication-offset-checkpoint, not log.flush.offset.checkpoint.interval.ms (an hour
    here): a partition the checkpoint lacks after a crash restarts at high watermark 0."""
    dirs = [tmp_path / "d0", tmp_path / "d1"]
    process = make_broker(
        log_dirs=",".join(str(d) for d in dirs),
        log_flush_offset_checkpoint_interval_ms="3600000",
        replica_high_watermark_checkpoint_interval_ms="200",
    ).start()
    topic = "hw-checkpoints"
    producer = KafkaProducer(bootstrap_servers=process.bootstrap, acks="all")
    try:
        admin = admin_for(process)
        admin.create_topics([NewTopic(topic, 2, 1)])
        admin.close()
        for i in range(2):
            for _ in range(5 * (i + 1)):
                producer.send(topic, b"v", partition=i)
        producer.flush()

        def checkpointed():
            found = {}
            for d in dirs:
                found.update(OffsetCheckpointFile(d / "replication-offset-checkpoint").read())
            return found

        wait_for(lambda: checkpointed().get((topic, 0)) == 5 and checkpointed().get((topic, 1)))
        assert checkpointed()[(topic, 1)] == 10
        recovery = {}
        for d in dirs:
            recovery.update(OffsetCheckpointFile(d / "recovery-point-offset-checkpoint").read())
        assert (topic, 0) not in recovery  # its own (hourly) interval has not come
    finally:
        producer.close()
        process.kill()
