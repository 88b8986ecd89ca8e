"""The consumer group protocol (KIP-848): ConsumerGroupHeartbeat (68) and
ConsumerGroupDescribe (69).

The rules live in brokerd.groups.consumer_group_coordinator; these handlers translate topic
ids (the wire's) to names (the coordinator's) and back, and check the ACLs Kafka checks:
READ on the group for a heartbeat (and DESCRIBE on its subscribed topics), DESCRIBE on the
group for a describe.
"""

from __future__ import annotations

import datetime
import uuid
from collections import OrderedDict
from collections.abc import Mapping

import re2

from brokerd.coordination.group_configs import (
    CONSUMER_HEARTBEAT_INTERVAL_MS,
    CONSUMER_SESSION_TIMEOUT_MS,
)
from brokerd.coordination.zk_data import kafka_uuid_to_uuid, uuid_to_kafka
from brokerd.groups.consumer_group_coordinator import HeartbeatRequest, heartbeat_write_error
from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation, ResourceType

from .context import HandlerContext
from .groups import OPERATIONS_NOT_REQUESTED, _client_host, _ms

E = ErrorCode


# A regex comes from the network: RE2, as Kafka's RE2J, matches in time linear in the name
# (no backtracking a pattern like (a+)+$ could stall the event loop with) and refuses what
# only backtracking engines do (backreferences, lookaround); compiling is bounded in memory.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.max_mem = 1 << 20
_RE2_OPTIONS.log_errors = False
# Regexes kept compiled with their matches, least recently used dropped first.
_MAX_CACHED_REGEXES = 256


class InvalidRegex(ValueError):
    pass


class _RegexEntry:
    __slots__ = ("compiled", "names_version", "matched")

    def __init__(self, compiled):
        self.compiled = compiled
        self.names_version = -1
        self.matched: list[str] = []


_regexes: OrderedDict[str, _RegexEntry] = OrderedDict()


def _regex(pattern: str) -> _RegexEntry:
    entry = _regexes.get(pattern)
    if entry is None:
        try:
            entry = _RegexEntry(re2.compile(pattern, _RE2_OPTIONS))
        except re2.error as exc:
            reason = exc.args[0] if exc.args else exc
            if isinstance(reason, bytes):
                reason = reason.decode("utf-8", "replace")
            raise InvalidRegex(str(reason)) from None
        _regexes[pattern] = entry
        if len(_regexes) > _MAX_CACHED_REGEXES:
            _regexes.popitem(last=False)
    else:
        _regexes.move_to_end(pattern)
    return entry


def _matching_topics(ctx: HandlerContext, pattern: str) -> list[str]:
    """The topics a regex subscription covers: Kafka's full match, internal topics left
    out, and only those the caller may DESCRIBE. The names are matched again only after a
    topic appeared or went, not at every heartbeat."""
    try:
        entry = _regex(pattern)
    except InvalidRegex:
        return []
    version = ctx.metadata.topic_names_version
    if entry.names_version != version:
        fullmatch = entry.compiled.fullmatch
        entry.matched = [
            name
            for name in ctx.metadata.topics
            if not name.startswith("__") and fullmatch(name) is not None
        ]
        entry.names_version = version
    return sorted(ctx.auth.filter(AclOperation.DESCRIBE, ResourceType.TOPIC, entry.matched))


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None  # validated when set; a hand-edited znode falls back to the default


def _topic_id(ctx: HandlerContext, name: str) -> uuid.UUID | None:
    info = ctx.metadata.topic(name)
    return kafka_uuid_to_uuid(info.topic_id) if info is not None else None


def _owned_by_name(ctx: HandlerContext, topic_partitions) -> dict[str, frozenset[int]] | None:
    """The heartbeat's owned partitions by topic name (ids no longer known are dropped:
    the member cannot be fetching a deleted topic)."""
    if topic_partitions is None:
        return None
    owned: dict[str, frozenset[int]] = {}
    for entry in topic_partitions:
        if entry.topic_id is None:
            continue
        info = ctx.metadata.topic_by_id(uuid_to_kafka(entry.topic_id))
        if info is not None:
            owned[info.name] = frozenset(int(p) for p in entry.partitions)
    return owned


def _by_id(ctx: HandlerContext, module, assignment: Mapping[str, frozenset[int]]):
    entries = []
    for name in sorted(assignment):
        topic_id = _topic_id(ctx, name)
        if topic_id is not None and assignment[name]:
            entries.append(
                build(
                    module.TopicPartitions,
                    topic_id=topic_id,
                    partitions=tuple(sorted(assignment[name])),
                )
            )
    return tuple(entries)


