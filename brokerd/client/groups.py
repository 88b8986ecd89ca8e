"""Consumer-group admin calls, each sent to the group's coordinator (FindCoordinator).

Offsets are committed standalone (generation -1, no member id), as Kafka's admin tools do
for groups without active members. Lag is the high watermark minus the committed offset.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kio.schema.consumer_protocol_assignment.v0.data import ConsumerProtocolAssignment
from kio.serial import entity_reader

from brokerd.protocol import bounds

from .errors import (
    COORDINATOR_ERRORS,
    ErrorCode,
    KafkaClientError,
    KafkaConnectionError,
    KafkaResponseError,
    check,
    error_code,
)
from .requests import Nested
from .results import (
    CommittedOffset,
    GroupDescription,
    GroupListing,
    MemberDescription,
    PartitionLag,
    raise_for_errors,
)

if TYPE_CHECKING:
    from .cluster import Cluster, TopicPartition

OFFSET_COMMIT = 8
OFFSET_FETCH = 9
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
DELETE_GROUPS = 42
OFFSET_DELETE = 47
CONSUMER_GROUP_DESCRIBE = 69

_read_assignment = entity_reader(ConsumerProtocolAssignment)


def decode_assignment(data: bytes | None) -> tuple[tuple[str, int], ...]:
    """The partitions of a consumer-protocol assignment (every version starts alike)."""
    if not data or len(data) < 2:
        return ()
    try:
        # A member wrote these bytes: lengths are checked before kio's native reader runs.
        bounds.check(ConsumerProtocolAssignment, data, 2)
        assignment, _ = _read_assignment(data, 2)  # after the int16 version
    except Exception:
        return ()  # not the consumer protocol after all
    return tuple((tp.topic, int(p)) for tp in assignment.assigned_partitions for p in tp.partitions)


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return grouped


class GroupAdmin:
    cluster: Cluster

    async def list_groups(self, *, states: Iterable[str] | None = None) -> list[GroupListing]:
        """Groups of every broker (each coordinates some), optionally filtered by state."""
        wanted = None if states is None else [s for s in states]
        brokers = sorted((await self.cluster.refresh_metadata()).brokers)
        values = {"states_filter": wanted or []}
        responses = await asyncio.gather(
            *(self.cluster.call(b, LIST_GROUPS, values) for b in brokers)
        )
        listed: dict[str, GroupListing] = {}
        for response in responses:
            check(response.error_code, None, "ListGroups")
            for group in response.groups:
                state = getattr(group, "group_state", None)
                if wanted and state is not None and state not in wanted:
                    continue
                listed[group.group_id] = GroupListing(
                    group.group_id,
                    group.protocol_type,
                    state,
                    getattr(group, "group_type", None) or "classic",
                )
        return [listed[g] for g in sorted(listed)]

    async def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        """One DescribeGroups per coordinator for all of its groups (as Kafka's admin client
        batches them); a group whose coordinator moved is asked again on its own."""
        ids = list(dict.fromkeys(group_ids))
        results: dict[str, Any] = {}
        by_node: dict[int, list[str]] = {}
        for group_id, node in (await self.cluster.coordinators_for(ids)).items():
            if isinstance(node, Exception):
                results[group_id] = node
            else:
                by_node.setdefault(node, []).append(group_id)

        async def ask(node: int, groups: list[str]) -> list[tuple[str, Any]]:
            values = {"groups": groups, "include_authorized_operations": False}
            try:
                response = await self.cluster.call(node, DESCRIBE_GROUPS, values)
            except KafkaConnectionError:
                return [(g, None) for g in groups]  # asked again on their own
            return [(g.group_id, g) for g in response.groups]

        answers = await asyncio.gather(*(ask(n, gs) for n, gs in by_node.items()))
        alone = []
        for group_id, group in (pair for answer in answers for pair in answer):
            if group is None or error_code(group.error_code) in COORDINATOR_ERRORS:
                self.cluster.forget_coordinator(group_id)
                alone.append(group_id)
            else:
                results[group_id] = await self._described(group_id, group)
        for group_id in alone:
            response = await self.cluster.call_coordinator(
                group_id,
                DESCRIBE_GROUPS,
                {"groups": [group_id], "include_authorized_operations": False},
                lambda r: error_code(r.groups[0].error_code),
            )
            results[group_id] = await self._described(group_id, response.groups[0])
        return raise_for_errors({g: results[g] for g in ids if g in results})

    async def _described(self, group_id: str, group: Any) -> GroupDescription | Exception:
        if group.error_code == ErrorCode.group_id_not_found or (
            not group.error_code and group.group_state == "Dead"
        ):
            # Not a classic group: maybe a consumer group of the new protocol (KIP-848),
            # which Kafka describes with ConsumerGroupDescribe only.
            described = await self._describe_consumer_group(group_id)
            if described is not None:
                return described
        if group.error_code:
            return KafkaResponseError(group.error_code, None, group_id)
        consumer = group.protocol_type == "consumer"
        return GroupDescription(
            group.group_id,
            group.group_state,
            group.protocol_type,
            group.protocol_data,
            tuple(
                MemberDescription(
                    m.member_id,
                    getattr(m, "group_instance_id", None),
                    m.client_id,
                    m.client_host,
                    decode_assignment(m.member_assignment) if consumer else (),
                )
                for m in group.members
            ),
            await self.cluster.coordinator_for(group_id),
        )

    async def _describe_consumer_group(self, group_id: str) -> GroupDescription | None:
        """A KIP-848 group through ConsumerGroupDescribe (69); None when it is none (or the
        broker predates the API)."""
        try:
            response = await self.cluster.call_coordinator(
                group_id,
                CONSUMER_GROUP_DESCRIBE,
                {"group_ids": [group_id], "include_authorized_operations": False},
                lambda r: error_code(r.groups[0].error_code),
            )
        except KafkaClientError:  # UnsupportedVersionError from a broker without it
            return None
        group = response.groups[0]
        if group.error_code:
            return None
        return GroupDescription(
            group.group_id,
            group.group_state,
            "consumer",
            group.assignor_name,
            tuple(
                MemberDescription(
                    m.member_id,
                    m.instance_id,
                    m.client_id,
                    m.client_host,
                    tuple(
                        (tp.topic_name, int(p))
                        for tp in m.assignment.topic_partitions
                        for p in tp.partitions
                    ),
                )
                for m in group.members
            ),
            await self.cluster.coordinator_for(group_id),
            group_type="consumer",
        )

    async def list_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, CommittedOffset]:
        """Committed offsets of the group (all of them, or of `partitions`)."""
        grouped = None if partitions is None else _by_topic(partitions)
        if await self._offset_fetch_version() >= 8:
            response = await self.cluster.call_coordinator(
                group_id,
                OFFSET_FETCH,
                _offset_fetch_groups([group_id], grouped),
                lambda r: error_code(r.groups[0].error_code),
            )
            group = response.groups[0]
            check(group.error_code, None, f"OffsetFetch for {group_id}")
            return raise_for_errors(_committed(group.topics))
        topics = None
        if grouped is not None:
            topics = [
                Nested("OffsetFetchRequestTopic", name=t, partition_indexes=ps)
                for t, ps in grouped.items()
            ]
        response = await self.cluster.call_coordinator(
            group_id,
            OFFSET_FETCH,
            {"group_id": group_id, "topics": topics, "require_stable": False},
            lambda r: error_code(getattr(r, "error_code", 0)),
        )
        check(getattr(response, "error_code", 0), None, f"OffsetFetch for {group_id}")
        return raise_for_errors(_committed(response.topics))

    async def _offset_fetch_version(self) -> int:
        return (await self.cluster.any_connection()).version_for(OFFSET_FETCH)

    async def groups_committed_offsets(
        self, group_ids: Iterable[str]
    ) -> dict[str, dict[TopicPartition, CommittedOffset] | Exception]:
        """Every committed offset of each group, or the error reading them: one OffsetFetch
        per coordinator for all of its groups (v8+ batches groups, as Kafka's admin client
        sends them), else, from an older broker, one request per group in parallel."""
        ids = list(dict.fromkeys(group_ids))
        results: dict[str, Any] = {}
        alone: list[str] = []
        if await self._offset_fetch_version() >= 8:
            by_node: dict[int, list[str]] = {}
            for group_id, node in (await self.cluster.coordinators_for(ids)).items():
                if isinstance(node, Exception):
                    results[group_id] = node
                else:
                    by_node.setdefault(node, []).append(group_id)

            async def ask(node: int, groups: list[str]) -> list[tuple[str, Any]]:
                try:
                    response = await self.cluster.call(
                        node, OFFSET_FETCH, _offset_fetch_groups(groups, None)
                    )
                except KafkaConnectionError:
                    return [(g, None) for g in groups]  # asked again on their own
                return [(g.group_id, g) for g in response.groups]

            answers = await asyncio.gather(*(ask(n, gs) for n, gs in by_node.items()))
            for group_id, group in (pair for answer in answers for pair in answer):
                if group is None or error_code(group.error_code) in COORDINATOR_ERRORS:
                    self.cluster.forget_coordinator(group_id)
                    alone.append(group_id)
                elif group.error_code:
                    results[group_id] = KafkaResponseError(group.error_code, None, group_id)
                else:
                    results[group_id] = _committed(group.topics)
        else:
            alone = ids

        async def one(group_id: str) -> Any:
            try:
                return await self.list_consumer_group_offsets(group_id)
            except KafkaClientError as exc:
                return exc

        for group_id, answer in zip(alone, await asyncio.gather(*map(one, alone)), strict=True):
            results[group_id] = answer
        return {g: results[g] for g in ids if g in results}

    async def commit_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int | CommittedOffset],
    ) -> dict[TopicPartition, None]:
        """Commit offsets for a group with no active members (generation -1)."""
        committed = {
            tp: o if isinstance(o, CommittedOffset) else CommittedOffset(int(o))
            for tp, o in offsets.items()
        }
        topics = [
            Nested(
                "OffsetCommitRequestTopic",
                name=topic,
                partitions=[
                    Nested(
                        "OffsetCommitRequestPartition",
                        partition_index=p,
                        committed_offset=committed[(topic, p)].offset,
                        committed_leader_epoch=committed[(topic, p)].leader_epoch,
                        committed_metadata=committed[(topic, p)].metadata,
                        commit_timestamp=-1,
                    )
                    for p in ps
                ],
            )
            for topic, ps in _by_topic(committed).items()
        ]
        values = {
            "group_id": group_id,
            "generation_id_or_member_epoch": -1,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": topics,
        }
        response = await self.cluster.call_coordinator(
            group_id, OFFSET_COMMIT, values, _first_partition_error
        )
        return raise_for_errors(_partition_errors(response.topics))

    async def delete_groups(self, group_ids: Iterable[str]) -> dict[str, None]:
        results: dict[str, Any] = {}
        for group_id in group_ids:
            response = await self.cluster.call_coordinator(
                group_id,
                DELETE_GROUPS,
                {"groups_names": [group_id]},
                lambda r: error_code(r.results[0].error_code),
            )
            result = response.results[0]
            results[group_id] = (
                KafkaResponseError(result.error_code, None, group_id) if result.error_code else None
            )
        return raise_for_errors(results)

    async def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, None]:
        """OffsetDelete: forget the group's offsets of these partitions (not subscribed)."""
        values = {
            "group_id": group_id,
            "topics": [
                Nested(
                    "OffsetDeleteRequestTopic",
                    name=t,
                    partitions=[
                        Nested("OffsetDeleteRequestPartition", partition_index=p) for p in ps
                    ],
                )
                for t, ps in _by_topic(partitions).items()
            ],
        }
        response = await self.cluster.call_coordinator(
            group_id, OFFSET_DELETE, values, lambda r: error_code(r.error_code)
        )
        check(response.error_code, None, f"OffsetDelete for {group_id}")
        return raise_for_errors(_partition_errors(response.topics))

    async def consumer_group_lag(self, group_id: str) -> dict[TopicPartition, PartitionLag]:
        """Per committed partition: committed offset, high watermark, lag = HW - committed."""
        committed = await self.list_consumer_group_offsets(group_id)
        if not committed:
            return {}
        high = await self.list_offsets(dict.fromkeys(committed, "latest"))  # type: ignore[attr-defined]
        lags = {}
        for tp, commit in sorted(committed.items()):
            hw = high[tp].offset
            lag = hw - commit.offset if commit.offset >= 0 else None
            lags[tp] = PartitionLag(commit.offset, hw, lag)
        return lags


