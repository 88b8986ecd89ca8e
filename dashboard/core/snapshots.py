"""Snapshots of a cluster as plain JSON-ready dicts, shared by the REST API and the live pages.

The Kafka protocol gives brokers, controller, leaders, ISR, high watermark and log start
(Metadata, ListOffsets); the admin API adds what the protocol lacks: each replica's log end
offset and size on disk.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from brokerd.client.errors import KafkaClientError, KafkaResponseError

from . import partition_moves
from .admin_api import AdminApi, AdminApiError
from .kafka import EARLIEST, LATEST, KafkaOps

TOPICS_SHOWN = 200
PROBLEMS_SHOWN = 100
UNREACHABLE = "unreachable"


def overview(
    metadata, admin_states: dict[int, str] | None = None, known_brokers=(), targets=None
) -> dict[str, Any]:
    """Brokers up or down, controller, topic and partition counts, under-replicated and
    offline partitions (counted, and the first PROBLEMS_SHOWN listed); the first topic names
    (the page lists a bounded number; the API paginates).

    `admin_states` is each broker's admin API answer (/v1/health status, or "unreachable"):
    a broker is up when it is registered and, if its admin API is known, answers it. A
    broker killed outright stays registered until its ZooKeeper session expires; its admin
    API stops answering at once. `known_brokers` keeps brokers seen before in the list.
    `targets` ((topic, partition) -> target replicas) are the reassignments in progress: a
    partition copying to new replicas is under-replicated only against its target (KIP-352).
    """
    targets = targets or {}
    admin_states = admin_states or {}
    known = set(metadata.brokers) | set(admin_states) | set(known_brokers)
    for topic in metadata.topics.values():
        for p in topic.partitions.values():
            known.update(p.replicas)
    up = {b for b in metadata.brokers if admin_states.get(b) != UNREACHABLE}
    under_replicated = offline = partitions = 0
    problems = []
    for name in sorted(metadata.topics):
        for pid, p in sorted(metadata.topics[name].partitions.items()):
            partitions += 1
            if p.leader < 0 or p.leader not in up:
                offline += 1
                state = "offline"
            elif len(p.isr) < len(targets.get((name, pid), p.replicas)):
                under_replicated += 1
                state = "under-replicated"
            else:
                continue
            if len(problems) < PROBLEMS_SHOWN:
                problems.append(
                    {
                        "topic_name": name,
                        "partition_id": pid,
                        "leader": p.leader if p.leader >= 0 else None,
                        "replicas": list(p.replicas),
                        "isr": list(p.isr),
                        "state": state,
                    }
                )
    brokers = []
    for broker_id in sorted(known):
        info = metadata.brokers.get(broker_id)
        brokers.append(
            {
                "broker_id": broker_id,
                "address": info.address if info else None,
                "rack": info.rack if info else None,
                "up": broker_id in up,
                "is_controller": broker_id == metadata.controller_id,
                "admin_state": admin_states.get(broker_id),
            }
        )
    return {
        "kafka_cluster_id": metadata.cluster_id,
        "controller_id": metadata.controller_id,
        "brokers": brokers,
        "brokers_up": sum(1 for b in brokers if b["up"]),
        "brokers_down": sum(1 for b in brokers if not b["up"]),
        "topic_count": len(metadata.topics),
        "partition_count": partitions,
        "under_replicated_partitions": under_replicated,
        "offline_partitions": offline,
        "problem_partitions": problems,
        "topics": sorted(metadata.topics)[:TOPICS_SHOWN],
        "taken_at_ms": int(time.time() * 1000),
    }


async def admin_states(admin: AdminApi | None, broker_ids) -> dict[int, str]:
    """Every broker's /v1/health status, or UNREACHABLE; {} without an admin API."""
    if admin is None or not await asyncio.to_thread(lambda: admin.available):
        return {}
    ids = sorted(set(broker_ids) | set(admin.endpoints()))

    async def ask(broker_id: int) -> str:
        try:
            answer = await asyncio.to_thread(admin.health, broker_id)
        except AdminApiError as exc:
            return UNREACHABLE if exc.unreachable else f"error {exc.status}"
        return str(answer.get("status", "ok"))

    states = dict(zip(ids, await asyncio.gather(*(ask(b) for b in ids)), strict=True))
    if UNREACHABLE in states.values():
        await asyncio.to_thread(admin.rediscover)  # a restarted broker may have moved
    return states


async def cluster_overview(ops: KafkaOps, admin: AdminApi | None, known_brokers=()) -> dict:
    """The overview from fresh metadata and every broker's admin API."""
    metadata = await ops.refresh()
    states, moving = await asyncio.gather(
        admin_states(admin, {*metadata.brokers, *known_brokers}), _reassignments(ops)
    )
    targets = {key: row["target_replicas"] for key, row in moving.items()}
    return overview(metadata, states, known_brokers, targets)


READ_COMMITTED = 1


async def _open_transactions(ops: KafkaOps, topic: str, ids: list[int]) -> dict[int, list[dict]]:
    """Per partition, its producers with an open transaction (DescribeProducers): producer
    id, epoch and the transaction's first offset. A broker without the API: none shown."""
    try:
        found = await ops.admin.describe_producers([(topic, p) for p in ids])
    except (KafkaClientError, AdminApiError):
        return {}
    return {
        pid: [
            {
                "producer_id": s.producer_id,
                "producer_epoch": s.producer_epoch,
                "first_offset": s.current_txn_start_offset,
                "last_timestamp": s.last_timestamp,
            }
            for s in states
            if s.current_txn_start_offset is not None
        ]
        for (_t, pid), states in found.items()
        if isinstance(states, list)
    }


