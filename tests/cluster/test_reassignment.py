"""Partition reassignment (KIP-455) on three brokers: AlterPartitionReassignments and
ListPartitionReassignments through brokerd.client, under a continuous acks=all idempotent
load; the checker proves no acknowledged record is lost or duplicated and the new replica's
log equals the leader's below the HW. Also: a move of the leader, cancel, kill -9 of the
controller mid-reassignment (the next controller resumes it from ZooKeeper), the legacy
/admin/reassign_partitions znode, and the error codes of bad requests."""

from __future__ import annotations

import json
import time

import pytest
from kazoo.client import KazooClient

from brokerd.client import AdminError, ErrorCode, KafkaResponseError, NewTopic, SyncClient

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
