"""SCRAM users: /api/v3/clusters/{cluster_id}/users[/{user_name}].

REST Proxy v3 has no users resource; this one keeps its conventions (kind, metadata.self,
listings under data). A user is listed with the SCRAM mechanisms it has credentials for and
their iterations, never anything of the secret. POST creates a credential or replaces it
(`{"user_name", "mechanism": "SCRAM-SHA-256"|"SCRAM-SHA-512", "password", "iterations"}`,
8192 by default, as kafka-configs.sh); the platform's client salts and hashes the password
and the broker stores only Kafka's derived keys. DELETE removes one mechanism's credential
(`?mechanism=`) or every one the user has.
"""

from __future__ import annotations

from rest_framework import serializers, status
from rest_framework.response import Response

from brokerd.security.sasl.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS
from dashboard.core.kafka import with_cluster
from dashboard.core.models import Cluster

from .base import ApiView, api_doc
from .resources import get_cluster, listing, resource

USER_MAX = 256  # the same bound the UI forms use


class UserCreateSerializer(serializers.Serializer):
    user_name = serializers.CharField(max_length=USER_MAX)
    mechanism = serializers.ChoiceField(sorted(MECHANISMS))
    password = serializers.CharField(
        max_length=1024, write_only=True, trim_whitespace=False, style={"input_type": "password"}
    )
    iterations = serializers.IntegerField(
        min_value=MIN_ITERATIONS, max_value=MAX_ITERATIONS, default=8192
    )


class MechanismQuerySerializer(serializers.Serializer):
    mechanism = serializers.ChoiceField(sorted(MECHANISMS), required=False)


def user_resource(request, cluster: Cluster, name: str, credentials) -> dict:
    return resource(
        request,
        "KafkaUser",
        f"/clusters/{cluster.name}/users/{name}",
        f"crn:///kafka={cluster.name}/user={name}",
        cluster_id=cluster.name,
        user_name=name,
        credentials=[{"mechanism": c.mechanism, "iterations": c.iterations} for c in credentials],
    )


class UserList(ApiView):
    @api_doc("Users with SCRAM credentials and their mechanisms", operation_id="listUsers")
    def get(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        users = with_cluster(cluster, lambda ops: ops.admin.describe_user_scram_credentials())
        data = [user_resource(request, cluster, n, c) for n, c in sorted(users.items())]
        return Response(listing(request, "KafkaUserList", f"/clusters/{cluster.name}/users", data))

    @api_doc("Create or replace a user's SCRAM credential", operation_id="createUser",
             request=UserCreateSerializer, responses={201: None})  # fmt: skip
    def post(self, request, cluster_id: str):
        cluster = get_cluster(cluster_id)
        body = UserCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        spec = body.validated_data
        self.audited(
            cluster,
            "user.upsert",
            spec["user_name"],
            {"mechanism": spec["mechanism"], "iterations": spec["iterations"]},  # no password
            lambda: with_cluster(
                cluster,
                lambda ops: ops.admin.upsert_user_scram_credential(
                    spec["user_name"], spec["mechanism"], spec["password"], spec["iterations"]
                ),
            ),
        )
        return Response(status=status.HTTP_201_CREATED)


class UserDetail(ApiView):
    @api_doc("A user's SCRAM mechanisms", operation_id="getUser")
    def get(self, request, cluster_id: str, user_name: str):
        cluster = get_cluster(cluster_id)
        users = with_cluster(
            cluster, lambda ops: ops.admin.describe_user_scram_credentials([user_name])
        )
        return Response(user_resource(request, cluster, user_name, users[user_name]))

    @api_doc("Delete a user's SCRAM credential (?mechanism=) or all of them",
             operation_id="deleteUser", parameters=[MechanismQuerySerializer],
             responses={204: None})  # fmt: skip
    def delete(self, request, cluster_id: str, user_name: str):
        cluster = get_cluster(cluster_id)
        query = MechanismQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)

        async def delete(ops):
            if "mechanism" in query.validated_data:
                mechanisms = [query.validated_data["mechanism"]]
            else:
                found = await ops.admin.describe_user_scram_credentials([user_name])
                mechanisms = [c.mechanism for c in found[user_name]]
            for mechanism in mechanisms:
                await ops.admin.delete_user_scram_credential(user_name, mechanism)

        self.audited(
            cluster,
            "user.delete",
            user_name,
            dict(query.validated_data),
            lambda: with_cluster(cluster, delete),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
