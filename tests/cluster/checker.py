"""A Jepsen-style queue checker for the fault tests.

A producer thread (confluent-kafka, idempotent, acks=all) sends numbered values and records
the offset of every acknowledged one. Afterwards the log is read back from the leader and
from each replica's files:
- every acknowledged value is consumed exactly once, at the offset it was acknowledged at;
- no value is consumed twice (the idempotent producer's retries are not duplicated);
- the replicas' logs are identical (offsets, leader epochs, CRCs) below the smallest HW.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from brokerd.records import iter_entries


def cluster_metadata(cluster, topic: str | None = None) -> dict:
    """{brokers: set, controller: id, topics: {t: {p: {leader, isr, replicas}}}} from a live
    broker (the controller's answer when it is alive: its view is the freshest)."""
    alive = cluster.alive()
    if not alive:
        raise RuntimeError("no broker alive")
    last_error = None
    for broker in alive:
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            found = admin.list_topics(topic=topic, timeout=5)
        except Exception as exc:  # noqa: BLE001 - try the next broker
            last_error = exc
            continue
        meta = cluster_metadata_from(found)
        controller = cluster.brokers.get(meta["controller"])
        if controller is not None and controller is not broker and controller.alive():
            try:
                admin = AdminClient({"bootstrap.servers": controller.bootstrap})
                return cluster_metadata_from(admin.list_topics(topic=topic, timeout=5))
            except Exception:  # noqa: BLE001 - the first answer will do
                pass
        return meta
    raise RuntimeError(f"no broker answered Metadata: {last_error}")


def cluster_metadata_from(found) -> dict:
    return {
        "brokers": set(found.brokers),
        "controller": found.controller_id,
        "topics": {
            name: {
                p.id: {"leader": p.leader, "isr": list(p.isrs), "replicas": list(p.replicas)}
                for p in t.partitions.values()
            }
            for name, t in found.topics.items()
            if t.error is None
        },
    }


def create_topic(cluster, topic: str, partitions: int = 1, replication: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics(
        [
            NewTopic(
                topic,
                num_partitions=partitions,
                replication_factor=replication,
                config={"min.insync.replicas": "2"},
            )
        ]
    )
    futures[topic].result(30)
    cluster.wait_full_isr(topic, partitions)


class Workload:
    """Numbered values produced continuously; acked offsets and failures recorded."""

    def __init__(self, bootstrap: str, topic: str, rate_per_s: float = 200, **producer_config):
        self.topic = topic
        self.interval = 1 / rate_per_s
        self.acked: dict[str, tuple[int, int]] = {}  # value -> (partition, offset)
        self.failed: dict[str, str] = {}
        self.sent = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 2,
                "message.timeout.ms": 60000,
                "topic.metadata.refresh.interval.ms": 1000,
                "retry.backoff.ms": 100,
                # e.g. request_timeout_ms=5000 for "request.timeout.ms"
                **{key.replace("_", "."): value for key, value in producer_config.items()},
            }
        )
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Workload:
        self._thread.start()
        return self

    def _delivered(self, err, msg) -> None:
        value = msg.value().decode()
        with self._lock:
            if err is None:
                self.acked[value] = (msg.partition(), msg.offset())
            else:
                self.failed[value] = str(err)

    def _run(self) -> None:
        while not self._stop.is_set():
            value = f"v-{self.sent:08d}"
            try:
                self.producer.produce(self.topic, value.encode(), on_delivery=self._delivered)
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(0)
            time.sleep(self.interval)
        self.producer.flush(90)

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def wait_for_acks(self, more: int, timeout: float = 60) -> None:
        target = self.acked_count() + more
        deadline = time.monotonic() + timeout
        while self.acked_count() < target:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"acks stuck at {self.acked_count()} (wanted {target}); "
                    f"failed: {list(self.failed.items())[-3:]}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(120)


def consume_all(bootstrap: str, topic: str, partitions: int = 1) -> list[tuple[int, int, str]]:
    """(partition, offset, value) of everything below each partition's HW."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"checker-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    out = []
    try:
        for partition in range(partitions):
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=20)
            consumer.assign([TopicPartition(topic, partition, 0)])
            position = 0
            deadline = time.monotonic() + 60
            while position < high:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"consumed up to {position} of {high}")
                msg = consumer.poll(1)
                if msg is None or msg.error():
                    continue
                out.append((partition, msg.offset(), msg.value().decode()))
                position = msg.offset() + 1
    finally:
        consumer.close()
    return out


def check_queue(workload: Workload, consumed: list[tuple[int, int, str]]) -> None:
    seen: dict[str, list[tuple[int, int]]] = {}
    for partition, offset, value in consumed:
        seen.setdefault(value, []).append((partition, offset))
    duplicates = {v: where for v, where in seen.items() if len(where) > 1}
    assert not duplicates, f"values consumed more than once: {list(duplicates.items())[:5]}"
    lost = [v for v in workload.acked if v not in seen]
    assert not lost, f"{len(lost)} acknowledged values lost, e.g. {lost[:5]}"
    moved = {v: (at, seen[v][0]) for v, at in workload.acked.items() if seen[v][0] != at}
    assert not moved, f"acknowledged values at other offsets: {list(moved.items())[:5]}"


# Replica files -------------------------------------------------------------------------
def replica_batches(log_dir: Path, topic: str, partition: int) -> list[tuple[int, int, int, int]]:
    """(base offset, last offset, leader epoch, CRC) of every batch in a replica's files."""
    directory = Path(log_dir) / f"{topic}-{partition}"
    out = []
    for segment in sorted(directory.glob("*.log")):
        data = segment.read_bytes()
        for entry in iter_entries(data):
            out.append(
                (entry.base_offset, entry.last_offset, entry.partition_leader_epoch, entry.crc)
            )
    return out


def checkpointed_high_watermark(log_dir: Path, topic: str, partition: int) -> int:
    lines = (Path(log_dir) / "replication-offset-checkpoint").read_text().splitlines()
    for line in lines[2:]:
        name, index, offset = line.rsplit(" ", 2)
        if name == topic and int(index) == partition:
            return int(offset)
    raise KeyError(f"{topic}-{partition} not in the HW checkpoint of {log_dir}")


def check_replicas_identical(
    cluster, topic: str, partition: int = 0, replicas: list[int] | None = None
) -> int:
    """Stop the brokers cleanly, then compare the replicas' batches below the lowest HW
    (followers learn the leader's HW a fetch later, so theirs may trail). Returns the
    highest HW, the leader's, so a test can see it covered the workload. `replicas`: the
    brokers holding the partition (default: all)."""
    cluster.stop_all()
    holders = replicas if replicas is not None else list(cluster.brokers)
    dirs = [cluster.brokers[b].dir / "logs" for b in holders]
    highs = [checkpointed_high_watermark(d, topic, partition) for d in dirs]
    high = min(highs)
    views = []
    for d in dirs:
        views.append([b for b in replica_batches(d, topic, partition) if b[1] < high])
    for d, view in zip(dirs[1:], views[1:], strict=True):
        assert view == views[0], f"replica {d} differs from {dirs[0]} below HW {high}"
    assert views[0] and views[0][-1][1] == high - 1, "batches do not reach the HW"
    return max(highs)
