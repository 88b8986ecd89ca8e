"""Clients nobody here wrote against secured listeners: Kafka's own Java client (kafka-clients
3.9.2) over SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 and over SSL with a client
certificate (PEM stores, as Kafka 2.7+ reads them), re-authenticating in-band (KIP-368), refused
a topic and a group until ACLs grant them; aiokafka and kcat over SASL_SSL/SCRAM-SHA-512 and
mutual TLS; CreateTopics answering configs only to a caller who may DESCRIBE_CONFIGS the topic
(Kafka's KafkaApis: TOPIC_AUTHORIZATION_FAILED in topic_config_error_code, no configs,
partition count and replication factor -1).

The SASL_SSL broker runs the AclAuthorizer; its first user (admin, the super user the brokers
authenticate as) is made with `brokerd configs` on ZooKeeper before it starts, the others and
the ACLs through the Admin API (alice may do anything to topics and groups and create topics;
carol may only create `cfg-` topics; bob starts with nothing). The SSL broker requires client
certificates; a third broker gives SASL sessions a 2 s lifetime."""

from __future__ import annotations

import asyncio
import datetime
import subprocess
import sys
import time
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.helpers import create_ssl_context
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kio.static.primitive import i16, i32

from brokerd.client.connection import BrokerConnection, ClientSecurity
from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.messages import request_module
from tests.conftest import new_broker
from tests.harness import ROOT
from tests.sasl_support import PLAIN_MODULE, plain_jaas
from tests.tls_certs import ssl_props

AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
USERS = {
    "admin": "admin-secret",
    "alice": "alice-secret",
    "bob": "bob-secret",
    "carol": "carol-secret",
}
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


def brokerd(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "brokerd", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def sasl_ssl(zookeeper, tmp_path_factory, pki):
    process = new_broker(
        zookeeper,
        tmp_path_factory,
        client_protocol="SASL_SSL",
        internal_protocol="SASL_PLAINTEXT",
    )
    zk_connect = process.props["zookeeper.connect"]
    # The first user, straight on ZooKeeper before any broker runs (kafka-configs.sh
    # --zookeeper); the others and the ACLs through the Admin API as that user.
    brokerd(
        "configs", "--zookeeper", zk_connect, "--alter",
        "--add-config", f"SCRAM-SHA-512=[iterations=4096,password={USERS['admin']}]",
        "--entity-type", "users", "--entity-name", "admin",
    )  # fmt: skip
    process.props.update(
        ssl_props(pki),
        **{
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(users=USERS),
            "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.internal.plain.sasl.jaas.config": plain_jaas(users=USERS),
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "authorizer.class.name": AUTHORIZER,
            "super.users": "User:admin",
            "num.partitions": "1",
            "offsets.topic.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
        },
    )
    process.start()
    client = admin(process, pki)
    upserts = [
        UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, 4096), password.encode())
        for user, password in USERS.items()
        for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
        if user != "admin"
    ]
    for future in client.alter_user_scram_credentials(upserts).values():
        future.result(30)
    bindings = [
        acl("User:alice", AclOperation.ALL, ResourceType.TOPIC, "*"),
        acl("User:alice", AclOperation.ALL, ResourceType.GROUP, "*"),
        acl("User:alice", AclOperation.CREATE, ResourceType.BROKER, "kafka-cluster"),
        acl("User:carol", AclOperation.CREATE, ResourceType.TOPIC, "cfg-", prefixed=True),
    ]
    for future in client.create_acls(bindings).values():
        future.result(30)
    yield process
    process.kill()


@pytest.fixture(scope="module")
def mutual_tls(zookeeper, tmp_path_factory, pki):
    props = ssl_props(pki, **{"ssl.client.auth": "required"})
    process = new_broker(
        zookeeper,
        tmp_path_factory,
        client_protocol="SSL",
        num_partitions="1",
        offsets_topic_num_partitions="1",
        group_initial_rebalance_delay_ms="0",
        **props,
    ).start()
    yield process
    process.kill()


def new_name(prefix: str = "sec") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# --- Kafka's Java client ------------------------------------------------------------------


