"""Real group consumers (kafka-python, confluent-kafka, aiokafka) against brokerd's coordinator.

Members run in their own processes (tests/compat/group_member.py) so they can be killed; the
broker is the shared `group_broker` (group.initial.rebalance.delay.ms=0) unless a test
restarts it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from brokerd.protocol.errors import ErrorCode as E
from tests.compat.group_support import Member, balanced, group_story, wait_for
from tests.harness import ROOT
from tests.integration.test_groups_protocol import heartbeat, join
from tests.integration.wire import WireClient

SESSION_MS = 6000


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)


def add_partitions(bootstrap: str, name: str, total: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(name, total)])[name].result(15)


def produce(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, str(i).encode(), partition=i % partitions)
    assert producer.flush(15) == 0


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 15)
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()


def group_id() -> str:
    return f"group-{uuid.uuid4().hex[:8]}"


LIFECYCLES = [
    ("kafka-python", "range"),
    ("confluent", "range"),
    ("confluent", "cooperative-sticky"),
    ("aiokafka", "roundrobin"),
]


@pytest.mark.parametrize(("client", "assignor"), LIFECYCLES)
def test_members_join_leave_crash_idle_and_new_partitions(
    group_broker, topic_name, client, assignor
):
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, topic_name, 3)
    group = group_id()

    def member(name: str) -> Member:
        return Member(client, bootstrap, group, topic_name, assignor=assignor, client_id=name)

    a, b = member("a"), member("b")
    members = [a, b]
    try:
        wait_for(
            lambda: balanced([a, b], 3) and a.partitions and b.partitions,
            40,
            "a and b to share 3 partitions",
        )
        # More members than partitions: exactly one sits idle.
        c, d = member("c"), member("d")
        members += [c, d]
        wait_for(lambda: balanced(members, 3), 40, "4 members over 3 partitions")
        wait_for(
            lambda: sorted(len(m.partitions) for m in members) == [0, 1, 1, 1],
            20,
            "one idle member",
        )
        # A clean leave hands its partitions over at once.
        d.terminate()
        members.remove(d)
        wait_for(
            lambda: balanced(members, 3) and all(m.partitions for m in members),
            40,
            "3 members, 1 each",
        )
        # A crash: the member is evicted after its session timeout and its partition moves.
        killed_partitions = set(c.partitions)
        c.kill()
        killed_at = time.monotonic()
        members.remove(c)
        wait_for(
            lambda: balanced(members, 3),
            SESSION_MS / 1000 + 30,
            "the crashed member's partition to move",
        )
        assert time.monotonic() - killed_at >= SESSION_MS / 1000 * 0.8  # evicted by the timeout
        assert killed_partitions <= a.partitions | b.partitions
        # New partitions are noticed (metadata refresh) and trigger a rebalance.
        add_partitions(bootstrap, topic_name, 5)
        try:
            wait_for(lambda: balanced(members, 5), 40, "a rebalance over 5 partitions")
        except AssertionError:
            story = [line for line in group_broker.output.splitlines() if group in line]
            raise AssertionError(
                f"assignments {[m.assignment for m in members]}; broker:\n" + "\n".join(story)
            ) from None
    finally:
        for m in members:
            m.terminate()


ASSIGNORS = [
    ("kafka-python", "roundrobin"),
    ("kafka-python", "sticky"),
    ("kafka-python", "cooperative-sticky"),
    ("confluent", "roundrobin"),
    ("aiokafka", "range"),
    ("aiokafka", "sticky"),
]


def test_every_assignor_splits_and_hands_over(group_broker, topic_name):
    """Each client-side assignor in its own group, all at once: split 3 partitions between
    two members, then one leaves and the other takes everything."""
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, topic_name, 3)
    pairs = []
    try:
        for client, assignor in ASSIGNORS:
            group = group_id()
            pairs.append(
                [Member(client, bootstrap, group, topic_name, assignor=assignor) for _ in range(2)]
            )
        for (client, assignor), pair in zip(ASSIGNORS, pairs, strict=True):
            wait_for(
                lambda pair=pair: balanced(pair, 3) and all(m.partitions for m in pair),
                60,
                f"{client}/{assignor} to split",
                lambda pair=pair: group_story(pair, group_broker.output),
            )
        for pair in pairs:
            pair[0].terminate()
        for (client, assignor), pair in zip(ASSIGNORS, pairs, strict=True):
            wait_for(
                lambda pair=pair: pair[1].partitions == {0, 1, 2},
                60,
                f"{client}/{assignor} hand-over",
                lambda pair=pair: group_story(pair, group_broker.output),
            )
    finally:
        for pair in pairs:
            for m in pair:
                m.terminate()


def test_member_that_joins_but_never_syncs_is_removed(group_broker, topic_name):
    """A raw member joins a kafka-python consumer's group, heartbeats, never sends SyncGroup:
    after the rebalance timeout the coordinator drops it (Kafka's pending-sync expiry) and
    the real consumer gets back the partitions the leader had handed it."""
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, topic_name, 3)
    group = group_id()
    real = Member("kafka-python", bootstrap, group, topic_name, max_poll_ms=4000)
    try:
        wait_for(lambda: real.partitions == {0, 1, 2}, 40, "the real member to own everything")
        produce(bootstrap, topic_name, 30, 3)
        wait_for(lambda: len(real.records) >= 30, 30, "the first records consumed")
        with WireClient(bootstrap) as stuck:
            timeouts = {"topics": (topic_name,), "session": 60000, "rebalance": 4000}
            first = join(stuck, group, **timeouts)
            joined = join(stuck, group, first.member_id, **timeouts)
            assert joined.error_code == E.none and joined.leader != joined.member_id
            heartbeats = []

            def back_to_one_member() -> bool:
                # Heartbeating all along: only the missing SyncGroup can get it removed.
                heartbeats.append(heartbeat(stuck, group, joined.generation_id, joined.member_id))
                return real.partitions == {0, 1, 2} and heartbeats[-1] == E.unknown_member_id

            wait_for(back_to_one_member, 40, "the never-syncing member to be removed")
        assert any(len(a) < 3 for a in real.assignments)  # it had handed some partitions over
        produce(bootstrap, topic_name, 30, 3)
        wait_for(lambda: len(real.records) >= 60, 30, "the later records consumed")
        assert {p for p, _, _ in real.records[30:]} == {0, 1, 2}
        assert f"group {group} removed members that did not sync" in group_broker.output
    finally:
        real.terminate()


def _generations(broker, group: str) -> int:
    return len(re.findall(rf"group {re.escape(group)} stabilizing generation", broker.output))


def _settled_generations(broker, group: str) -> int:
    """The generation count once it held still for 2 s: a leader may still rebalance once
    its metadata of the new topic catches up (kafka-python does)."""
    count = _generations(broker, group)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(2)
        now = _generations(broker, group)
        if now == count:
            return count
        count = now
    raise AssertionError("the group kept rebalancing")


# The restarted process must rejoin within the crashed one's session (a new interpreter,
# imports, bootstrap, JoinGroup): 6 s gave a loaded machine too little room.
STATIC_SESSION_MS = 10000


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_static_member_restart_keeps_partitions_without_rebalance(group_broker, topic_name, client):
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, topic_name, 4)
    group = group_id()

    def static_member(instance_id: str) -> Member:
        return Member(
            client,
            bootstrap,
            group,
            topic_name,
            instance_id=instance_id,
            assignor="range",
            session_ms=STATIC_SESSION_MS,
            max_poll_ms=STATIC_SESSION_MS,  # librdkafka wants it >= the session timeout
        )

    a, b = static_member("static-a"), static_member("static-b")
    restarted = None
    try:
        wait_for(lambda: balanced([a, b], 4) and a.partitions and b.partitions, 40, "static split")
        generations = _settled_generations(group_broker, group)
        before = set(a.partitions)
        b_changes = len(b.assignments)
        a.kill()  # a crash; static members do not leave on close anyway
        restarted = static_member("static-a")
        wait_for(lambda: restarted.assignment is not None and restarted.partitions, 40, "restart")
        assert restarted.partitions == before
        time.sleep(STATIC_SESSION_MS / 1000 + 1)  # past the old incarnation's session timeout
        assert _generations(group_broker, group) == generations  # no rebalance happened
        assert len(b.assignments) == b_changes
        assert restarted.partitions == before
    finally:
        for m in (a, b, restarted):
            if m is not None:
                m.terminate()


def test_at_least_once_with_killed_members_and_broker_restarts(make_broker, topic_name):
    """Members of three clients commit after processing and are SIGKILLed at random points;
    together they process every record, and the committed offsets survive a broker restart."""
    import random

    broker = make_broker(num_partitions="3", group_initial_rebalance_delay_ms="0").start()
    bootstrap = broker.bootstrap
    create_topic(bootstrap, topic_name, 3)
    total = 300
    produce(bootstrap, topic_name, total, 3)
    group = group_id()
    clients = ["confluent", "kafka-python", "aiokafka"]
    rng = random.Random(7)
    members: list[Member] = []

    def start(i: int) -> Member:
        member = Member(
            clients[i % 3], bootstrap, group, topic_name, assignor="range", commit=True, delay_ms=15
        )
        members.append(member)
        return member

    live = [start(i) for i in range(3)]
    try:
        processed = lambda: {int(r[2]) for m in members for r in m.records}  # noqa: E731
        for round_ in range(3):
            wait_for(
                lambda n=(round_ + 1) * 60: len(processed()) > n or len(processed()) == total,
                60,
                "progress",
            )
            time.sleep(rng.uniform(0, 0.5))
            victim = live.pop(rng.randrange(len(live)))
            victim.kill()
            live.append(start(round_ + 3))
        wait_for(lambda: len(processed()) == total, 120, "every record processed by someone")
        expected = {p: total // 3 for p in range(3)}
        wait_for(
            lambda: committed(bootstrap, group, topic_name, 3) == expected, 60, "final commits"
        )
    finally:
        for m in live:
            m.terminate()
    assert processed() == set(range(total))
    duplicates = sum(len(m.records) for m in members) - total
    assert duplicates >= 0  # at-least-once: re-deliveries allowed, gaps are not

    # Committed offsets survive a clean restart and a crash of the broker.
    assert broker.terminate() == 0
    broker.start()
    wait_for(
        lambda: _committed_or_none(bootstrap, group, topic_name) == expected, 60, "after SIGTERM"
    )
    broker.kill()
    broker.start()
    wait_for(
        lambda: _committed_or_none(bootstrap, group, topic_name) == expected, 60, "after kill -9"
    )


def _committed_or_none(bootstrap, group, topic):
    try:
        return committed(bootstrap, group, topic, 3)
    except Exception:  # noqa: BLE001 - the coordinator may still be loading
        return None


def test_offsets_topic_dumps_and_decodes(make_broker, topic_name):
    """`__consumer_offsets` holds Kafka's records: dump-log --offsets-decoder reads them, and
    the raw keys and values decode with the schemas."""
    from brokerd.groups import offsets_topic
    from brokerd.log.log import Log  # noqa: F401 - the broker's own reader, below
    from brokerd.records import iter_entries

    broker = make_broker(num_partitions="3", group_initial_rebalance_delay_ms="0").start()
    bootstrap = broker.bootstrap
    create_topic(bootstrap, topic_name, 3)
    produce(bootstrap, topic_name, 30, 3)
    group = group_id()
    member = Member("confluent", bootstrap, group, topic_name, commit=True)
    try:
        wait_for(lambda: len(member.records) == 30, 60, "consumption")
    finally:
        member.terminate()
    partition = offsets_topic.partition_for(group, 50)
    segment = broker.dir / "logs" / f"__consumer_offsets-{partition}" / ("0" * 20 + ".log")

    def decoded() -> list:
        return [
            offsets_topic.decode_record(record.key, record.value)
            for entry in iter_entries(segment.read_bytes())
            for record in entry
        ]

    def empty_group_written() -> bool:
        groups = [
            v for k, v in decoded() if isinstance(k, offsets_topic.GroupKey) and v is not None
        ]
        return bool(groups) and groups[-1].members == []

    # The LeaveGroup answer comes before the coordinator writes the emptied group.
    wait_for(empty_group_written, 30, "the empty group to be written")
    out = subprocess.run(
        [sys.executable, "-m", "brokerd", "dump-log", "--offsets-decoder", str(segment)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f'"group":"{group}","topic":"{topic_name}","partition":2' in out
    assert '"version":"3","data":{"offset":10' in out
    assert '"protocolType":"consumer"' in out and '"type":"2"' in out
    records = decoded()
    commits = [
        (k.partition, v.offset) for k, v in records if isinstance(k, offsets_topic.OffsetKey)
    ]
    assert (2, 10) in commits and max(o for _, o in commits) == 10
    groups = [v for k, v in records if isinstance(k, offsets_topic.GroupKey) and v is not None]
    assert groups[0].protocol_type == "consumer" and groups[0].protocol == "range"
    assert groups[-1].members == []  # the member left: the empty group was written last
