"""Partition reassignment (KIP-455) on three brokers: AlterPartitionReassignments and
ListPartitionReassignments through brokerd.client, under a continuous acks=all idempotent
load; the checker proves no acknowledged record is lost or duplicated and the new replica's
log equals the leader's below the HW. Also: a move of the leader, cancel, kill -9 of the
controller mid-reassignment (the next controller resumes it from ZooKeeper), the legacy
/admin/reassign_partitions znode, and the error codes of bad requests."""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from kazoo.client import KazooClient

from brokerd.client import AdminError, ErrorCode, NewTopic, SyncClient
from tests.harness import ROOT
from tests.integration.test_admin_api import admin_for

from .checker import Workload, check_queue, check_replicas_identical, consume_all


def create_placed_topic(cluster, topic: str, replicas: list[int]) -> None:
    """One partition on `replicas` (the first leads), min.insync.replicas 2, fully in sync."""
    with client_for(cluster) as client:
        new = NewTopic(topic, assignments={0: replicas}, configs={"min.insync.replicas": "2"})
        client.admin.create_topics([new])
    wait_placed(cluster, topic, replicas)


def wait_placed(cluster, topic: str, replicas: list[int], timeout: float = 60) -> dict:
    """Until the partition's replicas are `replicas`, all in the ISR, and one of them leads."""

    def placed(meta) -> bool:
        p = meta["topics"].get(topic, {}).get(0)
        return (
            p is not None
            and p["replicas"] == replicas
            and sorted(p["isr"]) == sorted(replicas)
            and p["leader"] in replicas
        )

    return cluster.wait_for(placed, timeout, f"{topic} on {replicas}")["topics"][topic][0]


