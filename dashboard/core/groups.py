"""Consumer groups as the platform shows them: pages of groups, members, per-partition lag,
lag summaries, offset resets and deletion, over brokerd.client's AdminClient (ListGroups,
DescribeGroups, OffsetFetch, ListOffsets, OffsetCommit, DeleteGroups).

Every call is bounded by what it shows: a page of groups describes only that page's groups.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from brokerd.client.admin import AdminClient
from brokerd.client.errors import ErrorCode, KafkaResponseError
from brokerd.client.results import AdminError, GroupDescription

from .kafka import latest_offsets

INACTIVE_STATES = ("Empty", "Dead")
RESET_TARGETS = ("earliest", "latest", "timestamp", "offset", "shift")


class GroupNotFound(Exception):
    def __init__(self, group_id: str):
        super().__init__(f"consumer group {group_id!r} not found")
        self.group_id = group_id


class NothingToShift(ValueError):
    """A shift moves committed offsets: partitions without one have nothing to move."""

    def __init__(self, partitions: list[tuple[str, int]]):
        names = ", ".join(f"{t}-{p}" for t, p in partitions[:5])
        more = f" and {len(partitions) - 5} more" if len(partitions) > 5 else ""
        super().__init__(f"no committed offset to shift for {names}{more}")


class GroupNotInactive(Exception):
    """Offsets of a group with live members are theirs to commit (Kafka's rule)."""

    def __init__(self, group_id: str, state: str):
        super().__init__(
            f"offsets can only be reset while the group {group_id!r} is inactive, "
            f"but its state is {state}"
        )
        self.state = state


def rest_state(state: str | None) -> str:
    """Kafka's state names as REST Proxy v3 spells them: PreparingRebalance -> PREPARING_REBALANCE."""
    if not state:
        return "UNKNOWN"
    out = []
    for i, ch in enumerate(state):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.upper())
    return "".join(out)


def _unwrap(exc: AdminError) -> BaseException:
    return next(iter(exc.errors.values()))


async def describe(admin: AdminClient, group_id: str) -> GroupDescription:
    """The group, or GroupNotFound when the coordinator knows nothing of it."""
    try:
        description = (await admin.describe_groups([group_id]))[group_id]
    except AdminError as exc:
        inner = _unwrap(exc)
        if isinstance(inner, KafkaResponseError) and inner.error_code in (
            ErrorCode.group_id_not_found,
            ErrorCode.invalid_group_id,
        ):
            raise GroupNotFound(group_id) from None
        raise inner from None
    if description.state == "Dead":
        raise GroupNotFound(group_id)
    return description


async def group_page(admin: AdminClient, after: str, size: int) -> tuple[list[dict], bool]:
    """Groups sorted by id after `after`: at most `size`, each described; and whether more
    follow. One ListGroups per broker, then one DescribeGroups per coordinator for all the
    groups shown (the client batches them), not one per group."""
    listings = [g for g in await admin.list_groups() if g.group_id > after]
    shown, more = listings[:size], len(listings) > size
    described: dict[str, GroupDescription] = {}
    if shown:
        try:
            described = await admin.describe_groups([g.group_id for g in shown])
        except AdminError as exc:  # the groups that failed are shown from their listing
            described = exc.results
        except KafkaResponseError:
            described = {}
    return [
        group_summary(g.group_id, described.get(g.group_id), g.state, g.protocol_type, g.group_type)
        for g in shown
    ], more


def group_summary(
    group_id: str,
    description: GroupDescription | None,
    state: str | None = None,
    protocol_type: str | None = None,
    group_type: str | None = None,
) -> dict[str, Any]:
    return {
        "consumer_group_id": group_id,
        # Which protocol the group runs: "classic" (JoinGroup/SyncGroup) or "consumer"
        # (KIP-848's ConsumerGroupHeartbeat), as Kafka 4's ListGroups reports it.
        "type": description.group_type if description else (group_type or "classic"),
        "state": description.state if description else state,
        "protocol_type": description.protocol_type if description else protocol_type,
        # REST Proxy v3: a simple group commits offsets without the group protocol.
        "is_simple": (description.protocol_type if description else protocol_type) == "",
        "partition_assignor": (description.protocol if description else "") or "",
        "coordinator_id": description.coordinator if description else None,
        "members": len(description.members) if description else 0,
    }


async def lag_rows(
    admin: AdminClient, group_id: str, description: GroupDescription
) -> list[dict[str, Any]]:
    """Per partition the group owns or has committed: committed offset, high watermark, lag
    and the member that owns it (kafka-consumer-groups --describe, as data)."""
    committed = await admin.list_consumer_group_offsets(group_id)
    owners = {tp: m for m in description.members for tp in m.assignment}
    partitions = sorted(set(committed) | set(owners))
    ends = await latest_offsets(admin, partitions)  # a deleted topic keeps commits: no end
    rows = []
    for tp in partitions:
        offset = committed.get(tp)
        current = offset.offset if offset is not None and offset.offset >= 0 else None
        end = ends.get(tp)
        member = owners.get(tp)
        rows.append(
            {
                "topic_name": tp[0],
                "partition_id": tp[1],
                "current_offset": current,
                "log_end_offset": end,
                "lag": end - current if current is not None and end is not None else None,
                "consumer_id": member.member_id if member else None,
                "instance_id": member.group_instance_id if member else None,
                "client_id": member.client_id if member else None,
            }
        )
    return rows