def java_scram(
    broker, pki, user: str, password: str | None = None, mechanism: str = "SCRAM-SHA-512"
) -> dict[str, str]:
    password = USERS[user] if password is None else password
    module = PLAIN_MODULE if mechanism == "PLAIN" else SCRAM_MODULE
    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'{module} required username="{user}" password="{password}";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
    }


def java_mutual_tls(broker, pki) -> dict[str, str]:
    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.client.keystore),
    }


def java_round_trip(java, settings: dict[str, str], create: bool = True) -> None:
    topic = new_name("java")
    if create:
        created = java.run(settings, "create-topic", topic)
        assert created.ok and created.words == ["partitions", "2"], created.line
    produced = java.run(settings, "produce", topic, "30")
    assert produced.ok, produced.line
    consumed = java.run(settings, "consume", topic, "30", new_name("group"))
    assert consumed.ok, consumed.line
    values = consumed.words[1].split(",")
    assert sorted(values) == sorted(f"v{i}" for i in range(30))


def test_java_client_over_sasl_ssl_under_acls(sasl_ssl, pki, java):
    """alice creates, produces and consumes as her ACLs allow (every mechanism and protocol
    without an authorizer: tests/compat/test_security_matrix.py)."""
    java_round_trip(java, java_scram(sasl_ssl, pki, "alice"))


def test_java_client_over_mutual_tls_with_pem_stores(mutual_tls, pki, java):
    java_round_trip(java, java_mutual_tls(mutual_tls, pki))


def test_java_client_with_a_wrong_scram_password_is_refused(sasl_ssl, pki, java):
    result = java.run(java_scram(sasl_ssl, pki, "alice", "not-alice-secret"), "produce", "t", "1")
    assert result.error == "SaslAuthenticationException", result.line


def test_java_client_without_a_certificate_is_refused(mutual_tls, pki, java):
    settings = java_mutual_tls(mutual_tls, pki)
    del settings["ssl.keystore.type"], settings["ssl.keystore.location"]
    settings["max.block.ms"] = "5000"
    result = java.run(settings, "produce", new_name(), "1")
    assert not result.ok
    assert result.error in ("SslAuthenticationException", "TimeoutException"), result.line


@pytest.fixture(scope="module")
def reauth(zookeeper, tmp_path_factory, pki):
    """SASL_SSL with SCRAM-SHA-512 and connections.max.reauth.ms=2000 (KIP-368)."""
    process = new_broker(zookeeper, tmp_path_factory, client_protocol="SASL_SSL")
    brokerd(
        "configs", "--zookeeper", process.props["zookeeper.connect"], "--alter",
        "--add-config", f"SCRAM-SHA-512=[iterations=4096,password={USERS['alice']}]",
        "--entity-type", "users", "--entity-name", "alice",
    )  # fmt: skip
    process.props.update(
        ssl_props(pki),
        **{
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_ssl.connections.max.reauth.ms": "2000",
            "num.partitions": "1",
        },
    )
    yield process.start()
    process.kill()


def test_java_client_reauthenticates_before_its_session_ends(reauth, pki, java):
    """Kafka's Java client is the one that implements KIP-368: it re-authenticates on the
    same connection (SaslHandshake and SaslAuthenticate again) before the session lifetime
    the broker gave it runs out, instead of being disconnected."""
    topic = new_name("reauth")
    settings = java_scram(reauth, pki, "alice")
    produced = java.run(settings, "produce-over", topic, "12", "500")  # ~6 s: 3+ sessions
    assert produced.ok, produced.line
    counts = dict(zip(produced.words[::2], map(int, produced.words[1::2]), strict=True))
    assert counts["reauthentications"] >= 2, produced.line
    consumed = java.run(settings, "consume", topic, "12", new_name("group"))
    assert consumed.ok, consumed.line
    assert sorted(consumed.words[1].split(",")) == sorted(f"v{i}" for i in range(12))


_admins: dict[str, AdminClient] = {}