def _offset_fetch_groups(group_ids: list[str], grouped: dict[str, list[int]] | None) -> dict:
    """An OffsetFetch v8+ request for `group_ids` (their `grouped` partitions, or all)."""
    topics = None
    if grouped is not None:
        topics = [
            Nested("OffsetFetchRequestTopics", name=t, partition_indexes=ps)
            for t, ps in grouped.items()
        ]
    return {
        "groups": [
            Nested(
                "OffsetFetchRequestGroup",
                group_id=g,
                member_id=None,
                member_epoch=-1,
                topics=topics,
            )
            for g in group_ids
        ],
        "require_stable": False,
    }


def _committed(topics: Any) -> dict[TopicPartition, Any]:
    results: dict[TopicPartition, Any] = {}
    for topic in topics:
        for p in topic.partitions:
            tp = (topic.name, int(p.partition_index))
            if p.error_code:
                results[tp] = KafkaResponseError(p.error_code, None, f"{tp[0]}-{tp[1]}")
                continue
            results[tp] = CommittedOffset(
                int(p.committed_offset),
                int(getattr(p, "committed_leader_epoch", -1)),
                p.metadata,
            )
    return results


def _partition_errors(topics: Any) -> dict[TopicPartition, Any]:
    return {
        (topic.name, int(p.partition_index)): (
            KafkaResponseError(p.error_code, None, f"{topic.name}-{p.partition_index}")
            if p.error_code
            else None
        )
        for topic in topics
        for p in topic.partitions
    }


def _first_partition_error(response: Any) -> ErrorCode:
    for topic in response.topics:
        for p in topic.partitions:
            if p.error_code:
                return error_code(p.error_code)
    return ErrorCode.none
