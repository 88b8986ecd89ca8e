"""ACLs in REST Proxy v3's shape: /api/v3/clusters/{cluster_id}/acls (GET lists, POST creates
one, DELETE removes what a filter matches) and /acls:batch (POST creates several).

Values are Kafka's enum names as REST Proxy writes them (resource_type TOPIC, GROUP, CLUSTER,
TRANSACTIONAL_ID, DELEGATION_TOKEN; pattern_type LITERAL, PREFIXED, and in filters ANY and
MATCH; operation READ, WRITE, ..., ALL; permission ALLOW or DENY). Changes need the operator
role and are audited; the brokers' own checks (ALTER on the cluster for the platform's
principal, validation in Kafka's words) answer as the cluster's error codes map.
"""

from __future__ import annotations

from urllib.parse import urlencode

from rest_framework import serializers, status
from rest_framework.response import Response

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
from dashboard.core.kafka import with_cluster
from dashboard.core.models import Cluster

from .base import ApiView, api_doc
from .resources import get_cluster, listing, url

KNOWN = ("UNKNOWN",)
RESOURCE_TYPES = [t.name for t in ResourceType if t.name not in KNOWN]
PATTERN_TYPES = [t.name for t in PatternType if t.name not in KNOWN]
OPERATIONS = [t.name for t in AclOperation if t.name not in KNOWN]
PERMISSIONS = [t.name for t in AclPermissionType if t.name not in KNOWN]
NAME_MAX = 1000


class AclFilterSerializer(serializers.Serializer):
    """A filter: every field may be left out (ANY); names and hosts match exactly."""

    resource_type = serializers.ChoiceField(RESOURCE_TYPES, default="ANY")
    resource_name = serializers.CharField(required=False, max_length=NAME_MAX)
    pattern_type = serializers.ChoiceField(PATTERN_TYPES, default="ANY")
    principal = serializers.CharField(required=False, max_length=NAME_MAX)
    host = serializers.CharField(required=False, max_length=NAME_MAX)
    operation = serializers.ChoiceField(OPERATIONS, default="ANY")
    permission = serializers.ChoiceField(PERMISSIONS, default="ANY")

    def filter(self) -> AclBindingFilter:
        data = self.validated_data
        return AclBindingFilter(
            ResourceType[data["resource_type"]],
            data.get("resource_name"),
            PatternType[data["pattern_type"]],
            data.get("principal"),
            data.get("host"),
            AclOperation[data["operation"]],
            AclPermissionType[data["permission"]],
        )


class AclCreateSerializer(serializers.Serializer):
    resource_type = serializers.ChoiceField([t for t in RESOURCE_TYPES if t != "ANY"])
    resource_name = serializers.CharField(max_length=NAME_MAX)
    pattern_type = serializers.ChoiceField(["LITERAL", "PREFIXED"], default="LITERAL")
    principal = serializers.RegexField(r"^[^:]+:.+$", max_length=NAME_MAX)
    host = serializers.CharField(default="*", max_length=NAME_MAX)
    operation = serializers.ChoiceField([o for o in OPERATIONS if o != "ANY"])
    permission = serializers.ChoiceField(["ALLOW", "DENY"])

    def binding(self) -> AclBinding:
        data = self.validated_data
        return AclBinding(
            ResourcePattern(
                ResourceType[data["resource_type"]],
                data["resource_name"],
                PatternType[data["pattern_type"]],
            ),
            AccessControlEntry(
                data["principal"],
                data["host"],
                AclOperation[data["operation"]],
                AclPermissionType[data["permission"]],
            ),
        )


class AclBatchSerializer(serializers.Serializer):
    data = AclCreateSerializer(many=True, allow_empty=False, max_length=1000)


def acl_fields(binding: AclBinding) -> dict:
    return {
        "resource_type": binding.pattern.resource_type.name,
        "resource_name": binding.pattern.name,
        "pattern_type": binding.pattern.pattern_type.name,
        "principal": binding.entry.principal,
        "host": binding.entry.host,
        "operation": binding.entry.operation.name,
        "permission": binding.entry.permission_type.name,
    }


def acl_resource(request, cluster: Cluster, binding: AclBinding) -> dict:
    fields = acl_fields(binding)
    query = urlencode(fields)
    return {
        "kind": "KafkaAcl",
        "metadata": {"self": f"{url(request, f'/clusters/{cluster.name}/acls')}?{query}"},
        "cluster_id": cluster.name,
        **fields,
    }


class AclList(ApiView):
    @api_doc("ACLs a filter matches (query parameters; each left out matches anything)",
             operation_id="listAcls", parameters=[AclFilterSerializer])  # fmt: skip
    def get(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        query = AclFilterSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        acl_filter = query.filter()
        bindings = with_cluster(cluster, lambda ops: ops.admin.describe_acls(acl_filter))
        data = [acl_resource(request, cluster, b) for b in bindings]
        return Response(listing(request, "KafkaAclList", f"/clusters/{cluster.name}/acls", data))

    @api_doc("Create an ACL", operation_id="createAcls", request=AclCreateSerializer,
             responses={201: None})  # fmt: skip
    def post(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        body = AclCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        binding = body.binding()
        self.audited(
            cluster,
            "acl.create",
            f"{binding.pattern.resource_type.name}:{binding.pattern.name}",
            acl_fields(binding),
            lambda: with_cluster(cluster, lambda ops: ops.admin.create_acls([binding])),
        )
        return Response(status=status.HTTP_201_CREATED)

    @api_doc("Delete the ACLs a filter matches (query parameters, as for listing)",
             operation_id="deleteAcls", parameters=[AclFilterSerializer])  # fmt: skip
    def delete(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        query = AclFilterSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        acl_filter = query.filter()
        (deleted,) = self.audited(
            cluster,
            "acl.delete",
            f"{acl_filter.resource_type.name}:{acl_filter.name or '*'}",
            dict(request.query_params.items()),
            lambda: with_cluster(cluster, lambda ops: ops.admin.delete_acls([acl_filter])),
        )
        return Response({"data": [acl_resource(request, cluster, b) for b in deleted]})


class AclBatch(ApiView):
    @api_doc("Create several ACLs", operation_id="batchCreateAcls", request=AclBatchSerializer,
             responses={201: None})  # fmt: skip
    def post(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        body = AclBatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        bindings = [AclCreateSerializer(data=item) for item in request.data["data"]]
        for item in bindings:
            item.is_valid(raise_exception=True)
        created = [item.binding() for item in bindings]
        self.audited(
            cluster,
            "acl.create",
            f"{len(created)} ACLs",
            {"data": [acl_fields(b) for b in created]},
            lambda: with_cluster(cluster, lambda ops: ops.admin.create_acls(created)),
        )
        return Response(status=status.HTTP_201_CREATED)
