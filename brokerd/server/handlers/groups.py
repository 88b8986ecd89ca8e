"""The group APIs: FindCoordinator (10), JoinGroup (11), Heartbeat (12), LeaveGroup (13),
SyncGroup (14), OffsetCommit (8), OffsetFetch (9), DescribeGroups (15), ListGroups (16),
DeleteGroups (42) and OffsetDelete (47).

The rules live in brokerd.groups.coordinator; these handlers translate kio messages of every
advertised version into its calls and its answers back, including where versions differ
(batched keys and members, top-level versus per-partition errors).
"""

from __future__ import annotations

import datetime
import logging

from brokerd.groups import offsets_topic
from brokerd.groups.coordinator import UNSTABLE_OFFSET
from brokerd.groups.group import GroupState
from brokerd.protocol.errors import ErrorCode, KafkaError
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation, ResourceType

from ..connection import current_peer
from .context import HandlerContext
from .metadata import request_listener_name
from .transactions import find_transaction_coordinator

log = logging.getLogger(__name__)

E = ErrorCode
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
OPERATIONS_NOT_REQUESTED = -(1 << 31)


def _ms(value) -> int:
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    return int(value)


def _client_host() -> str:
    peer = current_peer.get()
    return f"/{peer[0]}" if peer else ""


# FindCoordinator --------------------------------------------------------------------------------
async def _find(ctx: HandlerContext, key: str, key_type: int) -> dict:
    missing = {"node_id": -1, "host": "", "port": -1}
    denied = _find_denied(ctx, key, key_type)  # ACLs: DESCRIBE on the group / id
    if denied is not None:
        return {**missing, "error_code": denied, "error_message": None}
    if key_type == TRANSACTION_KEY_TYPE:
        return await find_transaction_coordinator(ctx, key, request_listener_name(ctx.config))
    if key_type != GROUP_KEY_TYPE:
        return {
            **missing,
            "error_code": E.invalid_request,
            "error_message": f"unsupported coordinator key type {key_type}",
        }
    try:
        await ctx.groups.ensure_offsets_topic()
    except KafkaError as exc:
        log.warning("creating %s failed: %s", offsets_topic.TOPIC, exc)
        return {**missing, "error_code": E.coordinator_not_available, "error_message": None}
    leader = ctx.groups.coordinator_for(key)
    info = ctx.metadata.brokers.get(leader) if leader is not None else None
    endpoint = info.endpoint(request_listener_name(ctx.config)) if info is not None else None
    if endpoint is None:
        return {**missing, "error_code": E.coordinator_not_available, "error_message": None}
    return {
        "node_id": leader,
        "host": endpoint.host,
        "port": endpoint.port,
        "error_code": E.none,
        "error_message": None,
    }


def _find_denied(ctx: HandlerContext, key: str, key_type: int) -> ErrorCode | None:
    if key_type == GROUP_KEY_TYPE and not ctx.auth.group(AclOperation.DESCRIBE, key):
        return E.group_authorization_failed
    if key_type == TRANSACTION_KEY_TYPE and not ctx.auth.authorize(
        AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
    ):
        return E.transactional_id_authorization_failed
    return None