def admin(broker, pki) -> AdminClient:
    """confluent-kafka's AdminClient as the super user, kept alive (librdkafka fails the
    futures of a client that is garbage-collected)."""
    if broker.bootstrap not in _admins:
        _admins[broker.bootstrap] = AdminClient(
            {
                "bootstrap.servers": broker.bootstrap,
                "security.protocol": "SASL_SSL",
                "sasl.mechanisms": "SCRAM-SHA-512",
                "sasl.username": "admin",
                "sasl.password": USERS["admin"],
                "ssl.ca.location": str(pki.ca),
            }
        )
    return _admins[broker.bootstrap]


def acl(principal: str, operation, resource_type, name: str, prefixed=False) -> AclBinding:
    pattern = ResourcePatternType.PREFIXED if prefixed else ResourcePatternType.LITERAL
    return AclBinding(
        resource_type, name, pattern, principal, "*", operation, AclPermissionType.ALLOW
    )


def grant(broker, pki, principal: str, operation, resource_type, name: str) -> None:
    binding = acl(principal, operation, resource_type, name)
    admin(broker, pki).create_acls([binding])[binding].result(30)


def test_java_client_is_refused_until_acls_allow_it(sasl_ssl, pki, java):
    """Denied, then allowed by ACLs that Kafka's Java Admin creates (CreateAcls), describes
    and deletes; confluent-kafka sees the same ACLs."""
    topic, group = new_name("acl"), new_name("acl-group")
    alice, bob = java_scram(sasl_ssl, pki, "alice"), java_scram(sasl_ssl, pki, "bob")
    operator = java_scram(sasl_ssl, pki, "admin")
    assert java.run(alice, "produce", topic, "5").ok  # the topic exists, with data

    refused = java.run(bob, "produce", topic, "1")
    assert refused.error == "TopicAuthorizationException", refused.line
    refused = java.run(bob, "consume", topic, "5", group)
    assert refused.error in ("TopicAuthorizationException", "GroupAuthorizationException")

    # bob may not grant himself anything (ALTER on the cluster is the admin's).
    refused = java.run(bob, "acl-add", topic, "User:bob", "WRITE")
    assert refused.error == "ClusterAuthorizationException", refused.line

    assert java.run(operator, "acl-add", topic, "User:bob", "WRITE").ok
    produced = java.run(bob, "produce", topic, "5")
    assert produced.ok, produced.line

    assert java.run(operator, "acl-add", topic, "User:bob", "READ").ok
    refused = java.run(bob, "consume", topic, "10", group)
    assert refused.error == "GroupAuthorizationException", refused.line

    grant(sasl_ssl, pki, "User:bob", AclOperation.READ, ResourceType.GROUP, group)
    consumed = java.run(bob, "consume", topic, "10", group)
    assert consumed.ok, consumed.line
    assert sorted(consumed.words[1].split(",")) == sorted(f"v{i}" for i in [*range(5)] * 2)

    described = java.run(operator, "acl-describe", topic, "User:bob", "ANY")
    assert described.words == ["acls", "2"], described.line
    seen = admin(sasl_ssl, pki).describe_acls(
        AclBindingFilter(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            "User:bob",
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
    )
    assert sorted(b.operation.name for b in seen.result(30)) == ["READ", "WRITE"]
    deleted = java.run(operator, "acl-delete", topic, "User:bob", "ANY")
    assert deleted.words == ["acls", "2"], deleted.line
    refused = java.run(bob, "produce", topic, "1")
    assert refused.error == "TopicAuthorizationException", refused.line


# The certificates' names as principals: alice's (OU=eng) mapped to her common name by a
# rule, bob's (OU=ops) matching no rule but DEFAULT, so his principal is the whole DN; the
# brokers present the server certificate to each other and are the super user by its DN.
MAPPING_RULES = r"RULE:^CN=([a-z]+),OU=eng,O=brokerd tests$/$1/L,DEFAULT"
BROKER_DN = "CN=localhost,O=brokerd tests"
BOB_DN = "CN=bob,OU=ops,O=brokerd tests"


@pytest.fixture(scope="module")
def mutual_tls_acls(zookeeper, tmp_path_factory, pki):
    """SSL on both listeners with client certificates required, the AclAuthorizer, and
    principals from the certificates' DNs mapped by ssl.principal.mapping.rules."""
    props = ssl_props(
        pki,
        **{
            "ssl.client.auth": "required",
            "ssl.principal.mapping.rules": MAPPING_RULES,
            "authorizer.class.name": AUTHORIZER,
            "super.users": f"User:{BROKER_DN}",
        },
    )
    process = new_broker(
        zookeeper,
        tmp_path_factory,
        client_protocol="SSL",
        internal_protocol="SSL",
        num_partitions="1",
        offsets_topic_num_partitions="1",
        group_initial_rebalance_delay_ms="0",
    )
    process.props.update(props)
    yield process.start()
    process.kill()


def java_certificate(broker, pki, identity) -> dict[str, str]:
    return {**java_mutual_tls(broker, pki), "ssl.keystore.location": str(identity.keystore)}


def test_java_client_over_mutual_tls_is_authorized_by_its_certificates_name(
    mutual_tls_acls, pki, java
):
    """ACLs name the principal ssl.principal.mapping.rules make of the client certificate's
    DN: `User:alice` by a rule, `User:CN=bob,OU=ops,O=brokerd tests` by DEFAULT."""
    broker = mutual_tls_acls
    operator = java_certificate(broker, pki, pki.server)  # the super user, by its DN
    alice = java_certificate(broker, pki, pki.client)
    bob = java_certificate(broker, pki, pki.other_client)
    topic, group = new_name("dn"), new_name("dn-group")
    created = java.run(operator, "create-topic", topic)
    assert created.ok, created.line

    refused = java.run(alice, "produce", topic, "1")
    assert refused.error == "TopicAuthorizationException", refused.line
    # The ACL on the DN itself does not name alice: the rule made her `alice`.
    assert java.run(operator, "acl-add", topic, "User:CN=alice,OU=eng,O=brokerd tests", "WRITE").ok
    refused = java.run(alice, "produce", topic, "1")
    assert refused.error == "TopicAuthorizationException", refused.line
    assert java.run(operator, "acl-add", topic, "User:alice", "WRITE").ok
    produced = java.run(alice, "produce", topic, "20")
    assert produced.ok, produced.line

    refused = java.run(bob, "consume", topic, "20", group)
    assert refused.error in ("TopicAuthorizationException", "GroupAuthorizationException")
    assert java.run(operator, "acl-add", topic, f"User:{BOB_DN}", "READ").ok
    refused = java.run(bob, "consume", topic, "20", group)
    assert refused.error == "GroupAuthorizationException", refused.line
    certificate_admin = AdminClient(
        {
            "bootstrap.servers": broker.bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca),
            "ssl.certificate.location": str(pki.server.cert),
            "ssl.key.location": str(pki.server.key),
        }
    )
    binding = acl(f"User:{BOB_DN}", AclOperation.READ, ResourceType.GROUP, group)
    certificate_admin.create_acls([binding])[binding].result(30)
    consumed = java.run(bob, "consume", topic, "20", group)
    assert consumed.ok, consumed.line
    assert sorted(consumed.words[1].split(",")) == sorted(f"v{i}" for i in range(20))
    described = java.run(operator, "acl-describe", topic, f"User:{BOB_DN}", "ANY")
    assert described.words == ["acls", "1"], described.line


