"""Consumer groups: rebalance time by group size, offset-commit rate, compaction of commits.

Runs a real ZooKeeper and broker (tests/harness.py) on loopback. Cases:

* rebalance N: a group of N-1 confluent-kafka consumers is consuming (one partition each);
  one more member joins; the time until every member of the N has its new assignment and has
  consumed a record produced after the join. Printed absolute, with the ratio against the
  2-member case of the same run (there is no peer for this: the growth is the point).
* commits/s: synchronous standalone OffsetCommit round trips from one connection, against
  ApiVersions round trips on the same connection (the cheapest request: the peer).
* __consumer_offsets bytes after the cleaner compacted those commits vs before.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from bench import Result, say

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _broker(base: Path):
    from tests.harness import BrokerProcess, ZooKeeper

    zookeeper = ZooKeeper(base / "zookeeper").start()
    broker = BrokerProcess(
        base / "broker",
        f"{zookeeper.connect}/bench-groups",
        group_initial_rebalance_delay_ms="0",
        offsets_topic_segment_bytes=str(128 * 1024),
        log_cleaner_backoff_ms="200",
        log_cleaner_enable="false",  # "before" is measured uncleaned; a restart enables it
    ).start()
    return zookeeper, broker


class _Member:
    """A confluent-kafka consumer polling in a thread, noting assignment and arrivals."""

    def __init__(self, bootstrap: str, group: str, topic: str):
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "latest",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 300,
                "max.poll.interval.ms": 30000,
            }
        )
        self.consumer.subscribe([topic])
        self.partitions: set[int] = set()
        self.last_arrival = 0.0
        self.stopping = False
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.stopping:
            message = self.consumer.poll(0.05)
            self.partitions = {tp.partition for tp in self.consumer.assignment()}
            if message is not None and not message.error():
                self.last_arrival = time.monotonic()

    def close(self) -> None:
        self.stopping = True
        self.thread.join(10)
        self.consumer.close()


class SteadyProducer:
    """Keeps every partition receiving a record every few milliseconds."""

    def __init__(self, bootstrap: str, topic: str, partitions: int):
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        self.topic, self.partitions = topic, partitions
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping:
            for partition in range(self.partitions):
                self.producer.produce(self.topic, b"x", partition=partition)
            self.producer.poll(0)
            time.sleep(0.02)
        self.producer.flush(10)

    def close(self) -> None:
        self.stopping = True
        self.thread.join(10)


def wait_until(condition, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the group did not settle")
        time.sleep(0.01)


def _rebalance_seconds(bootstrap: str, size: int) -> float:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bench-rebalance-{size}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result
    admin.create_topics([NewTopic(topic, size, 1)])[topic].result(30)
    producer = SteadyProducer(bootstrap, topic, size)
    group = f"bench-{size}-{uuid.uuid4().hex[:6]}"
    members = [_Member(bootstrap, group, topic) for _ in range(size - 1)]
    try:

        def covered(group_members) -> bool:
            seen = sorted(p for m in group_members for p in m.partitions)
            return seen == list(range(size)) and all(m.partitions for m in group_members)

        wait_until(
            lambda: sorted(p for m in members for p in m.partitions) == list(range(size)), 120
        )
        time.sleep(0.5)
        joined_at = time.monotonic()
        members.append(_Member(bootstrap, group, topic))
        wait_until(
            lambda: covered(members) and all(m.last_arrival > joined_at for m in members), 120
        )
        return time.monotonic() - joined_at
    finally:
        producer.close()
        for member in members:
            member.close()


def _round_trips_per_second(client, body, seconds: float) -> float:
    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        client.call(body)
        count += 1
    return count / (time.perf_counter() - start)


def _commit_rate_and_compaction(broker, quick: bool) -> list[Result]:
    from tests.integration.wire import WireClient, nested, request

    bootstrap = broker.bootstrap
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = "bench-commits"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(30)
    group = "bench-commit-group"
    seconds = 2.0 if quick else 6.0
    with WireClient(bootstrap) as client:
        client.call(request(10, 1, key=group, key_type=0))
        deadline = time.monotonic() + 30
        while client.call(
            request(9, 7, group_id=group, topics=None, require_stable=False)
        ).error_code:
            if time.monotonic() > deadline:
                raise TimeoutError("the coordinator did not load")
            time.sleep(0.05)
        commit = request(
            8,
            8,
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=(
                nested(
                    8,
                    8,
                    "OffsetCommitRequestTopic",
                    name=topic,
                    partitions=tuple(
                        nested(
                            8,
                            8,
                            "OffsetCommitRequestPartition",
                            partition_index=p,
                            committed_offset=1000 + p,
                            committed_leader_epoch=-1,
                            committed_metadata="bench",
                        )
                        for p in range(4)
                    ),
                ),
            ),
        )
        commits = _round_trips_per_second(client, commit, seconds)
        baseline = _round_trips_per_second(client, request(18, 0), seconds)
    say(f"  {commits:,.0f} commits/s (4 partitions each) vs {baseline:,.0f} ApiVersions/s")
    results = [
        Result(
            "groups",
            "OffsetCommit round trips",
            "requests/s",
            "OffsetCommit",
            commits,
            "ApiVersions",
            baseline,
            commits / baseline,
            aim_at_least=0.3,
            note="sync, one connection, 4 partitions per commit",
        )
    ]

    from brokerd.groups.offsets_topic import partition_for

    log_dir = broker.dir / "logs" / f"__consumer_offsets-{partition_for(group, 50)}"

    def size() -> int:
        return sum(f.stat().st_size for f in log_dir.glob("*.log"))

    before = size()
    broker.terminate()
    broker.start(overrides={"log.cleaner.enable": "true"})
    # The cleaner runs every 200 ms now: wait until it has swept the rolled segments.
    deadline = time.monotonic() + 60
    after = before
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = size()
        if now < before and now == after:
            break
        after = now
    say(f"  __consumer_offsets partition: {before:,} bytes before compaction, {after:,} after")
    results.append(
        Result(
            "groups",
            "__consumer_offsets bytes after compaction",
            "bytes",
            "after",
            after,
            "before",
            before,
            after / before if before else 1.0,
            aim_at_most=0.5,
            note="the same 4 keys committed over and over",
        )
    )
    return results


def run(quick: bool) -> list[Result]:
    sizes = (2, 10) if quick else (2, 10, 50)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench-groups-") as base:
        zookeeper, broker = _broker(Path(base))
        try:
            timings = {}
            for size in sizes:
                timings[size] = _rebalance_seconds(broker.bootstrap, size)
                say(f"  {size} members: {timings[size] * 1000:.0f} ms from a join to all consuming")
            for size in sizes:
                results.append(
                    Result(
                        "groups",
                        f"rebalance, {size} members",
                        "ms",
                        f"{size} members",
                        timings[size] * 1000,
                        "2 members",
                        timings[2] * 1000,
                        timings[size] / timings[2],
                        note="join -> every member assigned and consuming",
                    )
                )
            results += _commit_rate_and_compaction(broker, quick)
        finally:
            broker.kill()
            zookeeper.stop()
    return results
