"""One broker as the broker page shows it: its log dirs (DescribeLogDirs: size of the
replicas on each, disk total and usable, offline dirs with Kafka's error name) and the
partitions it leads and follows (Metadata), with the ones out of the ISR named."""

from __future__ import annotations

from typing import Any

from brokerd.client.errors import ErrorCode, KafkaClientError, error_code

from .kafka import KafkaOps, error_text

PARTITIONS_SHOWN = 500


async def broker_view(ops: KafkaOps, broker_id: int) -> dict[str, Any]:
    metadata = await ops.refresh()
    info = metadata.brokers.get(broker_id)
    led, followed = [], []
    for name in sorted(metadata.topics):
        topic = metadata.topics[name]
        for pid in sorted(topic.partitions):
            p = topic.partitions[pid]
            if broker_id not in p.replicas:
                continue
            row = {
                "topic_name": name,
                "partition_id": pid,
                "leader": p.leader if p.leader >= 0 else None,
                "replicas": list(p.replicas),
                "in_sync": broker_id in p.isr,
            }
            (led if p.leader == broker_id else followed).append(row)
    dirs, dirs_error = [], None
    if info is not None:
        try:
            described = (await ops.admin.describe_log_dirs([broker_id]))[broker_id]
        except KafkaClientError as exc:
            described, dirs_error = [], error_text(exc)
        for d in sorted(described, key=lambda d: d.path):
            code = error_code(d.error_code)
            dirs.append(
                {
                    "path": d.path,
                    "online": code == ErrorCode.none,
                    "error": None if code == ErrorCode.none else code.name,
                    "replicas": sum(1 for r in d.replicas.values() if not r.is_future),
                    "future_replicas": sum(1 for r in d.replicas.values() if r.is_future),
                    "size_bytes": sum(r.size for r in d.replicas.values()),
                    "total_bytes": d.total_bytes if d.total_bytes >= 0 else None,
                    "usable_bytes": d.usable_bytes if d.usable_bytes >= 0 else None,
                }
            )
    return {
        "broker_id": broker_id,
        "up": info is not None,
        "address": info.address if info else None,
        "rack": info.rack if info else None,
        "is_controller": broker_id == metadata.controller_id,
        "log_dirs": dirs,
        "log_dirs_error": dirs_error,
        "size_bytes": sum(d["size_bytes"] for d in dirs),
        "led_count": len(led),
        "followed_count": len(followed),
        "out_of_sync_count": sum(1 for r in followed if not r["in_sync"]),
        "led": led[:PARTITIONS_SHOWN],
        "followed": followed[:PARTITIONS_SHOWN],
        "shown_max": PARTITIONS_SHOWN,
    }