async def handle_consumer_group_heartbeat(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)

    def failed(error: int, message: str | None = None):
        return build(
            module.ConsumerGroupHeartbeatResponse,
            throttle_time=NO_THROTTLE,
            error_code=error,
            error_message=message,
            member_id=None,
            member_epoch=-1,
            heartbeat_interval=datetime.timedelta(0),
            assignment=None,
        )

    if not ctx.auth.group(AclOperation.READ, body.group_id):
        return failed(E.group_authorization_failed)
    subscribed = body.subscribed_topic_names
    regex = getattr(body, "subscribed_topic_regex", None)  # librdkafka sends "" for none
    if regex:
        try:
            _regex(regex)
        except InvalidRegex as exc:
            return failed(E.invalid_regular_expression, f"SubscribedTopicRegex {regex}: {exc}")
    if subscribed:
        allowed = ctx.auth.filter(AclOperation.DESCRIBE, ResourceType.TOPIC, subscribed)
        denied = sorted(set(subscribed) - set(allowed))
        if denied:
            return failed(
                E.topic_authorization_failed,
                f"The group has subscribed to topics: {denied} which are not authorized.",
            )
    # The group's own settings (the GROUP config resource): read once, then watched.
    # (Read only where the group is served: no ZooKeeper read for a NOT_COORDINATOR.)
    served = bool(body.group_id) and ctx.groups.check_group(body.group_id) == E.none
    group_configs = await ctx.dynamic_configs.groups.ensure(body.group_id) if served else {}
    result = ctx.groups.consumer.heartbeat(
        HeartbeatRequest(
            group_id=body.group_id,
            member_id=body.member_id,
            member_epoch=int(body.member_epoch),
            instance_id=body.instance_id,
            rack_id=body.rack_id,
            rebalance_timeout_ms=_ms(body.rebalance_timeout),
            subscribed=tuple(subscribed) if subscribed is not None else None,
            server_assignor=body.server_assignor,
            subscribed_regex=regex,
            match_topics=lambda pattern: _matching_topics(ctx, pattern),
            owned=_owned_by_name(ctx, body.topic_partitions),
            client_id=request.client_id or "",
            client_host=_client_host(),
            version=request.api_version,
            session_timeout_ms=_int_or_none(group_configs.get(CONSUMER_SESSION_TIMEOUT_MS)),
            heartbeat_interval_ms=_int_or_none(group_configs.get(CONSUMER_HEARTBEAT_INTERVAL_MS)),
        )
    )
    if result.error:
        return failed(result.error, result.message)
    if result.written is not None:
        # Answered once what the heartbeat changed is in __consumer_offsets (its ISR).
        written = await result.written
        if written:
            return failed(heartbeat_write_error(written))
    assignment = None
    if result.assignment is not None:
        assignment = build(
            module.Assignment, topic_partitions=_by_id(ctx, module, result.assignment)
        )
    return build(
        module.ConsumerGroupHeartbeatResponse,
        throttle_time=NO_THROTTLE,
        error_code=E.none,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval=datetime.timedelta(milliseconds=result.heartbeat_interval_ms),
        assignment=assignment,
    )


def _described_assignment(ctx: HandlerContext, module, assignment):
    entries = []
    for name in sorted(assignment):
        topic_id = _topic_id(ctx, name)
        if topic_id is None or not assignment[name]:
            continue
        entries.append(
            build(
                module.TopicPartitions,
                topic_id=topic_id,
                topic_name=name,
                partitions=tuple(sorted(assignment[name])),
            )
        )
    return build(module.Assignment, topic_partitions=tuple(entries))


async def handle_consumer_group_describe(ctx: HandlerContext, request: Request):
    body = request.body
    version = request.api_version
    module = response_module(request.api_key, version)
    described = []
    for group_id in body.group_ids:

        def failed(error: int, message: str | None = None, group_id=group_id):
            return build(
                module.DescribedGroup,
                error_code=error,
                error_message=message,
                group_id=group_id,
                group_state="Dead",
                group_epoch=-1,
                assignment_epoch=-1,
                assignor_name="",
                members=(),
                authorized_operations=OPERATIONS_NOT_REQUESTED,
            )

        if not ctx.auth.group(AclOperation.DESCRIBE, group_id):
            described.append(failed(E.group_authorization_failed))
            continue
        error, group = ctx.groups.describe_group(group_id)
        if error:
            described.append(failed(error))
            continue
        if group is None or group.consumer is None:
            described.append(
                failed(
                    E.group_id_not_found,
                    f"Group {group_id} not found."
                    if group is None
                    else f"Group {group_id} is not a consumer group.",
                )
            )
            continue
        cg = group.consumer
        members = tuple(
            build(
                module.Member,
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=m.subscribed,
                subscribed_topic_regex=m.subscribed_regex,
                assignment=_described_assignment(ctx, module, m.assigned),
                target_assignment=_described_assignment(
                    ctx, module, cg.target.get(m.member_id, {})
                ),
                # v1: 1 for a member of the consumer protocol, 0 for a classic one (mixed).
                **({"member_type": 0 if m.classic is not None else 1} if version >= 1 else {}),
            )
            for m in cg.members.values()
        )
        operations = (
            ctx.auth.operations(ResourceType.GROUP, group_id)
            if body.include_authorized_operations
            else OPERATIONS_NOT_REQUESTED
        )
        described.append(
            build(
                module.DescribedGroup,
                error_code=E.none,
                error_message=None,
                group_id=group_id,
                group_state=cg.state.value,
                group_epoch=cg.group_epoch,
                assignment_epoch=cg.assignment_epoch,
                assignor_name=cg.assignor_name(),
                members=members,
                authorized_operations=operations,
            )
        )
    return build(
        module.ConsumerGroupDescribeResponse, throttle_time=NO_THROTTLE, groups=tuple(described)
    )


HANDLERS = {68: handle_consumer_group_heartbeat, 69: handle_consumer_group_describe}
