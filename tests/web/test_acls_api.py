"""ACLs and SCRAM users through the REST admin (/acls and /acls:batch in REST Proxy v3's
shape, /users) against a real broker with Kafka's AclAuthorizer on SASL_PLAINTEXT: the
platform connects as the super user admin; what it creates a real client (confluent-kafka)
sees and uses, and the reverse; viewers read but never change; bad input is a 400 with a
message; a cluster without an authorizer answers in Kafka's words."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from dashboard.core.models import AuditLog, Cluster
from tests.conftest import new_broker
from tests.sasl_support import plain_jaas

pytestmark = pytest.mark.django_db(transaction=True)

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
API = "/api/v3/clusters/secured/acls"


@pytest.fixture(scope="module")
def acl_broker(zookeeper, tmp_path_factory):
    jaas = plain_jaas(users=USERS)
    process = new_broker(
        zookeeper,
        tmp_path_factory,
        client_protocol="SASL_PLAINTEXT",
        internal_protocol="SASL_PLAINTEXT",
        num_partitions="1",
    )
    process.props.update(
        {
            f"listener.name.{listener}.{key}": value
            for listener in ("sasl_plaintext", "internal")
            for key, value in (
                ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"),
                ("plain.sasl.jaas.config", jaas),
            )
        }
    )
    process.props.update(
        {
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:admin",
        }
    )
    yield process.start()
    process.kill()


@pytest.fixture
def secured(db, acl_broker):
    cluster = Cluster(
        name="secured",
        bootstrap_servers=acl_broker.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_username="admin",
    )
    cluster.set_sasl_password(USERS["admin"])
    cluster.full_clean()
    cluster.save()
    return cluster


def admin_client(broker) -> AdminClient:
    return AdminClient(
        {
            "bootstrap.servers": broker.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": USERS["admin"],
        }
    )


def test_acls_created_by_rest_are_seen_by_a_real_client_and_deleted_by_filter(
    secured, acl_broker, operator_api, viewer_api
):
    alice_reads = {
        "resource_type": "TOPIC",
        "resource_name": "orders-",
        "pattern_type": "PREFIXED",
        "principal": "User:alice",
        "host": "*",
        "operation": "READ",
        "permission": "ALLOW",
    }
    assert operator_api.post(API, alice_reads, format="json").status_code == 201
    batch = {
        "data": [
            {**alice_reads, "resource_type": "GROUP", "resource_name": "billing",
             "pattern_type": "LITERAL"},
            {**alice_reads, "operation": "WRITE", "permission": "DENY"},
        ]
    }  # fmt: skip
    assert operator_api.post(f"{API}:batch", batch, format="json").status_code == 201

    listed = viewer_api.get(API, {"principal": "User:alice"}).json()
    assert listed["kind"] == "KafkaAclList"
    seen = {(a["resource_type"], a["resource_name"], a["operation"], a["permission"])
            for a in listed["data"]}  # fmt: skip
    assert seen == {
        ("TOPIC", "orders-", "READ", "ALLOW"),
        ("GROUP", "billing", "READ", "ALLOW"),
        ("TOPIC", "orders-", "WRITE", "DENY"),
    }
    assert all(
        a["kind"] == "KafkaAcl" and "/acls?" in a["metadata"]["self"] for a in listed["data"]
    )

    # A client nobody here wrote sees them in ZooKeeper's copy the brokers keep.
    client = admin_client(acl_broker)
    described = client.describe_acls(
        AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
                         AclOperation.ANY, AclPermissionType.ANY)
    ).result(30)  # fmt: skip
    assert len(described) == 3
    # ... and what it creates, the REST API lists.
    futures = client.create_acls(
        [AclBinding(ResourceType.TOPIC, "audit", ResourcePatternType.LITERAL, "User:alice", "*",
                    AclOperation.DESCRIBE, AclPermissionType.ALLOW)]
    )  # fmt: skip
    for future in futures.values():
        future.result(30)
    audit = viewer_api.get(API, {"resource_name": "audit", "resource_type": "TOPIC"}).json()
    assert [a["operation"] for a in audit["data"]] == ["DESCRIBE"]

    # Viewers read, never change.
    assert viewer_api.post(API, alice_reads, format="json").status_code == 403
    assert viewer_api.delete(f"{API}?principal=User:alice").status_code == 403

    deleted = operator_api.delete(
        f"{API}?resource_type=TOPIC&resource_name=orders-&pattern_type=PREFIXED"
    )
    assert deleted.status_code == 200
    assert sorted(a["operation"] for a in deleted.json()["data"]) == ["READ", "WRITE"]
    left = viewer_api.get(API, {"principal": "User:alice"}).json()["data"]
    assert sorted(a["resource_name"] for a in left) == ["audit", "billing"]
    assert AuditLog.objects.filter(action__startswith="acl.", succeeded=True).count() == 3


@pytest.mark.parametrize(
    "body, field",
    [
        ({"resource_type": "TABLE"}, "resource_type"),
        ({"operation": "SMASH"}, "operation"),
        ({"principal": "alice"}, "principal"),
        ({"pattern_type": "MATCH"}, "pattern_type"),
    ],
)
def test_bad_acls_are_400s_naming_the_field(secured, operator_api, body, field):
    good = {
        "resource_type": "TOPIC",
        "resource_name": "t",
        "principal": "User:alice",
        "operation": "READ",
        "permission": "ALLOW",
    }
    answer = operator_api.post(API, {**good, **body}, format="json")
    assert answer.status_code == 400
    assert field in answer.json()["errors"]


def test_a_cluster_without_an_authorizer_says_so(kafka_cluster, viewer_api):
    answer = viewer_api.get("/api/v3/clusters/local/acls")
    assert answer.status_code == 400
    assert answer.json()["kafka_error"] == "SECURITY_DISABLED"


def scram_client(broker, user: str, password: str) -> AdminClient:
    return AdminClient(
        {
            "bootstrap.servers": broker.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": user,
            "sasl.password": password,
        }
    )


def test_scram_users_made_by_rest_log_in_with_a_real_client(
    secured, acl_broker, operator_api, viewer_api
):
    users = "/api/v3/clusters/secured/users"
    made = operator_api.post(
        users,
        {
            "user_name": "dora",
            "mechanism": "SCRAM-SHA-512",
            "password": "dora-pw",
            "iterations": 4096,
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    assert viewer_api.post(users, {"user_name": "x"}, format="json").status_code == 403
    listed = viewer_api.get(users).json()
    (dora,) = [u for u in listed["data"] if u["user_name"] == "dora"]
    assert dora["credentials"] == [{"mechanism": "SCRAM-SHA-512", "iterations": 4096}]
    assert "dora-pw" not in viewer_api.get(users).content.decode()
    assert "dora-pw" not in repr(list(AuditLog.objects.values_list("details", flat=True)))

    # A client nobody here wrote authenticates with it (Metadata needs no ACL).
    scram_client(acl_broker, "dora", "dora-pw").list_topics(timeout=20)

    assert operator_api.delete(f"{users}/dora").status_code == 204
    assert viewer_api.get(f"{users}/dora").status_code == 404
    with pytest.raises(Exception):  # noqa: B017 - librdkafka's authentication failure
        scram_client(acl_broker, "dora", "dora-pw").list_topics(timeout=5)

    bad = operator_api.post(
        users, {"user_name": "eve", "mechanism": "SCRAM-SHA-1", "password": "p"}, format="json"
    )
    assert bad.status_code == 400 and "mechanism" in bad.json()["errors"]


def signed_in(username: str, role: str):
    from django.test import Client

    from tests.web.conftest import make_user

    make_user(username, role)
    client = Client()
    assert client.login(username=username, password=f"{username}-pw-123")
    return client


def test_security_page_adds_and_removes_acls_and_users(secured, acl_broker):
    page = "/clusters/secured/security/"
    operator = signed_in("opal", "operator")
    added = operator.post(
        f"{page}acls/add",
        {"resource_type": "TOPIC", "resource_name": "payments", "pattern_type": "LITERAL",
         "principal": "User:alice", "host": "*", "operation": "WRITE", "permission": "ALLOW"},
        follow=True,
    )  # fmt: skip
    assert added.status_code == 200
    assert "ACL added: ALLOW User:alice WRITE on TOPIC:payments." in added.content.decode()
    client = admin_client(acl_broker)  # kept: a dropped client fails its futures
    described = client.describe_acls(
        AclBindingFilter(ResourceType.TOPIC, "payments", ResourcePatternType.LITERAL, None, None,
                         AclOperation.ANY, AclPermissionType.ANY)
    ).result(30)  # fmt: skip
    assert [(b.principal, b.operation) for b in described] == [("User:alice", AclOperation.WRITE)]

    # A refusal keeps what was typed beside the form.
    refused = operator.post(
        f"{page}acls/add",
        {"resource_type": "TOPIC", "resource_name": "typed-name", "pattern_type": "LITERAL",
         "principal": "alice", "host": "*", "operation": "READ", "permission": "ALLOW"},
    )  # fmt: skip
    text = refused.content.decode()
    assert refused.status_code == 400 and "a principal is Type:name" in text
    assert 'value="typed-name"' in text

    removed = operator.post(
        f"{page}acls/remove",
        {"resource_type": "TOPIC", "resource_name": "payments", "pattern_type": "LITERAL",
         "principal": "User:alice", "host": "*", "operation": "WRITE", "permission": "ALLOW"},
        follow=True,
    )  # fmt: skip
    assert "ACL removed (1)." in removed.content.decode()

    saved = operator.post(
        f"{page}users/set",
        {"user_name": "fern", "mechanism": "SCRAM-SHA-512", "password": "fern-pw",
         "iterations": "4096"},
        follow=True,
    )  # fmt: skip
    shown = saved.content.decode()
    assert "SCRAM-SHA-512 credential of fern saved." in shown and "fern-pw" not in shown
    scram_client(acl_broker, "fern", "fern-pw").list_topics(timeout=20)
    assert 'data-user="fern"' in operator.get(page).content.decode()

    viewer = signed_in("vito", "viewer")
    assert viewer.get(page).status_code == 200
    assert 'id="acl-form"' not in viewer.get(page).content.decode()
    assert viewer.post(f"{page}users/remove", {"user_name": "fern"}).status_code == 403
    gone = operator.post(
        f"{page}users/remove", {"user_name": "fern", "mechanism": "SCRAM-SHA-512"}, follow=True
    )
    assert "SCRAM-SHA-512 credential of fern removed." in gone.content.decode()
