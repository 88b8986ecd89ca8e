"""Consumer groups through a kill -9 of their coordinator and a restart of everything.

The cluster runs on a ZooKeeper of the test's own, with a data directory that survives its
kill -9: restarted on the same port and data, it still holds the dead processes' sessions,
and so their ephemeral znodes (/brokers/ids/<id>, /controller), until those sessions
expire, as `make run` restarted on the same var/ sees it. Groups of real clients
(confluent-kafka and kafka-python, one process per member) consume and commit every record
while a producer keeps writing:

- the group coordinator's broker is killed with SIGKILL, then ZooKeeper and every other
  broker; all come back on the same directories before the old sessions expire;
- or only the coordinator's broker is killed and started again at once, before its old
  session expires (what the launcher's supervisor does).

Either way every group must find a coordinator again, keep its committed offsets and go
on from them to the end of the log without skipping a record, and a new group must join
and consume everything. The waits are bounded (a group stuck on NOT_COORDINATOR fails the
test); nothing measures speed.
"""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kazoo.client import KazooClient

from brokerd.groups.offsets_topic import TOPIC as OFFSETS_TOPIC
from brokerd.groups.offsets_topic import partition_for
from tests.compat.group_support import Member, group_story
from tests.harness import ZooKeeper
from tests.integration.test_admin_api import admin_for

from .checker import Workload, create_topic
from .conftest import Cluster

PARTITIONS = 3
OFFSETS_PARTITIONS = 3  # the Cluster's offsets.topic.num.partitions
# Bounds on waits that only a stuck group exceeds (the brokers' ZooKeeper sessions expire
# 4 s after the restart; clients back off and retry for a few seconds more).
REJOIN_TIMEOUT_S = 75
MEMBER = "tests.cluster.restart_member"


@pytest.fixture
def own_zookeeper(tmp_path):
    """A ZooKeeper this test may kill -9 and start again on the same port and data dir."""
    server = ZooKeeper(tmp_path / "zookeeper").start()
    yield server
    server.stop()


@pytest.fixture
def restartable_cluster(own_zookeeper, tmp_path_factory):
    made = Cluster(own_zookeeper, tmp_path_factory).start()
    yield made
    made.kill_all()


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets (-1001: none), raising while no coordinator answers."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = reader.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        for tp in found:
            if tp.error is not None:
                raise KafkaException(tp.error)
        return {tp.partition: tp.offset for tp in found}
    finally:
        reader.close()


def _end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "end-offsets"})
    try:
        return {
            p: reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(PARTITIONS)
        }
    finally:
        reader.close()