def wait_reassignment_done(client: SyncClient, topic: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while client.admin.list_partition_reassignments([(topic, 0)]):
        assert time.monotonic() < deadline, "the reassignment did not complete"
        time.sleep(0.2)


def wait_deleted(cluster, broker_id: int, topic: str, timeout: float = 30) -> None:
    """StopReplica(delete) removed the broker's partition directory."""
    directory = cluster.brokers[broker_id].dir / "logs" / f"{topic}-0"
    deadline = time.monotonic() + timeout
    while directory.exists():
        assert time.monotonic() < deadline, f"{directory} is still there"
        time.sleep(0.2)


def place_beside_the_controller(cluster, topic: str) -> tuple[int, int, int]:
    """The topic on [controller, another broker]: (controller, that broker, the third)."""
    controller = cluster.metadata()["controller"]
    other, third = sorted(set(cluster.brokers) - {controller})
    create_placed_topic(cluster, topic, [controller, other])
    return controller, other, third


def client_for(cluster) -> SyncClient:
    return SyncClient(cluster.bootstrap, retries=20, retry_backoff=0.25)


def move_under_load(cluster, topic: str, before: list[int], after: list[int]) -> None:
    create_placed_topic(cluster, topic, before)
    workload = Workload(cluster.bootstrap, topic).start()
    workload.wait_for_acks(200)
    with client_for(cluster) as client:
        assert client.admin.alter_partition_reassignments({(topic, 0): after}) == {(topic, 0): None}
        ongoing = client.admin.list_partition_reassignments()
        if (topic, 0) in ongoing:  # it may already be done: little data to copy
            progress = ongoing[(topic, 0)]
            assert set(progress.replicas) == set(before) | set(after)
            assert progress.adding_replicas == tuple(b for b in after if b not in before)
            assert progress.removing_replicas == tuple(b for b in before if b not in after)
        wait_reassignment_done(client, topic)
    wait_placed(cluster, topic, after)
    for removed in set(before) - set(after):
        wait_deleted(cluster, removed, topic)
    workload.wait_for_acks(200)
    workload.stop()
    assert not workload.failed, list(workload.failed.items())[:3]
    check_queue(workload, consume_all(cluster.bootstrap, topic))
    high = check_replicas_identical(cluster, topic, replicas=after)
    assert high >= len(workload.acked)


def test_move_a_follower_under_load(cluster, topic_name):
    # Broker 2's replica moves to broker 3; broker 1 leads throughout.
    move_under_load(cluster, topic_name, [1, 2], [1, 3])


def test_move_the_leader_under_load(cluster, topic_name):
    # The leader (broker 1) leaves: leadership moves to the target's first replica.
    move_under_load(cluster, topic_name, [1, 2], [3, 2])


def test_cancel_reverts_to_the_original_replicas(cluster, topic_name):
    # Clients talk to the controller, so the broker paused below must be another one.
    controller, other, adding = place_beside_the_controller(cluster, topic_name)
    workload = Workload(cluster.bootstrap, topic_name).start()
    workload.wait_for_acks(100)
    key = (topic_name, 0)
    with client_for(cluster) as client:
        # The adding broker is paused (well within its ZooKeeper session): it cannot catch
        # up, so the reassignment stays in progress until it is cancelled.
        with paused(cluster.brokers[adding]):
            client.admin.alter_partition_reassignments({key: [controller, adding]})
            progress = client.admin.list_partition_reassignments([key])[key]
            assert (progress.adding_replicas, progress.removing_replicas) == ((adding,), (other,))
            # The leader's admin API shows the move and each replica's catch-up.
            view = leader_view(cluster, topic_name, controller)
            assert view["assigned_replicas"] == [controller, adding, other]
            assert (view["adding_replicas"], view["removing_replicas"]) == ([adding], [other])
            assert not view["under_replicated"]  # counted against the target, as KIP-352
            replicas = {r["broker_id"]: r for r in view["replicas"]}
            assert set(replicas) == {1, 2, 3} and not replicas[adding]["in_sync"]
            assert client.admin.alter_partition_reassignments({key: None}) == {key: None}
            assert client.admin.list_partition_reassignments([key]) == {}
        with pytest.raises(AdminError) as refused:  # nothing left to cancel
            client.admin.alter_partition_reassignments({key: None})
        assert refused.value.errors[key].error_code == ErrorCode.no_reassignment_in_progress
    wait_placed(cluster, topic_name, [controller, other])
    wait_deleted(cluster, adding, topic_name)  # the cancelled replica is removed
    workload.wait_for_acks(100)
    workload.stop()
    assert not workload.failed, list(workload.failed.items())[:3]
    check_queue(workload, consume_all(cluster.bootstrap, topic_name))
    check_replicas_identical(cluster, topic_name, replicas=[controller, other])


def leader_view(cluster, topic: str, leader: int, timeout: float = 10) -> dict:
    """GET /v1/partitions/<topic>/0 on the leader's admin API, once it knows the move."""
    admin = admin_for(cluster.brokers[leader])
    deadline = time.monotonic() + timeout
    while True:
        view = admin.ok("GET", f"/v1/partitions/{topic}/0")
        if view["adding_replicas"] or time.monotonic() > deadline:
            return view
        time.sleep(0.1)


class paused:
    """SIGSTOP a broker's process group for the block, then SIGCONT."""

    def __init__(self, broker):
        self.pid = broker.process.pid

    def __enter__(self):
        os.killpg(self.pid, signal.SIGSTOP)

    def __exit__(self, *exc):
        os.killpg(self.pid, signal.SIGCONT)


def test_controller_killed_mid_reassignment_is_resumed(cluster, topic_name):
    controller, other, adding = place_beside_the_controller(cluster, topic_name)
    workload = Workload(cluster.bootstrap, topic_name).start()
    workload.wait_for_acks(100)
    key = (topic_name, 0)
    with client_for(cluster) as client:
        # The adding broker dies (its ZooKeeper session outlives it for a moment, so the
        # controller still accepts it): the reassignment cannot complete... The client talks
        # to the controller first, so the kill and the request that must beat the session's
        # end are back to back.
        assert client.admin.list_partition_reassignments([key]) == {}
        cluster.brokers[adding].kill()
        client.admin.alter_partition_reassignments({key: [other, adding]})
        assert client.admin.list_partition_reassignments([key])[key].adding_replicas == (adding,)
    # ...and the controller (also the leader and the replica being removed) dies with it.
    cluster.brokers[controller].kill()
    cluster.wait_for(
        lambda m: m["controller"] == other, what=f"broker {other} to become the controller"
    )
    with client_for(cluster) as client:
        # The new controller resumed the reassignment from ZooKeeper.
        progress = client.admin.list_partition_reassignments([key])[key]
        assert (progress.adding_replicas, progress.removing_replicas) == ((adding,), (controller,))
        cluster.brokers[adding].start()
        wait_reassignment_done(client, topic_name)
    wait_placed(cluster, topic_name, [other, adding])
    # The removed replica's broker was down when the move completed: its copy is deleted
    # once it is back.
    cluster.brokers[controller].start()
    wait_deleted(cluster, controller, topic_name)
    workload.wait_for_acks(100)
    workload.stop()
    check_queue(workload, consume_all(cluster.bootstrap, topic_name))
    check_replicas_identical(cluster, topic_name, replicas=[other, adding])


def test_legacy_reassign_partitions_znode(cluster, topic_name):
    """kafka-reassign-partitions.sh --zookeeper (Kafka 2.x) writes /admin/reassign_partitions;
    the controller carries it out and removes the znode when done (entries it refuses at
    once)."""
    create_placed_topic(cluster, topic_name, [1, 2])
    zk = KazooClient(hosts=cluster.brokers[1].props["zookeeper.connect"])
    zk.start()
    try:
        wanted = {
            "version": 1,
            "partitions": [
                {"topic": topic_name, "partition": 0, "replicas": [2, 3]},
                {"topic": "no-such-topic", "partition": 0, "replicas": [1, 2]},
            ],
        }
        zk.create("/admin/reassign_partitions", json.dumps(wanted).encode(), makepath=True)
        wait_placed(cluster, topic_name, [2, 3])
        wait_deleted(cluster, 1, topic_name)
        deadline = time.monotonic() + 30
        while zk.exists("/admin/reassign_partitions"):
            assert time.monotonic() < deadline, "/admin/reassign_partitions was not removed"
            time.sleep(0.2)
        assignment = json.loads(zk.get(f"/brokers/topics/{topic_name}")[0])
        assert assignment["partitions"] == {"0": [2, 3]}
        assert not assignment["adding_replicas"] and not assignment["removing_replicas"]
    finally:
        zk.stop()
        zk.close()


def test_bad_requests_get_kafka_error_codes_and_elect_leaders(cluster, topic_name):
    create_placed_topic(cluster, topic_name, [1, 2])
    key = (topic_name, 0)
    refusals = {
        ("no-such-topic", 0): ([1, 2], ErrorCode.unknown_topic_or_partition),
        (topic_name, 7): ([1, 2], ErrorCode.unknown_topic_or_partition),
    }
    with client_for(cluster) as client:
        for replicas, code in [
            ([], ErrorCode.invalid_replica_assignment),
            ([1, 1], ErrorCode.invalid_replica_assignment),
            ([1, 99], ErrorCode.invalid_replica_assignment),  # no such broker
            ([-1, 2], ErrorCode.invalid_replica_assignment),
            (None, ErrorCode.no_reassignment_in_progress),
        ]:
            with pytest.raises(AdminError) as refused:
                client.admin.alter_partition_reassignments({key: replicas})
            assert refused.value.errors[key].error_code == code, replicas
        with pytest.raises(AdminError) as refused:
            client.admin.alter_partition_reassignments(
                {key: [1, 2, 3]}, allow_replication_factor_change=False
            )
        assert refused.value.errors[key].error_code == ErrorCode.invalid_replication_factor
        # Errors are per partition: the valid one (a reorder) goes through beside them.
        with pytest.raises(AdminError) as refused:
            client.admin.alter_partition_reassignments(
                {key: [2, 1], **{k: rs for k, (rs, _) in refusals.items()}}
            )
        assert refused.value.results == {key: None}
        assert {k: e.error_code for k, e in refused.value.errors.items()} == {
            k: code for k, (_, code) in refusals.items()
        }
        wait_placed(cluster, topic_name, [2, 1])
        # The reorder kept broker 1 leading; a preferred election hands it to broker 2.
        assert client.admin.elect_leaders("preferred", [key]) == {key: ErrorCode.none}
        cluster.wait_for(lambda m: m["topics"][topic_name][0]["leader"] == 2, what="2 leading")
        assert client.admin.elect_leaders("preferred", [key]) == {
            key: ErrorCode.election_not_needed
        }
        with pytest.raises(AdminError) as refused:
            client.admin.elect_leaders("preferred", [(topic_name, 7)])
        assert refused.value.errors[(topic_name, 7)].error_code == (
            ErrorCode.unknown_topic_or_partition
        )
        # Brokers that are not the controller answer NOT_CONTROLLER.
        controller = client.admin.describe_cluster().controller_id
        elsewhere = next(b for b in cluster.brokers if b != controller)
        for api_key, values in [
            (45, {"topics": [], "timeout": datetime.timedelta(seconds=5)}),
            (46, {"topics": None, "timeout": datetime.timedelta(seconds=5)}),
        ]:
            response = client.run(client.cluster.call(elsewhere, api_key, values))
            assert response.error_code == ErrorCode.not_controller
        assert client.admin.list_partition_reassignments() == {}
    assert all(b.alive() for b in cluster.brokers.values())


def reassign_cli(cluster, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "brokerd", "reassign", "--bootstrap-server"]
    command += [cluster.bootstrap, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_cli_generate_execute_verify(cluster, topic_name, tmp_path):
    """kafka-reassign-partitions.sh's workflow with its JSON files."""
    create_placed_topic(cluster, topic_name, [1, 2])
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"version": 1, "topics": [{"topic": topic_name}]}))
    generated = reassign_cli(
        cluster, "--generate", "--topics-to-move-json-file", str(topics_file),
        "--broker-list", "2,3",
    )  # fmt: skip
    assert generated.returncode == 0, generated.stderr
    lines = generated.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1])["partitions"] == [
        {"topic": topic_name, "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]}
    ]
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(lines[4])
    assert sorted(proposed["partitions"][0]["replicas"]) == [2, 3]

    plan = tmp_path / "plan.json"
    plan.write_text(lines[4])
    executed = reassign_cli(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert executed.returncode == 0, executed.stderr
    assert f"Successfully started partition reassignments for {topic_name}-0" in executed.stdout
    target = proposed["partitions"][0]["replicas"]
    wait_placed(cluster, topic_name, target)
    verified = reassign_cli(cluster, "--verify", "--reassignment-json-file", str(plan))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert f"Reassignment of partition {topic_name}-0 is completed." in verified.stdout
    listed = reassign_cli(cluster, "--list")
    assert "No partition reassignments found." in listed.stdout
    cancelled = reassign_cli(cluster, "--cancel", "--reassignment-json-file", str(plan))
    assert "None of the specified partition reassignments are active." in cancelled.stdout

    # Bad input: an unknown broker is refused with Kafka's error, a bad file before any call.
    plan.write_text(
        json.dumps({"partitions": [{"topic": topic_name, "partition": 0, "replicas": [9]}]})
    )
    refused = reassign_cli(cluster, "--execute", "--reassignment-json-file", str(plan))
    assert refused.returncode == 1 and "INVALID_REPLICA_ASSIGNMENT" in refused.stderr
    plan.write_text("{}")
    malformed = reassign_cli(cluster, "--verify", "--reassignment-json-file", str(plan))
    assert malformed.returncode == 2 and "expected" in malformed.stderr
