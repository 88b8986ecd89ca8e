"""Rebalance of the consumer group protocol (KIP-848) against the classic protocol, one run.

Runs a real ZooKeeper and broker (tests/harness.py) on loopback. For N members (10 with
--quick, 50 otherwise): a group of N-1 confluent-kafka consumers consumes a topic of N
partitions; one more member joins. Measured per protocol:

* the time from the join until every member of the N owns its share and has consumed a
  record produced after the join;
* how many of the N-1 members already there were disturbed (their assignment changed at all
  during the rebalance: the classic eager protocol revokes everything from everyone, KIP-848
  moves only what the new member takes).

Both groups get the same heartbeat interval (300 ms: `heartbeat.interval.ms` for the classic
members, `group.consumer.heartbeat.interval.ms` for the new ones). The classic members use
`range` (eager, librdkafka's default); the new ones the broker's default assignor (uniform).
The peer is the classic protocol in the same run; KIP-848's aim is to be no slower and to
leave the members that keep their partitions alone. Each protocol is measured three times
(once with --quick) and the median run reported.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from bench import Result, say
from bench.groups import SteadyProducer, wait_until

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HEARTBEAT_MS = 300
REPEATS = 3  # the median of three runs per protocol (a loaded machine varies)


class _Member:
    """A confluent-kafka consumer polling in a thread, noting its assignments and arrivals."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str):
        from confluent_kafka import Consumer

        config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "latest",
            "enable.auto.commit": False,
            "max.poll.interval.ms": 60000,
        }
        if protocol == "consumer":
            config["group.protocol"] = "consumer"
        else:
            config.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": HEARTBEAT_MS})
        self.consumer = Consumer(config)
        self.consumer.subscribe([topic])
        self.partitions: frozenset[int] = frozenset()
        self.changes: list[tuple[float, frozenset[int]]] = []
        self.last_arrival = 0.0
        self.stopping = False
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.stopping:
            message = self.consumer.poll(0.05)
            current = frozenset(tp.partition for tp in self.consumer.assignment())
            if current != self.partitions:
                self.partitions = current
                self.changes.append((time.monotonic(), current))
            if message is not None and not message.error():
                self.last_arrival = time.monotonic()

    def close(self) -> None:
        self.stopping = True
        self.thread.join(10)
        self.consumer.close()


def _join_one(bootstrap: str, size: int, protocol: str) -> tuple[float, int]:
    """(seconds from a join to all N consuming, members of the N-1 disturbed)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bench-848-{protocol}-{size}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, size, 1)])[topic].result(30)
    producer = SteadyProducer(bootstrap, topic, size)
    group = f"bench-848-{protocol}-{uuid.uuid4().hex[:6]}"
    members = [_Member(bootstrap, group, topic, protocol) for _ in range(size - 1)]
    try:

        def covered(group_members) -> bool:
            seen = sorted(p for m in group_members for p in m.partitions)
            return seen == list(range(size)) and all(m.partitions for m in group_members)

        wait_until(lambda: covered(members), 180)
        # Settled: every member consuming (KIP-848 forms a group by many small steps, so
        # the last moved partitions may still be starting to fetch when all are assigned).
        settled_from = time.monotonic()
        wait_until(lambda: all(m.last_arrival > settled_from + 0.5 for m in members), 180)
        joined_at = time.monotonic()
        members.append(_Member(bootstrap, group, topic, protocol))
        wait_until(
            lambda: covered(members) and all(m.last_arrival > joined_at for m in members), 180
        )
        elapsed = time.monotonic() - joined_at
        disturbed = sum(1 for m in members[:-1] if any(t > joined_at for t, _ in m.changes))
        return elapsed, disturbed
    finally:
        producer.close()
        for member in members:
            member.close()


def run(quick: bool) -> list[Result]:
    from tests.harness import BrokerProcess, ZooKeeper

    size = 10 if quick else 50
    with tempfile.TemporaryDirectory(prefix="bench-848-") as base:
        zookeeper = ZooKeeper(Path(base) / "zookeeper").start()
        broker = BrokerProcess(
            Path(base) / "broker",
            f"{zookeeper.connect}/bench-848",
            group_initial_rebalance_delay_ms="0",
            group_consumer_heartbeat_interval_ms=str(HEARTBEAT_MS),
        ).start()
        try:
            measured = {}
            for protocol, label in (("classic", "classic"), ("consumer", "KIP-848")):
                runs = []
                for _ in range(1 if quick else REPEATS):
                    seconds, disturbed = _join_one(broker.bootstrap, size, protocol)
                    say(
                        f"  {label}, {size} members: {seconds * 1000:.0f} ms from a join to "
                        f"all consuming; {disturbed} of {size - 1} members disturbed"
                    )
                    runs.append((seconds, disturbed))
                measured[protocol] = sorted(runs)[len(runs) // 2]  # the median run
            classic, classic_disturbed = measured["classic"]
            new, new_disturbed = measured["consumer"]
        finally:
            broker.kill()
            zookeeper.stop()
    return [
        Result(
            "groups_kip848",
            f"one member joins {size - 1}: time to all consuming",
            "ms",
            "KIP-848",
            new * 1000,
            "classic (range, eager)",
            classic * 1000,
            new / classic,
            aim_at_most=1.0,
            note=f"heartbeat interval {HEARTBEAT_MS} ms for both",
        ),
        Result(
            "groups_kip848",
            f"one member joins {size - 1}: members disturbed",
            "members",
            "KIP-848",
            new_disturbed,
            "classic (range, eager)",
            classic_disturbed,
            new_disturbed / classic_disturbed if classic_disturbed else 1.0,
            aim_at_most=0.2,
            note="existing members whose assignment changed at all",
        ),
    ]