def _retrying(read, timeout: float, what: str, explain=None):
    """`read()` until it answers; a bounded wait for a cluster coming back."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return read()
        except Exception as exc:  # noqa: BLE001 - not back yet
            if time.monotonic() > deadline:
                story = f"\n{explain()}" if explain else ""
                raise AssertionError(f"{what}: no answer in {timeout}s ({exc}){story}") from exc
            time.sleep(0.5)


def _wait_until(condition, timeout: float, what: str, explain=None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return
        except Exception:  # noqa: BLE001 - a read failing while the cluster settles
            pass
        if time.monotonic() > deadline:
            story = f"\n{explain()}" if explain else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{story}")
        time.sleep(0.5)


def _start_in_parallel(brokers) -> None:
    """Start brokers at once (each waits for its old registration to expire)."""
    errors: list[BaseException] = []

    def start(broker) -> None:
        try:
            broker.start(timeout=60)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(b,)) for b in brokers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert not errors, f"a broker did not start again: {errors[0]}"


def _groups_on_distinct_offsets_partitions(prefix: str, count: int) -> list[str]:
    """Group ids whose `__consumer_offsets` partitions differ, so every coordinator has one."""
    chosen: dict[int, str] = {}
    n = 0
    while len(chosen) < min(count, OFFSETS_PARTITIONS):
        group = f"{prefix}-{n}"
        chosen.setdefault(partition_for(group, OFFSETS_PARTITIONS), group)
        n += 1
    return list(chosen.values())


@pytest.mark.parametrize("restart", ["everything", "coordinator"])
def test_groups_resume_after_kill_and_restart(
    restartable_cluster, own_zookeeper, topic_name, restart, tmp_path
):
    cluster = restartable_cluster
    create_topic(cluster, topic_name, partitions=PARTITIONS)
    workload = Workload(cluster.bootstrap, topic_name, rate_per_s=40).start()
    group_ids = _groups_on_distinct_offsets_partitions(f"g-{topic_name}", 3)
    clients = ["confluent", "kafka-python", "confluent"]
    members: dict[str, list[Member]] = {
        group: [
            Member(
                client, cluster.bootstrap, group, topic_name, module=MEMBER, commit=True, delay_ms=5
            )
            for _ in range(2)
        ]
        for group, client in zip(group_ids, clients, strict=True)
    }
    everyone = [m for ms in members.values() for m in ms]
    logs_from: dict[int, int] = {}

    def story() -> str:
        """What the members and brokers saw; every member's whole log is kept beside the
        brokers' (member-<pid>.log in the test's directory)."""
        for member in everyone:
            member.log.seek(0)
            (tmp_path / f"member-{member.process.pid}.log").write_bytes(member.log.read())
        broker_lines = "\n".join(
            line
            for b in cluster.brokers.values()
            for line in b.output_bytes(logs_from.get(b.broker_id, 0)).splitlines()
            if "consumer_offsets" in line or "controller" in line or "ERROR" in line
        )
        return f"member logs in {tmp_path}\n" + group_story(everyone, broker_lines)

    try:
        workload.wait_for_acks(150)
        for group, group_members in members.items():
            _wait_until(
                lambda ms=group_members: sum(len(m.records) for m in ms) >= 60,
                REJOIN_TIMEOUT_S,
                f"group {group} to consume",
                story,
            )
        cluster.wait_full_isr(OFFSETS_TOPIC, partitions=OFFSETS_PARTITIONS)
        first = group_ids[0]
        coordinator = cluster.leader_of(OFFSETS_TOPIC, partition_for(first, OFFSETS_PARTITIONS))
        before = {g: _committed(cluster.bootstrap, g, topic_name) for g in group_ids}
        logs_from.update({b.broker_id: len(b.output.encode()) for b in cluster.brokers.values()})

        cluster.brokers[coordinator].kill()
        if restart == "everything":
            time.sleep(0.5)  # the group sees its coordinator go first
            own_zookeeper.stop()  # SIGKILL: its sessions are in its data dir
            cluster.kill_all()
            own_zookeeper.start()
            _start_in_parallel(cluster.brokers.values())
        else:
            _start_in_parallel([cluster.brokers[coordinator]])

        # Every group finds a coordinator again, with the offsets it had committed.
        for group in group_ids:
            after = _retrying(
                lambda g=group: _committed(cluster.bootstrap, g, topic_name),
                REJOIN_TIMEOUT_S,
                f"committed offsets of {group} after the restart",
                story,
            )
            for partition, offset in before[group].items():
                assert after[partition] >= offset, (
                    f"{group}: {topic_name}-{partition} was committed at {offset} before the "
                    f"kill, the coordinator now has {after[partition]}"
                )

        # They go on from there to the end of what is written after the restart.
        workload.wait_for_acks(100, timeout=REJOIN_TIMEOUT_S)
        ends = _retrying(
            lambda: _end_offsets(cluster.bootstrap, topic_name), REJOIN_TIMEOUT_S, "end offsets"
        )
        for group in group_ids:
            _wait_until(
                lambda g=group: all(
                    o >= ends[p] for p, o in _committed(cluster.bootstrap, g, topic_name).items()
                ),
                REJOIN_TIMEOUT_S,
                f"group {group} to commit up to {ends} after the restart",
                story,
            )

        # A group that never existed joins and reads everything.
        newcomer = Member(
            "kafka-python", cluster.bootstrap, f"new-{topic_name}", topic_name, module=MEMBER
        )
        everyone.append(newcomer)
        _wait_until(
            lambda: all(
                any(p == partition and o >= ends[p] - 1 for p, o, _ in newcomer.records)
                for partition in range(PARTITIONS)
                if ends[partition] > 0
            ),
            REJOIN_TIMEOUT_S,
            "a new group to consume to the end",
            story,
        )
    finally:
        workload.stop()
        for member in everyone:
            member.kill()

    # No record was skipped: each group processed every offset below the ends (at least
    # once: records processed but not committed before the kill come again).
    for group, group_members in members.items():
        seen: dict[int, set[int]] = {}
        for member in group_members:
            for partition, offset, _ in member.records:
                seen.setdefault(partition, set()).add(offset)
        for partition in range(PARTITIONS):
            missing = set(range(ends[partition])) - seen.get(partition, set())
            assert not missing, (
                f"{group} never processed {topic_name}-{partition} {sorted(missing)[:10]}"
            )


def _registered(cluster) -> set[int]:
    client = KazooClient(hosts=cluster.brokers[1].props["zookeeper.connect"])
    client.start(timeout=15)
    try:
        found = set(map(int, client.get_children("/brokers/ids")))
        if client.exists("/controller"):
            found.add(-1)  # a controller is registered too
        return found
    finally:
        client.stop()
        client.close()


def _fully_replicated(cluster, topic: str, partitions: int) -> bool:
    """Each partition's leader (its own admin API's word) has every broker in the ISR."""
    full = set()
    for broker in cluster.brokers.values():
        admin = admin_for(broker)
        for partition in range(partitions):
            status, view = admin.get(f"/v1/partitions/{topic}/{partition}")
            if status == 200 and view["is_leader"] and len(view["isr"]) == len(cluster.brokers):
                full.add(partition)
    return len(full) == partitions


def _consume_through(broker, group: str, topic: str, count: int) -> None:
    """A new group reads `count` records with `broker` as its only bootstrap server."""
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + REJOIN_TIMEOUT_S
    try:
        while seen < count:
            assert time.monotonic() < deadline, (
                f"a group bootstrapped at broker {broker.broker_id} read {seen} of {count}"
            )
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                seen += 1
    finally:
        consumer.close()


def test_brokers_registering_while_a_new_controller_takes_office_are_taken_in(cluster, topic_name):
    """After a full restart the brokers register at about the time the first of them takes
    office as controller. One registering after the new controller read /brokers/ids must
    still be taken in (its replicas, its metadata), or it never leads or follows anything
    and answers FindCoordinator from a cache nobody updates. The failure probe holds the
    new controller right after that read while the others register."""
    create_topic(cluster, topic_name, partitions=PARTITIONS)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for n in range(30):
        producer.produce(topic_name, str(n).encode(), partition=n % PARTITIONS)
    assert producer.flush(30) == 0
    _consume_through(cluster.brokers[1], f"before-{topic_name}", topic_name, 30)
    cluster.wait_full_isr(OFFSETS_TOPIC, partitions=OFFSETS_PARTITIONS)

    cluster.kill_all()
    _wait_until(lambda: not _registered(cluster), 30, "the old sessions to expire")
    first, *others = cluster.brokers.values()
    starting = threading.Thread(
        target=first.start,
        kwargs={"timeout": 90, "overrides": {"failure.probes": "controller.failover=suspend"}},
        daemon=True,
    )
    starting.start()
    _wait_until(
        lambda: "failure probe controller.failover: suspended" in first.output,
        60,
        "broker 1 to take office and stop at the probe",
    )
    late = threading.Thread(target=_start_in_parallel, args=(others,), daemon=True)
    late.start()
    _wait_until(lambda: _registered(cluster) == {-1, 1, 2, 3}, 60, "brokers 2 and 3 to register")
    admin_for(first).ok("DELETE", "/v1/failure-probes/controller/failover")
    starting.join(90)
    late.join(90)
    assert all(b.alive() for b in cluster.brokers.values())

    # The controller knows them: every partition is replicated by all three again (as its
    # leader sees it: a broker left out still serves its stale view of before the kill)...
    for topic, count in ((topic_name, PARTITIONS), (OFFSETS_TOPIC, OFFSETS_PARTITIONS)):
        _wait_until(
            lambda t=topic, c=count: _fully_replicated(cluster, t, c),
            REJOIN_TIMEOUT_S,
            f"every partition of {topic} to have all three replicas in its ISR",
        )
    # ...and a group finds its coordinator through any of them.
    for broker in cluster.brokers.values():
        _consume_through(broker, f"after-{broker.broker_id}-{topic_name}", topic_name, 30)
