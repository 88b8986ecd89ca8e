"""Snapshots of a cluster as plain JSON-ready dicts, shared by the REST API and the live pages.

The Kafka protocol gives brokers, controller, leaders, ISR, high watermark and log start
(Metadata, ListOffsets); the admin API adds what the protocol lacks: each replica's log end
offset and size on disk.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from brokerd.client.errors import KafkaResponseError

from .admin_api import AdminApi, AdminApiError
from .kafka import EARLIEST, LATEST, KafkaOps

TOPICS_SHOWN = 200


def overview(metadata) -> dict[str, Any]:
    """Brokers up or down, controller, topic and partition counts, URP and offline; the
    first topic names (the page lists a bounded number; the API paginates)."""
    known = set(metadata.brokers)
    under_replicated = offline = partitions = 0
    for topic in metadata.topics.values():
        for p in topic.partitions.values():
            partitions += 1
            known.update(p.replicas)
            if p.leader < 0 or p.leader not in metadata.brokers:
                offline += 1
            elif len(p.isr) < len(p.replicas):
                under_replicated += 1
    brokers = []
    for broker_id in sorted(known):
        info = metadata.brokers.get(broker_id)
        brokers.append(
            {
                "broker_id": broker_id,
                "address": info.address if info else None,
                "rack": info.rack if info else None,
                "up": info is not None,
                "is_controller": broker_id == metadata.controller_id,
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
        "topics": sorted(metadata.topics)[:TOPICS_SHOWN],
        "taken_at_ms": int(time.time() * 1000),
    }


def _value(result):
    return None if isinstance(result, Exception) else result


async def topic_partitions(ops: KafkaOps, admin: AdminApi | None, topic: str) -> list[dict]:
    """Per partition: leader, epoch, replicas, ISR, HW, log start, and per replica LEO/size."""
    metadata = await ops.refresh([topic])
    info = metadata.topics.get(topic)
    if info is None:
        raise KafkaResponseError(3, None, f"topic {topic}")
    ids = sorted(info.partitions)
    high, low = await asyncio.gather(
        ops.list_offsets(topic, ids, LATEST), ops.list_offsets(topic, ids, EARLIEST)
    )
    replica_views = await _replica_views(admin, metadata, topic, info) if admin else {}
    partitions = []
    for pid in ids:
        p = info.partitions[pid]
        replicas = []
        for broker_id in p.replicas:
            view = replica_views.get(broker_id, {}).get(pid)
            replicas.append(
                {
                    "broker_id": broker_id,
                    "is_leader": broker_id == p.leader,
                    "in_sync": broker_id in p.isr,
                    "up": broker_id in metadata.brokers,
                    "log_end_offset": view.get("log_end_offset") if view else None,
                    "size_bytes": view.get("size_bytes") if view else None,
                }
            )
        leader_size = next((r["size_bytes"] for r in replicas if r["is_leader"]), None)
        partitions.append(
            {
                "partition_id": pid,
                "leader": p.leader if p.leader >= 0 else None,
                "leader_epoch": p.leader_epoch,
                "replicas": replicas,
                "isr": list(p.isr),
                "high_watermark": _value(high[pid]),
                "log_start_offset": _value(low[pid]),
                "size_bytes": leader_size,
                "under_replicated": len(p.isr) < len(p.replicas),
                "offline": p.leader < 0 or p.leader not in metadata.brokers,
            }
        )
    return partitions


async def _replica_views(admin: AdminApi, metadata, topic: str, info) -> dict[int, dict]:
    """broker id -> partition id -> that broker's own view of its replica (admin API)."""
    brokers = sorted(
        {b for p in info.partitions.values() for b in p.replicas if b in metadata.brokers}
    )

    async def ask(broker_id: int) -> dict[int, dict]:
        try:
            answer = await asyncio.to_thread(admin.topic_partitions, broker_id, topic)
        except AdminApiError:
            return {}
        return {int(v["partition"]): v for v in answer.get("partitions", [])}

    if not await asyncio.to_thread(lambda: admin.available):
        return {}
    views = await asyncio.gather(*(ask(b) for b in brokers))
    return dict(zip(brokers, views, strict=True))


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