def members(description: GroupDescription) -> list[dict[str, Any]]:
    return [
        {
            "consumer_id": m.member_id,
            "instance_id": m.group_instance_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "assignments": [{"topic_name": t, "partition_id": p} for t, p in m.assignment],
        }
        for m in description.members
    ]


def lag_summary(rows: list[dict]) -> dict[str, Any]:
    known = [r for r in rows if r["lag"] is not None]
    worst = max(known, key=lambda r: r["lag"], default=None)
    return {
        "max_lag": worst["lag"] if worst else 0,
        "total_lag": sum(r["lag"] for r in known),
        "max_lag_consumer_id": worst["consumer_id"] if worst else None,
        "max_lag_instance_id": worst["instance_id"] if worst else None,
        "max_lag_client_id": worst["client_id"] if worst else None,
        "max_lag_topic_name": worst["topic_name"] if worst else None,
        "max_lag_partition_id": worst["partition_id"] if worst else None,
    }


async def group_snapshot(admin: AdminClient, group_id: str) -> dict[str, Any]:
    """What the live group page shows: state, members, per-partition lag, summary."""
    description = await describe(admin, group_id)
    rows = await lag_rows(admin, group_id, description)
    return {
        **group_summary(group_id, description),
        "member_list": members(description),
        "lags": rows,
        "lag_summary": lag_summary(rows),
    }


@dataclass(frozen=True)
class ResetRequest:
    to: str  # earliest | latest | timestamp | offset | shift
    value: int | None = None  # the timestamp (ms), the offset, or the shift (may be < 0)
    topics: tuple[tuple[str, tuple[int, ...] | None], ...] = ()  # empty: committed topics
    dry_run: bool = False


async def reset_offsets(admin: AdminClient, group_id: str, req: ResetRequest) -> list[dict]:
    """Plan (and unless dry-run, commit) new offsets, as kafka-consumer-groups --reset-offsets
    does: only for an inactive group; an offset outside the log is clamped to it; a time
    after the last record means the log end; a shift (--shift-by) moves each committed
    offset by `value`, clamped to the log, and needs a committed offset to move."""
    try:
        description = await describe(admin, group_id)
        state = description.state
    except GroupNotFound:
        state = "Dead"  # resetting creates the group's offsets, as Kafka's tool allows
    if state not in INACTIVE_STATES:
        raise GroupNotInactive(group_id, state)
    if req.topics:
        partitions = []
        for topic, listed in req.topics:
            if listed:
                partitions += [(topic, p) for p in listed]
            else:
                ids = await admin.cluster.partitions_for(topic, refresh=True)
                partitions += [(topic, p) for p in sorted(ids)]
    else:
        partitions = sorted(await admin.list_consumer_group_offsets(group_id))
    if not partitions:
        return []
    committed = (
        await admin.list_consumer_group_offsets(group_id, partitions) if state != "Dead" else {}
    )
    earliest, latest = await asyncio.gather(
        _offsets(admin, partitions, "earliest"), _offsets(admin, partitions, "latest")
    )
    if req.to == "earliest":
        planned = earliest
    elif req.to == "latest":
        planned = latest
    elif req.to == "timestamp":
        found = await _offsets(admin, partitions, int(req.value or 0))
        planned = {tp: o if o >= 0 else latest[tp] for tp, o in found.items()}
    elif req.to == "shift":
        missing = [tp for tp in partitions if tp not in committed or committed[tp].offset < 0]
        if missing:
            raise NothingToShift(missing)
        shift = int(req.value or 0)
        planned = {
            tp: min(max(committed[tp].offset + shift, earliest[tp]), latest[tp])
            for tp in partitions
        }
    else:
        planned = {tp: min(max(int(req.value or 0), earliest[tp]), latest[tp]) for tp in partitions}
    if not req.dry_run:
        await admin.commit_offsets(group_id, planned)
    rows = []
    for tp in partitions:
        before = committed.get(tp)
        rows.append(
            {
                "topic_name": tp[0],
                "partition_id": tp[1],
                "previous_offset": before.offset if before and before.offset >= 0 else None,
                "new_offset": planned[tp],
                "log_start_offset": earliest[tp],
                "log_end_offset": latest[tp],
            }
        )
    return rows


async def _offsets(admin: AdminClient, partitions, spec) -> dict:
    listed = await admin.list_offsets(dict.fromkeys(partitions, spec))
    return {tp: found.offset for tp, found in listed.items()}


async def delete_topic_offsets(admin: AdminClient, group_id: str, topic: str) -> int:
    """OffsetDelete of every committed offset the group has for `topic`: how many partitions.
    Kafka refuses (GROUP_SUBSCRIBED_TO_TOPIC) while a member is subscribed to the topic."""
    committed = [tp for tp in await admin.list_consumer_group_offsets(group_id) if tp[0] == topic]
    if not committed:
        return 0
    try:
        await admin.delete_consumer_group_offsets(group_id, committed)
    except AdminError as exc:
        raise _unwrap(exc) from None
    return len(committed)


async def delete_group(admin: AdminClient, group_id: str) -> None:
    try:
        await admin.delete_groups([group_id])
    except AdminError as exc:
        inner = _unwrap(exc)
        if isinstance(inner, KafkaResponseError) and inner.error_code in (
            ErrorCode.group_id_not_found,
            ErrorCode.invalid_group_id,
        ):
            raise GroupNotFound(group_id) from None
        raise inner from None