async def handle_find_coordinator(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    key_type = getattr(body, "key_type", GROUP_KEY_TYPE)
    if request.api_version >= 4:
        coordinators = []
        for key in body.coordinator_keys:
            found = await _find(ctx, key, key_type)
            coordinators.append(build(module.Coordinator, key=key, **found))
        return build(
            module.FindCoordinatorResponse,
            throttle_time=NO_THROTTLE,
            coordinators=tuple(coordinators),
        )
    found = await _find(ctx, body.key, key_type)
    return build(module.FindCoordinatorResponse, throttle_time=NO_THROTTLE, **found)


# JoinGroup / SyncGroup / Heartbeat / LeaveGroup --------------------------------------------
async def handle_join_group(ctx: HandlerContext, request: Request):
    body = request.body
    version = request.api_version
    module = response_module(request.api_key, version)
    if not ctx.auth.group(AclOperation.READ, body.group_id):
        return build(
            module.JoinGroupResponse,
            throttle_time=NO_THROTTLE,
            error_code=E.group_authorization_failed,
            generation_id=-1,
            protocol_type=None,
            protocol_name=None if version >= 7 else "",
            leader="",
            skip_assignment=False,
            member_id=body.member_id,
            members=(),
        )
    result = await ctx.groups.join_group(
        group_id=body.group_id,
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        client_id=request.client_id or "",
        client_host=_client_host(),
        session_timeout_ms=_ms(body.session_timeout),
        rebalance_timeout_ms=_ms(getattr(body, "rebalance_timeout", body.session_timeout)),
        protocol_type=body.protocol_type,
        protocols=[(p.name, p.metadata) for p in body.protocols],
        require_known_member_id=version >= 4,
        supports_skip_assignment=version >= 9,
    )
    nullable_protocol = version >= 7
    return build(
        module.JoinGroupResponse,
        throttle_time=NO_THROTTLE,
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name
        if result.protocol_name is not None or nullable_protocol
        else "",
        leader=result.leader_id,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=tuple(
            build(
                module.JoinGroupResponseMember,
                member_id=member_id,
                group_instance_id=instance_id,
                metadata=metadata,
            )
            for member_id, instance_id, metadata in result.members
        ),
    )


async def handle_sync_group(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    if not ctx.auth.group(AclOperation.READ, body.group_id):
        return build(
            module.SyncGroupResponse,
            throttle_time=NO_THROTTLE,
            error_code=E.group_authorization_failed,
            protocol_type=None,
            protocol_name=None,
            assignment=b"",
        )
    error, assignment, group = await ctx.groups.sync_group(
        group_id=body.group_id,
        generation_id=body.generation_id,
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        protocol_type=getattr(body, "protocol_type", None),
        protocol_name=getattr(body, "protocol_name", None),
        assignments={a.member_id: a.assignment for a in body.assignments},
    )
    return build(
        module.SyncGroupResponse,
        throttle_time=NO_THROTTLE,
        error_code=error,
        protocol_type=group.protocol_type if group is not None and not error else None,
        protocol_name=group.protocol_name if group is not None and not error else None,
        assignment=assignment,
    )


async def handle_heartbeat(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    if not ctx.auth.group(AclOperation.READ, body.group_id):
        return build(
            module.HeartbeatResponse,
            throttle_time=NO_THROTTLE,
            error_code=E.group_authorization_failed,
        )
    error = ctx.groups.heartbeat(
        body.group_id,
        body.generation_id,
        body.member_id,
        getattr(body, "group_instance_id", None),
    )
    return build(module.HeartbeatResponse, throttle_time=NO_THROTTLE, error_code=error)


async def handle_leave_group(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    if request.api_version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in body.members]
    else:
        leaving = [(body.member_id, None)]
    if not ctx.auth.group(AclOperation.READ, body.group_id):
        return build(
            module.LeaveGroupResponse,
            throttle_time=NO_THROTTLE,
            error_code=E.group_authorization_failed,
            members=(),
        )
    error, results = ctx.groups.leave_group(body.group_id, leaving)
    if request.api_version < 3:
        # One member, one error: the member's own error becomes the response's.
        if not error and results:
            error = results[0][2]
        return build(module.LeaveGroupResponse, throttle_time=NO_THROTTLE, error_code=error)
    return build(
        module.LeaveGroupResponse,
        throttle_time=NO_THROTTLE,
        error_code=error,
        members=tuple(
            build(
                module.MemberResponse,
                member_id=member_id,
                group_instance_id=instance_id,
                error_code=member_error,
            )
            for member_id, instance_id, member_error in results
        ),
    )


# OffsetCommit / OffsetFetch ---------------------------------------------------------------
async def handle_offset_commit(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    retention = getattr(body, "retention_time", None)
    retention_ms = _ms(retention) if retention is not None else -1
    requested: dict[tuple[str, int], tuple[int, int | None, str | None]] = {}
    unknown: dict[tuple[str, int], int] = {}
    group_allowed = ctx.auth.group(AclOperation.READ, body.group_id)
    readable = ctx.auth.filter(AclOperation.READ, ResourceType.TOPIC, (t.name for t in body.topics))
    for topic in body.topics:
        info = ctx.metadata.topic(topic.name)
        for partition in topic.partitions:
            key = (topic.name, partition.partition_index)
            # ACLs: READ on the group, then on each topic. A refused partition is never
            # committed (before, only unknown partitions skipped the commit).
            if not group_allowed:
                unknown[key] = E.group_authorization_failed
            elif topic.name not in readable:
                unknown[key] = E.topic_authorization_failed
            elif info is None or partition.partition_index not in info.assignment:
                unknown[key] = E.unknown_topic_or_partition
            else:
                requested[key] = (
                    partition.committed_offset,
                    getattr(partition, "committed_leader_epoch", -1),
                    partition.committed_metadata,
                )
    errors = dict(unknown)
    if requested:
        errors.update(
            await ctx.groups.commit_offsets(
                body.group_id,
                body.generation_id_or_member_epoch,
                body.member_id,
                getattr(body, "group_instance_id", None),
                retention_ms,
                requested,
            )
        )
    return build(
        module.OffsetCommitResponse,
        throttle_time=NO_THROTTLE,
        topics=tuple(
            build(
                module.OffsetCommitResponseTopic,
                name=topic.name,
                partitions=tuple(
                    build(
                        module.OffsetCommitResponsePartition,
                        partition_index=p.partition_index,
                        error_code=errors.get((topic.name, p.partition_index), E.none),
                    )
                    for p in topic.partitions
                ),
            )
            for topic in body.topics
        ),
    )


def _fetched_topics(
    module, topic_cls, partition_cls, error, offsets, requested_topics, readable=None
):
    """Topics of an OffsetFetch answer: as requested, or every committed one (topics null);
    with ACLs, only topics in `readable` (requested others: TOPIC_AUTHORIZATION_FAILED)."""
    if requested_topics is None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(offsets):
            if readable is not None and topic not in readable:
                continue
            by_topic.setdefault(topic, []).append(partition)
        requested_topics = list(by_topic.items())
    out = []
    for name, partitions in requested_topics:
        rows = []
        denied = readable is not None and name not in readable
        for partition in partitions:
            value = None if denied else offsets.get((name, partition))
            rows.append(
                build(
                    partition_cls,
                    partition_index=partition,
                    committed_offset=value.offset if value else -1,
                    committed_leader_epoch=value.leader_epoch if value else -1,
                    metadata=value.metadata if value else "",
                    error_code=E.topic_authorization_failed if denied else _error(value, error),
                )
            )
        out.append(build(topic_cls, name=name, partitions=tuple(rows)))
    return tuple(out)


def _error(value, error: int) -> int:
    """A partition's OffsetFetch error: UNSTABLE_OFFSET_COMMIT while a transaction holds
    its offset pending (require_stable), else the group's."""
    return E.unstable_offset_commit if value is UNSTABLE_OFFSET else error


def _require_stable(body) -> bool:
    return bool(getattr(body, "require_stable", False))


def _fetch_group(
    ctx: HandlerContext, group_id: str, topics, require_stable: bool = False
) -> tuple[int, dict, list | None]:
    requested = None
    if topics is not None:
        requested = [(t.name, list(t.partition_indexes)) for t in topics]
    partitions = None
    if requested is not None:
        partitions = [(name, p) for name, ps in requested for p in ps]
    if not ctx.auth.group(AclOperation.READ, group_id):  # ACLs: READ on the group
        return E.group_authorization_failed, {}, requested
    error, offsets = ctx.groups.fetch_offsets(group_id, partitions, require_stable)
    return error, offsets, requested


def _readable(ctx: HandlerContext, offsets: dict, requested) -> set[str] | None:
    """Topics whose offsets the principal may see (READ on the topic); None: no ACLs."""
    if not ctx.auth.enabled:
        return None
    names = [name for name, _ in requested] if requested is not None else [t for t, _ in offsets]
    return ctx.auth.filter(AclOperation.READ, ResourceType.TOPIC, names)


async def handle_offset_fetch(ctx: HandlerContext, request: Request):
    body = request.body
    version = request.api_version
    module = response_module(request.api_key, version)
    if version >= 8:
        groups = []
        for group in body.groups:
            error, offsets, requested = _fetch_group(
                ctx, group.group_id, group.topics, _require_stable(body)
            )
            groups.append(
                build(
                    module.OffsetFetchResponseGroup,
                    group_id=group.group_id,
                    error_code=error,
                    topics=_fetched_topics(
                        module,
                        module.OffsetFetchResponseTopics,
                        module.OffsetFetchResponsePartitions,
                        E.none,
                        offsets,
                        requested if not error else [],
                        _readable(ctx, offsets, requested),
                    ),
                )
            )
        return build(module.OffsetFetchResponse, throttle_time=NO_THROTTLE, groups=tuple(groups))
    error, offsets, requested = _fetch_group(ctx, body.group_id, body.topics, _require_stable(body))
    if version < 2:
        # v1 has no top-level error: each requested partition carries it.
        topics = _fetched_topics(
            module,
            module.OffsetFetchResponseTopic,
            module.OffsetFetchResponsePartition,
            error,
            offsets,
            requested or [],
            _readable(ctx, offsets, requested),
        )
        return build(module.OffsetFetchResponse, topics=topics)
    topics = _fetched_topics(
        module,
        module.OffsetFetchResponseTopic,
        module.OffsetFetchResponsePartition,
        E.none,
        offsets,
        requested if not error else [],
        _readable(ctx, offsets, requested),
    )
    return build(
        module.OffsetFetchResponse, throttle_time=NO_THROTTLE, topics=topics, error_code=error
    )


# ListGroups / DescribeGroups / DeleteGroups / OffsetDelete ----------------------------------------
async def handle_list_groups(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    error, overviews = ctx.groups.list_groups()
    if not ctx.auth.cluster(AclOperation.DESCRIBE):  # else only groups it may DESCRIBE
        visible = ctx.auth.filter(
            AclOperation.DESCRIBE, ResourceType.GROUP, (o.group_id for o in overviews)
        )
        overviews = [o for o in overviews if o.group_id in visible]
    states = {s.lower() for s in getattr(body, "states_filter", ()) or ()}
    types = {t.lower() for t in getattr(body, "types_filter", ()) or ()}
    listed = []
    for overview in overviews:
        if states and overview.state.lower() not in states:
            continue
        if types and overview.group_type not in types:
            continue
        listed.append(
            build(
                module.ListedGroup,
                group_id=overview.group_id,
                protocol_type=overview.protocol_type,
                group_state=overview.state,
                group_type=overview.group_type,
            )
        )
    return build(
        module.ListGroupsResponse,
        throttle_time=NO_THROTTLE,
        error_code=error,
        groups=tuple(listed),
    )


def _described_group(module, version: int, group_id: str, error, group, operations: int):
    # A consumer group (KIP-848) is described by ConsumerGroupDescribe; DescribeGroups
    # answers as Kafka does for a group that is not a classic group.
    not_classic = group is not None and group.consumer is not None
    if group is None or group.is_in(GroupState.DEAD) or not_classic:
        if not error and version >= 6:
            error = E.group_id_not_found
        return build(
            module.DescribedGroup,
            error_code=error,
            error_message=f"Group {group_id} is not a classic group." if not_classic else None,
            group_id=group_id,
            group_state=GroupState.DEAD.value,
            protocol_type="",
            protocol_data="",
            members=(),
            authorized_operations=operations,
        )
    stable = group.is_in(GroupState.STABLE)
    members = tuple(
        build(
            module.DescribedGroupMember,
            member_id=member.member_id,
            group_instance_id=member.group_instance_id,
            client_id=member.client_id,
            client_host=member.client_host,
            member_metadata=member.metadata(group.protocol_name) if stable else b"",
            member_assignment=member.assignment if stable else b"",
        )
        for member in group.members.values()
    )
    return build(
        module.DescribedGroup,
        error_code=E.none,
        error_message=None,
        group_id=group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=members,
        authorized_operations=operations,
    )


async def handle_describe_groups(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    include_operations = getattr(body, "include_authorized_operations", False)
    described = []
    for group_id in body.groups:
        if not ctx.auth.group(AclOperation.DESCRIBE, group_id):
            described.append(
                build(
                    module.DescribedGroup,
                    error_code=E.group_authorization_failed,
                    error_message=None,
                    group_id=group_id,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=(),
                    authorized_operations=OPERATIONS_NOT_REQUESTED,
                )
            )
            continue
        operations = (
            ctx.auth.operations(ResourceType.GROUP, group_id)
            if include_operations
            else OPERATIONS_NOT_REQUESTED
        )
        error, group = ctx.groups.describe_group(group_id)
        described.append(
            _described_group(module, request.api_version, group_id, error, group, operations)
        )
    return build(module.DescribeGroupsResponse, throttle_time=NO_THROTTLE, groups=tuple(described))


async def handle_delete_groups(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    results = []
    for group_id in body.groups_names:
        error: int
        if not ctx.auth.group(AclOperation.DELETE, group_id):
            error = E.group_authorization_failed
        else:
            error = await ctx.groups.delete_group(group_id)
        results.append(build(module.DeletableGroupResult, group_id=group_id, error_code=error))
    return build(module.DeleteGroupsResponse, throttle_time=NO_THROTTLE, results=tuple(results))


async def handle_offset_delete(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    if not ctx.auth.group(AclOperation.DELETE, body.group_id):
        return build(
            module.OffsetDeleteResponse,
            throttle_time=NO_THROTTLE,
            error_code=E.group_authorization_failed,
            topics=(),
        )
    readable = ctx.auth.filter(AclOperation.READ, ResourceType.TOPIC, (t.name for t in body.topics))
    partitions = []
    unknown = {}
    for topic in body.topics:
        info = ctx.metadata.topic(topic.name)
        for p in topic.partitions:
            key = (topic.name, p.partition_index)
            if topic.name not in readable:
                unknown[key] = E.topic_authorization_failed
            elif info is None or p.partition_index not in info.assignment:
                unknown[key] = E.unknown_topic_or_partition
            else:
                partitions.append(key)
    error, results = await ctx.groups.delete_offsets(body.group_id, partitions)
    if error:
        return build(
            module.OffsetDeleteResponse, throttle_time=NO_THROTTLE, error_code=error, topics=()
        )
    results.update(unknown)
    return build(
        module.OffsetDeleteResponse,
        throttle_time=NO_THROTTLE,
        error_code=E.none,
        topics=tuple(
            build(
                module.OffsetDeleteResponseTopic,
                name=topic.name,
                partitions=tuple(
                    build(
                        module.OffsetDeleteResponsePartition,
                        partition_index=p.partition_index,
                        error_code=results.get((topic.name, p.partition_index), E.none),
                    )
                    for p in topic.partitions
                ),
            )
            for topic in body.topics
        ),
    )


HANDLERS = {
    8: handle_offset_commit,
    9: handle_offset_fetch,
    10: handle_find_coordinator,
    11: handle_join_group,
    12: handle_heartbeat,
    13: handle_leave_group,
    14: handle_sync_group,
    15: handle_describe_groups,
    16: handle_list_groups,
    42: handle_delete_groups,
    47: handle_offset_delete,
}
