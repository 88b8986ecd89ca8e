"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), as Kafka's KafkaApis and
AclAuthorizer answer them: DESCRIBE on the cluster to describe, ALTER to create or delete
(CLUSTER_AUTHORIZATION_FAILED otherwise), SECURITY_DISABLED without an authorizer, filters
with Kafka's semantics (null / ANY match everything; the MATCH pattern type finds every
pattern that applies to a name: the literal name, the literal `*` and prefixes of it).
ACLs are written to ZooKeeper (brokerd.coordination.acl_store) before the answer."""

from __future__ import annotations

from collections import defaultdict

from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclError,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    validate_binding,
)

from .context import HandlerContext

SECURITY_DISABLED_MESSAGE = "No Authorizer is configured on the broker"
CLUSTER_DENIED_MESSAGE = "Cluster authorization failed."


def _filter_of(item) -> AclBindingFilter:
    return AclBindingFilter(
        resource_type=ResourceType.of(item.resource_type_filter),
        name=item.resource_name_filter,
        pattern_type=PatternType.of(getattr(item, "pattern_type_filter", PatternType.LITERAL)),
        principal=item.principal_filter,
        host=item.host_filter,
        operation=AclOperation.of(item.operation),
        permission_type=AclPermissionType.of(item.permission_type),
    )


async def handle_describe_acls(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)

    def answer(code=ErrorCode.none, message=None, resources=()):
        return build(
            module.DescribeAclsResponse,
            throttle_time=NO_THROTTLE,
            error_code=code,
            error_message=message,
            resources=tuple(resources),
        )

    authorizer = ctx.auth.authorizer
    if authorizer is None:
        return answer(ErrorCode.security_disabled, SECURITY_DISABLED_MESSAGE)
    if not ctx.auth.cluster(AclOperation.DESCRIBE):
        return answer(ErrorCode.cluster_authorization_failed, CLUSTER_DENIED_MESSAGE)
    acl_filter = _filter_of(request.body)
    try:
        acl_filter.validate()
    except AclError as exc:
        return answer(ErrorCode.invalid_request, str(exc))
    grouped: dict[ResourcePattern, list[AccessControlEntry]] = defaultdict(list)
    for binding in authorizer.bindings(acl_filter):
        grouped[binding.pattern].append(binding.entry)
    resources = []
    for pattern in sorted(grouped, key=lambda p: (p.resource_type, p.pattern_type, p.name)):
        entries = sorted(
            grouped[pattern], key=lambda e: (e.principal, e.host, e.operation, e.permission_type)
        )
        resources.append(
            build(
                module.DescribeAclsResource,
                resource_type=int(pattern.resource_type),
                resource_name=pattern.name,
                pattern_type=int(pattern.pattern_type),
                acls=tuple(
                    build(
                        module.AclDescription,
                        principal=e.principal,
                        host=e.host,
                        operation=int(e.operation),
                        permission_type=int(e.permission_type),
                    )
                    for e in entries
                ),
            )
        )
    return answer(resources=resources)


async def handle_create_acls(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)
    creations = request.body.creations

    def answer(results):
        return build(module.CreateAclsResponse, throttle_time=NO_THROTTLE, results=tuple(results))

    def result(code=ErrorCode.none, message=None):
        return build(module.AclCreationResult, error_code=code, error_message=message)

    if ctx.auth.authorizer is None or ctx.auth.store is None:
        return answer(
            result(ErrorCode.security_disabled, SECURITY_DISABLED_MESSAGE) for _ in creations
        )
    if not ctx.auth.cluster(AclOperation.ALTER):
        return answer(result(ErrorCode.cluster_authorization_failed) for _ in creations)
    outcomes: list = [None] * len(creations)
    valid: list[tuple[int, AclBinding]] = []
    for index, creation in enumerate(creations):
        binding = AclBinding(
            ResourcePattern(
                ResourceType.of(creation.resource_type),
                creation.resource_name,
                PatternType.of(getattr(creation, "resource_pattern_type", PatternType.LITERAL)),
            ),
            AccessControlEntry(
                principal=creation.principal,
                host=creation.host,
                operation=AclOperation.of(creation.operation),
                permission_type=AclPermissionType.of(creation.permission_type),
            ),
        )
        try:
            validate_binding(binding)
        except AclError as exc:
            outcomes[index] = result(ErrorCode.invalid_request, str(exc))
            continue
        valid.append((index, binding))
    by_pattern: dict[ResourcePattern, list[int]] = defaultdict(list)
    for index, binding in valid:
        by_pattern[binding.pattern].append(index)
    for indexes in by_pattern.values():
        bindings = [b for i, b in valid if i in indexes]
        try:
            await ctx.auth.store.create(bindings)
        except Exception as exc:  # ZooKeeper failed: these creations failed, not the request
            for index in indexes:
                outcomes[index] = result(ErrorCode.unknown_server_error, f"{exc}")
            continue
        for index in indexes:
            outcomes[index] = result()
    return answer(outcomes)


async def handle_delete_acls(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)
    filters_in = request.body.filters

    def answer(results):
        return build(
            module.DeleteAclsResponse, throttle_time=NO_THROTTLE, filter_results=tuple(results)
        )

    def filter_result(code=ErrorCode.none, message=None, matching=()):
        return build(
            module.DeleteAclsFilterResult,
            error_code=code,
            error_message=message,
            matching_acls=tuple(matching),
        )

    if ctx.auth.authorizer is None or ctx.auth.store is None:
        return answer(
            filter_result(ErrorCode.security_disabled, SECURITY_DISABLED_MESSAGE)
            for _ in filters_in
        )
    if not ctx.auth.cluster(AclOperation.ALTER):
        return answer(filter_result(ErrorCode.cluster_authorization_failed) for _ in filters_in)
    results: list = [None] * len(filters_in)
    valid: list[tuple[int, AclBindingFilter]] = []
    for index, item in enumerate(filters_in):
        acl_filter = _filter_of(item)
        try:
            acl_filter.validate()
        except AclError as exc:
            results[index] = filter_result(ErrorCode.invalid_request, str(exc))
            continue
        valid.append((index, acl_filter))
    try:
        deleted = await ctx.auth.store.delete([f for _, f in valid])
    except Exception as exc:
        for index, _ in valid:
            results[index] = filter_result(ErrorCode.unknown_server_error, f"{exc}")
        return answer(results)
    for (index, _), bindings in zip(valid, deleted, strict=True):
        results[index] = filter_result(
            matching=(
                build(
                    module.DeleteAclsMatchingAcl,
                    error_code=ErrorCode.none,
                    error_message=None,
                    resource_type=int(b.pattern.resource_type),
                    resource_name=b.pattern.name,
                    pattern_type=int(b.pattern.pattern_type),
                    principal=b.entry.principal,
                    host=b.entry.host,
                    operation=int(b.entry.operation),
                    permission_type=int(b.entry.permission_type),
                )
                for b in bindings
            )
        )
    return answer(results)


HANDLERS = {29: handle_describe_acls, 30: handle_create_acls, 31: handle_delete_acls}
