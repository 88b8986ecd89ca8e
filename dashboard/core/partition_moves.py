"""Leader elections (ElectLeaders) and replica reassignments (AlterPartitionReassignments,
ListPartitionReassignments) as plain JSON-ready rows, for the REST API and the live pages.

Kafka answers both per partition; each row says what happened in Kafka's own words
(`ELECTION_NOT_NEEDED`, `PREFERRED_LEADER_NOT_AVAILABLE`, ...), so one bad partition never
hides what happened to the others.
"""

from __future__ import annotations

from collections.abc import Iterable

from brokerd.client.admin import AdminClient
from brokerd.client.errors import ErrorCode, KafkaResponseError
from brokerd.client.results import AdminError

ELECTED = "ELECTED"
ELECTION_TYPES = ("PREFERRED", "UNCLEAN")
# What each per-partition outcome means to an operator.
OUTCOMES = {
    ErrorCode.none: "the leader moved",
    ErrorCode.election_not_needed: "the partition already has that leader",
    ErrorCode.preferred_leader_not_available: (
        "the preferred leader (first assigned replica) is down or out of the ISR"
    ),
    ErrorCode.eligible_leaders_not_available: "no live replica can lead",
    ErrorCode.unknown_topic_or_partition: "no such partition",
    ErrorCode.invalid_replica_assignment: "the replica list is not valid for this cluster",
    ErrorCode.no_reassignment_in_progress: "no reassignment is in progress",
}

TopicPartition = tuple[str, int]


def _outcome(key: TopicPartition, outcome) -> dict:
    if isinstance(outcome, KafkaResponseError):
        code, detail = outcome.error_code, outcome.message
    else:
        code, detail = ErrorCode(outcome), None
    return {
        "topic_name": key[0],
        "partition_id": key[1],
        "result": ELECTED if code == ErrorCode.none else code.name.upper(),
        "error_code": int(code),
        "message": OUTCOMES.get(code) or detail or code.name.upper(),
    }


def _per_partition(exc: AdminError) -> dict:
    return {**exc.results, **exc.errors}


async def elect_leaders(
    admin: AdminClient, election_type: str, partitions: Iterable[TopicPartition] | None
) -> list[dict]:
    """One row per partition Kafka answered for (all partitions: only those that moved)."""
    wanted = None if partitions is None else sorted(set(partitions))
    try:
        results = await admin.elect_leaders(election_type.lower(), wanted)
    except AdminError as exc:
        results = _per_partition(exc)
    return [_outcome(key, results[key]) for key in sorted(results)]


def reassignment_row(key: TopicPartition, ongoing) -> dict:
    return {
        "topic_name": key[0],
        "partition_id": key[1],
        "replicas": list(ongoing.replicas),
        "target_replicas": list(ongoing.target_replicas),
        "adding_replicas": list(ongoing.adding_replicas),
        "removing_replicas": list(ongoing.removing_replicas),
    }


async def list_reassignments(
    admin: AdminClient, partitions: Iterable[TopicPartition] | None = None
) -> list[dict]:
    """The reassignments in progress (of `partitions`, or all), by topic and partition."""
    wanted = None if partitions is None else sorted(set(partitions))
    ongoing = await admin.list_partition_reassignments(wanted)
    return [reassignment_row(key, ongoing[key]) for key in sorted(ongoing)]


async def reassign(admin: AdminClient, key: TopicPartition, replicas: list[int] | None) -> None:
    """Move a partition to `replicas` (the first one becomes its preferred leader), or cancel
    its reassignment (None). A per-partition refusal raises its KafkaResponseError."""
    try:
        await admin.alter_partition_reassignments({key: replicas})
    except AdminError as exc:
        raise exc.errors[key] from None