# --- aiokafka and kcat ---------------------------------------------------------------------


async def aiokafka_round_trip(settings: dict) -> None:
    topic = new_name("aio")
    values = [f"a{i}".encode() * 50 for i in range(40)]
    producer = AIOKafkaProducer(acks="all", **settings)
    await producer.start()
    try:
        for value in values:
            await producer.send(topic, value)
        await producer.flush()
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        topic, group_id=new_name("aio-group"), auto_offset_reset="earliest", **settings
    )
    await consumer.start()
    got: list[bytes] = []
    try:
        async with asyncio.timeout(60):
            while len(got) < len(values):
                batches = await consumer.getmany(timeout_ms=500)
                got += [record.value for records in batches.values() for record in records]
        await consumer.commit()
    finally:
        await consumer.stop()
    assert got == values


def test_aiokafka_over_sasl_ssl_with_scram_sha_512(sasl_ssl, pki):
    settings = {
        "bootstrap_servers": sasl_ssl.bootstrap,
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": USERS["alice"],
        "ssl_context": create_ssl_context(cafile=str(pki.ca)),
    }
    asyncio.run(aiokafka_round_trip(settings))


def test_aiokafka_over_mutual_tls(mutual_tls, pki):
    context = create_ssl_context(
        cafile=str(pki.ca), certfile=str(pki.client.cert), keyfile=str(pki.client.key)
    )
    settings = {
        "bootstrap_servers": mutual_tls.bootstrap,
        "security_protocol": "SSL",
        "ssl_context": context,
    }
    asyncio.run(aiokafka_round_trip(settings))


