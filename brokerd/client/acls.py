"""ACL admin calls (DescribeAcls, CreateAcls, DeleteAcls), as Kafka's Admin client makes them:
to any broker, which answers from the cluster's ACLs (the authorizer keeps every broker's
copy current). The ACL model is Kafka's (brokerd.security.acl): bindings of a resource
pattern and an access-control entry, filters where None or ANY matches everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from brokerd.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

from .errors import KafkaResponseError, check
from .requests import Nested
from .results import raise_for_errors

if TYPE_CHECKING:
    from .cluster import Cluster

DESCRIBE_ACLS = 29
CREATE_ACLS = 30
DELETE_ACLS = 31


def _filter_fields(acl_filter: AclBindingFilter) -> dict:
    return {
        "resource_type_filter": int(acl_filter.resource_type),
        "resource_name_filter": acl_filter.name,
        "pattern_type_filter": int(acl_filter.pattern_type),
        "principal_filter": acl_filter.principal,
        "host_filter": acl_filter.host,
        "operation": int(acl_filter.operation),
        "permission_type": int(acl_filter.permission_type),
    }


def _binding(resource_type, name, pattern_type, principal, host, operation, permission):
    return AclBinding(
        ResourcePattern(ResourceType.of(resource_type), name, PatternType.of(pattern_type)),
        AccessControlEntry(
            principal, host, AclOperation.of(operation), AclPermissionType.of(permission)
        ),
    )


class AclAdmin:
    cluster: Cluster

    async def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        """The bindings `acl_filter` matches (SECURITY_DISABLED without an authorizer)."""
        response = await self.cluster.call_any(DESCRIBE_ACLS, _filter_fields(acl_filter))
        check(response.error_code, response.error_message, "DescribeAcls")
        return [
            _binding(
                resource.resource_type,
                resource.resource_name,
                resource.pattern_type,
                acl.principal,
                acl.host,
                acl.operation,
                acl.permission_type,
            )
            for resource in response.resources
            for acl in resource.acls
        ]

    async def create_acls(self, bindings: Sequence[AclBinding]) -> None:
        """Create every binding; AdminError names the ones refused (by their index)."""
        creations = [
            Nested(
                "AclCreation",
                resource_type=int(b.pattern.resource_type),
                resource_name=b.pattern.name,
                resource_pattern_type=int(b.pattern.pattern_type),
                principal=b.entry.principal,
                host=b.entry.host,
                operation=int(b.entry.operation),
                permission_type=int(b.entry.permission_type),
            )
            for b in bindings
        ]
        response = await self.cluster.call_any(CREATE_ACLS, {"creations": creations})
        results: dict = {}
        for index, result in enumerate(response.results):
            results[index] = (
                KafkaResponseError(result.error_code, result.error_message, "CreateAcls")
                if result.error_code
                else bindings[index]
            )
        raise_for_errors(results)

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """The bindings each filter deleted; AdminError names the filters refused."""
        response = await self.cluster.call_any(
            DELETE_ACLS,
            {"filters": [Nested("DeleteAclsFilter", **_filter_fields(f)) for f in filters]},
        )
        results: dict = {}
        for index, result in enumerate(response.filter_results):
            if result.error_code:
                results[index] = KafkaResponseError(
                    result.error_code, result.error_message, "DeleteAcls"
                )
                continue
            results[index] = [
                _binding(
                    m.resource_type,
                    m.resource_name,
                    m.pattern_type,
                    m.principal,
                    m.host,
                    m.operation,
                    m.permission_type,
                )
                for m in result.matching_acls
                if not m.error_code
            ]
        return [raise_for_errors(results)[i] for i in range(len(filters))]