def _value(result):
    return None if isinstance(result, Exception) else result


async def topic_partitions(ops: KafkaOps, admin: AdminApi | None, topic: str) -> list[dict]:
    """Per partition: leader, epoch, replicas, ISR, HW, log start, and per replica LEO/size.

    Every replica's broker is asked over its admin API: the leader's answer gives the live
    ISR and epoch (before the controller has spread them) and what it knows of followers'
    LEO; a follower's own answer gives its LEO and size. A broker that does not answer is
    marked down, never an error.
    """
    metadata = await ops.refresh([topic])
    info = metadata.topics.get(topic)
    if info is None:
        raise KafkaResponseError(3, None, f"topic {topic}")
    ids = sorted(info.partitions)
    high, low, stable, producers, moving = await asyncio.gather(
        ops.list_offsets(topic, ids, LATEST),
        ops.list_offsets(topic, ids, EARLIEST),
        ops.list_offsets(topic, ids, LATEST, isolation_level=READ_COMMITTED),
        _open_transactions(ops, topic, ids),
        _reassignments(ops, [(topic, p) for p in ids]),
    )
    views, unreachable = await _replica_views(admin, topic, info) if admin else ({}, set())
    up = set(metadata.brokers) - unreachable
    partitions = []
    for pid in ids:
        p = info.partitions[pid]
        led = views.get(p.leader, {}).get(pid)
        led = led if led and led.get("is_leader") else None
        isr = list(led["isr"]) if led else list(p.isr)
        from_leader = {r["broker_id"]: r for r in (led or {}).get("replicas", [])}
        replicas = []
        for broker_id in p.replicas:
            own = views.get(broker_id, {}).get(pid)
            own = own if own and own.get("status") == "online" else None
            known = from_leader.get(broker_id, {})
            leo = own["log_end_offset"] if own else known.get("log_end_offset")
            if leo is not None and leo < 0:
                leo = None  # a new leader knows no follower's LEO until it fetches (-1)
            replicas.append(
                {
                    "broker_id": broker_id,
                    "is_leader": broker_id == p.leader,
                    "in_sync": broker_id in isr,
                    "up": broker_id in up,
                    "log_end_offset": leo,
                    "lag": known.get("lag") if leo is not None else None,
                    "size_bytes": own.get("size_bytes") if own else None,
                }
            )
        leader_size = next((r["size_bytes"] for r in replicas if r["is_leader"]), None)
        reassignment = moving.get((topic, pid))
        target = reassignment["target_replicas"] if reassignment else p.replicas
        hw = _value(high[pid])
        partitions.append(
            {
                "partition_id": pid,
                "leader": p.leader if p.leader >= 0 else None,
                "leader_epoch": led["leader_epoch"] if led else p.leader_epoch,
                "replicas": replicas,
                "isr": isr,
                "high_watermark": hw if hw is not None else (led or {}).get("high_watermark"),
                "log_start_offset": _value(low[pid]),
                # What read_committed consumers read up to: below an open transaction.
                "last_stable_offset": _value(stable[pid]),
                "open_transactions": producers.get(pid, []),
                "size_bytes": leader_size,
                # Against the target while a reassignment runs (KIP-352): copying is not
                # under-replication.
                "under_replicated": len(isr) < len(target),
                "offline": p.leader < 0 or p.leader not in up,
                "reassignment": reassignment,
            }
        )
    return partitions


async def _reassignments(ops: KafkaOps, partitions=None) -> dict[tuple[str, int], dict]:
    """(topic, partition) -> its reassignment in progress (all, or of `partitions`)."""
    try:
        rows = await partition_moves.list_reassignments(ops.admin, partitions)
    except KafkaClientError:  # a controller in the middle of changing: none this round
        return {}
    return {(row["topic_name"], row["partition_id"]): row for row in rows}


async def _replica_views(admin: AdminApi, topic: str, info) -> tuple[dict[int, dict], set[int]]:
    """(broker id -> partition id -> that broker's view of its replica, the brokers whose
    admin API did not answer), asking every replica's broker at once."""
    if not await asyncio.to_thread(lambda: admin.available):
        return {}, set()
    brokers = sorted({b for p in info.partitions.values() for b in p.replicas})
    unreachable: set[int] = set()

    async def ask(broker_id: int) -> dict[int, dict]:
        try:
            answer = await asyncio.to_thread(admin.topic_partitions, broker_id, topic)
        except AdminApiError as exc:
            if exc.unreachable:
                unreachable.add(broker_id)
            return {}
        return {int(v["partition"]): v for v in answer.get("partitions", [])}

    views = await asyncio.gather(*(ask(b) for b in brokers))
    if unreachable:
        await asyncio.to_thread(admin.rediscover)
    return dict(zip(brokers, views, strict=True)), unreachable


async def partition_segments(ops: KafkaOps, admin: AdminApi, topic: str, partition: int) -> dict:
    """The partition's segments on its leader, with what retention and compaction will do
    next (the admin API computes it); `segments` oldest first."""
    metadata = await ops.refresh([topic])
    info = metadata.topics.get(topic)
    if info is None or partition not in info.partitions:
        raise KafkaResponseError(3, None, f"{topic}-{partition}")
    leader = info.partitions[partition].leader
    if leader < 0:
        raise AdminApiError(503, f"{topic}-{partition} has no leader")
    view = await asyncio.to_thread(admin.segments, leader, topic, partition)
    view["leader"] = leader
    view["cleanup_policy"] = ",".join(view.get("config", {}).get("cleanup.policy") or [])
    return view