def test_kcat_over_sasl_ssl_with_scram_sha_512(sasl_ssl, pki):
    topic = new_name("kcat")
    settings = [
        "-X", "security.protocol=SASL_SSL",
        "-X", "sasl.mechanisms=SCRAM-SHA-512",
        "-X", "sasl.username=alice",
        "-X", f"sasl.password={USERS['alice']}",
        "-X", f"ssl.ca.location={pki.ca}",
    ]  # fmt: skip
    lines = "".join(f"line-{i}\n" for i in range(50))
    subprocess.run(
        ["kcat", "-b", sasl_ssl.bootstrap, *settings, "-P", "-t", topic],
        input=lines.encode(),
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        ["kcat", "-b", sasl_ssl.bootstrap, *settings, "-C", "-t", topic, "-o", "beginning", "-e"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.decode() == lines


# --- CreateTopics' configs and DESCRIBE_CONFIGS --------------------------------------------


def create_topics_as(broker, pki, user: str, name: str):
    """CreateTopics v7 as `user` over SASL_SSL: the topic's CreatableTopicResult."""

    async def send():
        host, port = broker.bootstrap.split(":")
        security = ClientSecurity(
            "SASL_SSL",
            ssl_cafile=str(pki.ca),
            sasl_mechanism="SCRAM-SHA-512",
            sasl_username=user,
            sasl_password=USERS[user],
        )
        connection = BrokerConnection(host, int(port), security=security, request_timeout=30)
        module = request_module(19, 7)
        topic = module.CreatableTopic(
            name=name,
            num_partitions=i32(3),
            replication_factor=i16(1),
            assignments=(),
            configs=(module.CreatableTopicConfig(name="retention.ms", value="3600000"),),
        )
        try:
            return await connection.send(
                module.CreateTopicsRequest(
                    topics=(topic,),
                    timeout=datetime.timedelta(seconds=30),
                    validate_only=False,
                )
            )
        finally:
            await connection.close()

    (result,) = asyncio.run(send()).topics
    return result


def test_create_topics_answers_configs_only_to_who_may_describe_them(sasl_ssl, pki):
    # alice may do All to every topic (All implies DESCRIBE_CONFIGS): the configs come back.
    shown = create_topics_as(sasl_ssl, pki, "alice", new_name("cfg"))
    assert shown.error_code == ErrorCode.none
    assert shown.topic_config_error_code == 0
    assert (shown.num_partitions, shown.replication_factor) == (3, 1)
    configs = {c.name: c.value for c in shown.configs}
    assert configs["retention.ms"] == "3600000"

    # carol may only CREATE cfg- topics: created, but nothing of its configs is answered.
    name = new_name("cfg")
    hidden = create_topics_as(sasl_ssl, pki, "carol", name)
    assert hidden.error_code == ErrorCode.none
    assert hidden.topic_config_error_code == ErrorCode.topic_authorization_failed
    assert (hidden.num_partitions, hidden.replication_factor) == (-1, -1)
    assert not hidden.configs
    # ...and the topic was created as asked all the same.
    deadline = time.monotonic() + 30
    while True:
        topics = admin(sasl_ssl, pki).list_topics(timeout=10).topics
        if name in topics and len(topics[name].partitions) == 3:
            break
        assert time.monotonic() < deadline, f"{name} not created"
        time.sleep(0.2)
