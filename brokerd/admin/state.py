"""JSON-ready views of the broker's partitions and cleaner, read without changing anything.

The field names here are the admin API's contract (docs/admin-api.md); the Django platform
reads them. Partition views are cheap (no file I/O) and safe on the event loop; segment
views read index files and segment headers, so callers run them in a thread.
"""

from __future__ import annotations

import os
from typing import Any

from brokerd.log.log import Log

from .context import AdminContext


def local_partitions(ctx: AdminContext) -> list[tuple[str, int]]:
    """Every partition with a log in this broker's log dirs, loaded or offline, sorted."""
    manager = ctx.log_manager
    return sorted({*manager.logs, *manager.offline_partitions})


def offline_count(ctx: AdminContext) -> int:
    return len(ctx.log_manager.offline_partitions)


def partition_views(
    ctx: AdminContext, topic: str | None = None, partition: int | None = None
) -> list[dict[str, Any]]:
    return [
        partition_view(ctx, t, p)
        for t, p in local_partitions(ctx)
        if (topic is None or t == topic) and (partition is None or p == partition)
    ]


def partition_view(ctx: AdminContext, topic: str, partition: int) -> dict[str, Any]:
    """Leader, epoch, ISR, offsets, size and per-replica LEO and lag of one local partition.

    Today the local replica is the only one with a known LEO; once replication tracks
    followers, `Partition.replica_states[broker_id]` (anything with
    `log_end_offset` and `last_caught_up_ms`) fills in theirs without changing the JSON.
    """
    me = ctx.broker_id
    manager = ctx.log_manager
    log = manager.get_log(topic, partition)
    znode = ctx.metadata.partition_state(topic, partition)
    info = ctx.metadata.topic(topic)
    led = ctx.replicas.leaders.get((topic, partition))
    assigned = list(info.assignment.get(partition, [])) if info else []
    # During a reassignment the assignment is target + original replicas (KIP-455).
    adding = list(info.adding.get(partition, [])) if info else []
    removing = list(info.removing.get(partition, [])) if info else []
    target = [r for r in assigned if r not in removing]
    leader = znode.leader if znode else -1
    leader_epoch = led.leader_epoch if led else (znode.leader_epoch if znode else -1)
    isr = list(led.isr) if led else (list(znode.isr) if znode else [])
    view: dict[str, Any] = {
        "topic": topic,
        "partition": partition,
        "status": "online" if log is not None else "offline",
        "leader": leader,
        "leader_epoch": leader_epoch,
        "is_leader": led is not None,
        "isr": isr,
        "assigned_replicas": assigned,
        "adding_replicas": adding,
        "removing_replicas": removing,
        # Against the target replicas, as Kafka counts since KIP-352: a partition is not
        # under-replicated just because replicas are being added.
        "under_replicated": led is not None and len(isr) < len(target),
    }
    if log is None:
        reason = manager.offline_partitions.get((topic, partition))
        view.update(
            error=reason or "no local log",
            high_watermark=None,
            log_end_offset=None,
            log_start_offset=None,
            last_stable_offset=None,
            size_bytes=None,
            segment_count=None,
            replicas=[],
        )
        return view
    segments = log.segments
    leo = log.log_end_offset
    view.update(
        high_watermark=log.high_watermark,
        last_stable_offset=log.last_stable_offset,
        log_end_offset=leo,
        log_start_offset=log.log_start_offset,
        recovery_point=log.recovery_point,
        size_bytes=sum(s.size for s in segments),
        segment_count=len(segments),
        cleanup_policy=_cleanup_policy(log),
        dir=str(log.dir),
        replicas=_replica_views(me, assigned, isr, led, leo),
    )
    return view


def _replica_views(me: int, assigned: list[int], isr: list[int], led, leader_leo: int) -> list:
    followers = getattr(led, "replica_states", None) or {}
    out = []
    for broker_id in assigned or [me]:
        replica_leo: int | None
        if broker_id == me:
            replica_leo, caught_up = leader_leo, None
        else:
            remote = followers.get(broker_id)
            replica_leo = getattr(remote, "log_end_offset", None)
            caught_up = getattr(remote, "last_caught_up_ms", None)
        out.append(
            {
                "broker_id": broker_id,
                "is_leader": led is not None and broker_id == me,
                "local": broker_id == me,
                "in_sync": broker_id in isr,
                "log_end_offset": replica_leo,
                # Lag in messages behind the leader's LEO, known only on the leader.
                "lag": leader_leo - replica_leo
                if led is not None and replica_leo is not None
                else None,
                "last_caught_up_ms": caught_up,
            }
        )
    return out


def _cleanup_policy(log: Log) -> list[str]:
    return [p for p, on in (("delete", log.config.delete), ("compact", log.config.compact)) if on]


def cleaner_view(stats, last_report) -> dict[str, Any]:
    """One compacted log's cleaner state: DirtyStats plus the last CleanReport."""
    return {
        "topic": stats.topic,
        "partition": stats.partition,
        "dirty_ratio": stats.dirty_ratio,
        "clean_bytes": stats.clean_bytes,
        "dirty_bytes": stats.dirty_bytes,
        "first_dirty_offset": stats.first_dirty_offset,
        "first_uncleanable_offset": stats.first_uncleanable_offset,
        "needs_compaction_now": stats.needs_compaction_now,
        "last_run_ms": last_report.started_ms if last_report is not None else None,
        "last_report": clean_report_view(last_report) if last_report is not None else None,
    }


def clean_report_view(report) -> dict[str, Any]:
    data = report.as_dict()
    data["bytes_removed"] = report.bytes_removed
    data["records_removed"] = report.records_read - report.records_kept
    data.pop("group_bases", None)  # internal to the cleaner's grouping
    return data


def file_times_ms(path) -> int | None:
    try:
        return int(os.stat(path).st_mtime * 1000)
    except OSError:  # renamed (.deleted, .swap) or removed meanwhile
        return None
