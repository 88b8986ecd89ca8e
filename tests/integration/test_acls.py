"""The ACL authorizer end to end: brokers with `authorizer.class.name` on SASL_PLAINTEXT
listeners (PLAIN users admin, alice, bob; the brokers authenticate as admin, a super user),
real clients (confluent-kafka's AdminClient and Producer, kafka-python's admin and consumer),
ACLs in ZooKeeper in Kafka's layout, `brokerd acls` through the Admin API and on ZooKeeper
before any broker runs, deny over allow, prefixed ACLs, authorized operations, a non-broker
principal refused CLUSTER_ACTION, and ACL changes reaching a second broker."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaConsumer
from kafka import errors as kafka_errors
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLPermissionType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ACLOperation as KpOperation
from kafka.admin import ACLResourcePatternType as KpPatternType
from kafka.admin import ResourceType as KpResourceType
from kazoo.client import KazooClient
from kio.schema.types import BrokerId, ProducerId
from kio.static.primitive import i8, i16, i32, i64

from brokerd.client.connection import BrokerConnection, ClientSecurity
from brokerd.protocol import interbroker
from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.messages import request_module
from tests.conftest import new_broker
from tests.harness import ROOT, BrokerProcess
from tests.sasl_support import plain_jaas

AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
USERS = {
    "admin": "admin-secret",
    "alice": "alice-secret",
    "bob": "bob-secret",
    "carol": "carol-secret",
    "dave": "dave-secret",  # never granted anything
}


def secured_props(zk_connect: str | None = None) -> dict[str, str]:
    jaas = plain_jaas(users=USERS)
    props = {
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
        "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": jaas,
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "authorizer.class.name": AUTHORIZER,
        "super.users": "User:admin",
        "num.partitions": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    if zk_connect:
        props["zookeeper.connect"] = zk_connect
    return props


def secured_broker(zookeeper, tmp_path_factory, zk_connect=None, broker_id=1) -> BrokerProcess:
    process = new_broker(
        zookeeper,
        tmp_path_factory,
        client_protocol="SASL_PLAINTEXT",
        internal_protocol="SASL_PLAINTEXT",
        broker_id=broker_id,
    )
    process.props.update(secured_props(zk_connect))
    return process


def brokerd_acls(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "brokerd", "acls", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def secured(zookeeper, tmp_path_factory):
    process = secured_broker(zookeeper, tmp_path_factory)
    zk_connect = process.props["zookeeper.connect"]
    # The first grant, straight on ZooKeeper before any broker runs (kafka-acls.sh
    # --authorizer-properties zookeeper.connect=...).
    done = brokerd_acls(
        "--authorizer-properties",
        f"zookeeper.connect={zk_connect}",
        "--add",
        "--allow-principal",
        "User:bob",
        "--operation",
        "Describe",
        "--cluster",
    )
    assert done.returncode == 0, done.stderr
    process.start()
    yield process
    process.kill()


def librdkafka(broker, user: str) -> dict:
    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


_admins: dict[tuple[str, str], AdminClient] = {}


def admin(broker, user: str = "admin") -> AdminClient:
    """One AdminClient per broker and user, kept alive (librdkafka fails the futures of a
    client that is garbage-collected)."""
    key = (broker.bootstrap, user)
    if key not in _admins:
        _admins[key] = AdminClient(librdkafka(broker, user))
    return _admins[key]


def kafka_python(broker, user: str) -> dict:
    return {
        "bootstrap_servers": broker.bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": user,
        "sasl_plain_password": USERS[user],
    }


def new_name(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(broker, name: str) -> None:
    admin(broker).create_topics([NewTopic(name, 1, 1)])[name].result(30)


def grant(broker, principal, operation, resource_type, name, pattern=None, permission=None):
    binding = AclBinding(
        resource_type,
        name,
        pattern or ResourcePatternType.LITERAL,
        principal,
        "*",
        operation,
        permission or AclPermissionType.ALLOW,
    )
    admin(broker).create_acls([binding])[binding].result(30)
    return binding


def produce_error(broker, user: str, topic: str) -> KafkaError | None:
    """Produce one record as `user`; the delivery error, or None."""
    outcome: list = []
    producer = Producer({**librdkafka(broker, user), "message.timeout.ms": 10000})
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(20)
    assert outcome, "no delivery report"
    return outcome[0]


def zk_get(broker, path: str):
    client = KazooClient(hosts=broker.props["zookeeper.connect"])
    client.start(timeout=10)
    try:
        return client.get(path)[0] if client.exists(path) else None
    finally:
        client.stop()
        client.close()


# The Admin API ------------------------------------------------------------------------------


def test_confluent_admin_creates_describes_and_deletes_acls_stored_as_kafka_does(secured):
    topic = new_name()
    client = admin(secured)
    binding = AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    prefixed = AclBinding(
        ResourceType.GROUP,
        "app-",
        ResourcePatternType.PREFIXED,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.DENY,
    )
    for future in client.create_acls([binding, prefixed]).values():
        future.result(30)
    stored = json.loads(zk_get(secured, f"/kafka-acl/Topic/{topic}"))
    assert stored == {
        "version": 1,
        "acls": [
            {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}
        ],
    }
    assert json.loads(zk_get(secured, "/kafka-acl-extended/prefixed/Group/app-"))["acls"] == [
        {"principal": "User:alice", "permissionType": "Deny", "operation": "Read", "host": "*"}
    ]
    exact = AclBindingFilter(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert client.describe_acls(exact).result(30) == [binding]
    # MATCH finds every pattern that applies to a name: here the prefixed one.
    match = AclBindingFilter(
        ResourceType.GROUP,
        "app-orders",
        ResourcePatternType.MATCH,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert client.describe_acls(match).result(30) == [prefixed]
    deleted = client.delete_acls([exact, match])
    assert deleted[exact].result(30) == [binding]
    assert deleted[match].result(30) == [prefixed]
    assert zk_get(secured, f"/kafka-acl/Topic/{topic}") is None
    assert client.describe_acls(exact).result(30) == []


def test_kafka_python_admin_acl_calls(secured):
    client = KafkaAdminClient(**kafka_python(secured, "admin"))
    try:
        topic = new_name()
        acl = ACL(
            principal="User:bob",
            host="*",
            operation=KpOperation.WRITE,
            permission_type=ACLPermissionType.ALLOW,
            resource_pattern=ResourcePattern(KpResourceType.TOPIC, topic, KpPatternType.LITERAL),
        )
        result = client.create_acls([acl])
        assert result["failed"] == [] and len(result["succeeded"]) == 1
        acl_filter = ACLFilter(
            principal="User:bob",
            host="*",
            operation=KpOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePattern(KpResourceType.TOPIC, topic, KpPatternType.LITERAL),
        )
        found, error = client.describe_acls(acl_filter)
        assert error is kafka_errors.NoError
        assert [(a.principal, a.operation) for a in found] == [("User:bob", KpOperation.WRITE)]
        deleted = client.delete_acls([acl_filter])
        assert len(deleted[0][1]) == 1
        assert client.describe_acls(acl_filter)[0] == []
    finally:
        client.close()


def test_every_resource_type_is_stored_at_kafkas_path(secured):
    """Kafka's resource types beyond topics and groups, from kafka-python: TransactionalId,
    DelegationToken, the Cluster and User (KIP-373's token rights), each under
    /kafka-acl/<ResourceType>/<name>, described back by type and deleted."""
    client = KafkaAdminClient(**kafka_python(secured, "admin"))
    name = new_name("res")
    cases = [
        (KpResourceType.TRANSACTIONAL_ID, name, KpOperation.WRITE, "TransactionalId"),
        (KpResourceType.DELEGATION_TOKEN, name, KpOperation.DESCRIBE, "DelegationToken"),
        (KpResourceType.CLUSTER, "kafka-cluster", KpOperation.IDEMPOTENT_WRITE, "Cluster"),
        (KpResourceType.USER, name, KpOperation.CREATE_TOKENS, "User"),  # KIP-373
    ]
    try:
        for resource_type, resource_name, operation, path_type in cases:
            pattern = ResourcePattern(resource_type, resource_name, KpPatternType.LITERAL)
            acl = ACL("User:carol", "*", operation, ACLPermissionType.ALLOW, pattern)
            result = client.create_acls([acl])
            assert result["failed"] == [], result
            stored = json.loads(zk_get(secured, f"/kafka-acl/{path_type}/{resource_name}"))
            carol = [a for a in stored["acls"] if a["principal"] == "User:carol"]
            assert [(a["permissionType"], a["host"]) for a in carol] == [("Allow", "*")]
            acl_filter = ACLFilter(
                "User:carol", "*", KpOperation.ANY, ACLPermissionType.ANY, pattern
            )
            found, error = client.describe_acls(acl_filter)
            assert error is kafka_errors.NoError
            assert [(a.resource_pattern.resource_type, a.operation) for a in found] == [
                (resource_type, operation)
            ]
            assert len(client.delete_acls([acl_filter])[0][1]) == 1
    finally:
        client.close()


def test_acl_apis_need_cluster_rights(secured):
    """DescribeAcls needs DESCRIBE on the cluster (bob has it, from the ZooKeeper grant made
    before the broker started); CreateAcls/DeleteAcls ALTER (nobody but the super user)."""
    everything = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    listed = admin(secured, "bob").describe_acls(everything).result(30)
    assert any(b.principal == "User:bob" and b.restype == ResourceType.BROKER for b in listed)
    # (confluent-kafka ignores DescribeAcls' top-level error; kafka-python raises it.)
    client = KafkaAdminClient(**kafka_python(secured, "alice"))
    try:
        any_topic = ResourcePatternFilter(KpResourceType.ANY, None, KpPatternType.ANY)
        with pytest.raises(kafka_errors.ClusterAuthorizationFailedError):
            client.describe_acls(
                ACLFilter(None, None, KpOperation.ANY, ACLPermissionType.ANY, any_topic)
            )
    finally:
        client.close()
    binding = AclBinding(
        ResourceType.TOPIC,
        "x",
        ResourcePatternType.LITERAL,
        "User:bob",
        "*",
        AclOperation.ALL,
        AclPermissionType.ALLOW,
    )
    with pytest.raises(KafkaException) as refused:
        admin(secured, "bob").create_acls([binding])[binding].result(30)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


# Producers and consumers ----------------------------------------------------------------------


def test_producer_without_write_gets_topic_authorization_failed(secured):
    topic = new_name()
    create_topic(secured, topic)
    error = produce_error(secured, "alice", topic)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(secured, "User:alice", AclOperation.WRITE, ResourceType.TOPIC, topic)
    assert produce_error(secured, "alice", topic) is None


def init_producer_id(broker, user: str, transactional_id: str | None = None):
    """InitProducerId v4 as `user` (without a transactional id: an idempotent producer's)."""

    async def call():
        host, port = broker.bootstrap.rsplit(":", 1)
        security = ClientSecurity("SASL_PLAINTEXT", sasl_username=user, sasl_password=USERS[user])
        connection = BrokerConnection(host, int(port), security=security, request_timeout=15)
        try:
            module = request_module(22, 4)
            return await connection.send(
                module.InitProducerIdRequest(
                    transactional_id=transactional_id,
                    transaction_timeout=datetime.timedelta(seconds=60),
                    producer_id=i64(-1),
                    producer_epoch=i16(-1),
                )
            )
        finally:
            await connection.close()

    return asyncio.run(call())


def test_idempotent_producer_needs_idempotent_write_or_a_topic_write(secured):
    """InitProducerId: CLUSTER_AUTHORIZATION_FAILED for a principal with neither
    IdempotentWrite on the cluster nor Write on any topic (Kafka 2.8+)."""
    assert init_producer_id(secured, "carol").error_code == ErrorCode.cluster_authorization_failed
    topic = new_name("idem")
    create_topic(secured, topic)
    grant(secured, "User:carol", AclOperation.WRITE, ResourceType.TOPIC, topic)
    granted = init_producer_id(secured, "carol")
    assert granted.error_code == ErrorCode.none and granted.producer_id >= 0
    # A transactional producer needs WRITE on its transactional id.
    transactional = init_producer_id(secured, "carol", transactional_id=new_name("tx"))
    assert transactional.error_code == ErrorCode.transactional_id_authorization_failed
    producer = Producer({**librdkafka(secured, "carol"), "enable.idempotence": True})
    outcome: list = []
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(20)
    assert outcome == [None]


def raw_call(broker, user: str, api_key: int, version: int, address=None, **fields):
    """One request of `api_key` v`version` (kio's schema) as `user` to the client listener
    (or `address`); its response."""

    async def call():
        host, port = (address or broker.bootstrap).rsplit(":", 1)
        security = ClientSecurity("SASL_PLAINTEXT", sasl_username=user, sasl_password=USERS[user])
        connection = BrokerConnection(host, int(port), security=security, request_timeout=15)
        try:
            module = request_module(api_key, version)
            request_class = next(
                getattr(module, name) for name in dir(module) if name.endswith("Request")
            )
            return await connection.send(request_class(**fields))
        finally:
            await connection.close()

    return asyncio.run(call())


def test_transactions_need_write_on_the_transactional_id(secured):
    transactional_id, topic = new_name("tx"), new_name("txt")
    create_topic(secured, topic)
    ended = raw_call(
        secured,
        "carol",
        26,
        3,
        transactional_id=transactional_id,
        producer_id=i64(1),
        producer_epoch=i16(0),
        committed=True,
    )
    assert ended.error_code == ErrorCode.transactional_id_authorization_failed
    described = raw_call(secured, "carol", 65, 0, transactional_ids=(transactional_id,))
    assert [s.error_code for s in described.transaction_states] == [
        ErrorCode.transactional_id_authorization_failed
    ]
    # With WRITE on the id and the topic a transactional producer commits.
    grant(
        secured, "User:carol", AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    )
    grant(secured, "User:carol", AclOperation.WRITE, ResourceType.TOPIC, topic)
    producer = Producer({**librdkafka(secured, "carol"), "transactional.id": transactional_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"in-txn")
    producer.commit_transaction(30)
    listed = raw_call(secured, "carol", 66, 0, state_filters=(), producer_id_filters=())
    assert [s.transactional_id for s in listed.transaction_states] == [transactional_id]


def test_consumer_needs_read_on_group_and_topic(secured):
    topic, group = new_name(), new_name("g")
    create_topic(secured, topic)
    assert produce_error(secured, "admin", topic) is None
    grant(secured, "User:alice", AclOperation.READ, ResourceType.TOPIC, topic)

    def consume():
        consumer = KafkaConsumer(
            topic,
            group_id=group,
            auto_offset_reset="earliest",
            consumer_timeout_ms=8000,
            **kafka_python(secured, "alice"),
        )
        try:
            return [m.value for m in consumer]
        finally:
            consumer.close()

    with pytest.raises(kafka_errors.GroupAuthorizationFailedError):
        consume()
    grant(secured, "User:alice", AclOperation.READ, ResourceType.GROUP, group)
    assert consume() == [b"v"]


def test_deny_overrides_allow(secured):
    topic = new_name("deny")
    create_topic(secured, topic)
    grant(secured, "User:bob", AclOperation.ALL, ResourceType.TOPIC, topic)
    assert produce_error(secured, "bob", topic) is None
    grant(
        secured,
        "User:*",
        AclOperation.WRITE,
        ResourceType.TOPIC,
        topic,
        permission=AclPermissionType.DENY,
    )
    error = produce_error(secured, "bob", topic)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_prefixed_acls(secured):
    prefix = new_name("pre") + "-"
    inside, outside = prefix + "a", new_name("other")
    for name in (inside, outside):
        create_topic(secured, name)
    grant(
        secured,
        "User:bob",
        AclOperation.WRITE,
        ResourceType.TOPIC,
        prefix,
        pattern=ResourcePatternType.PREFIXED,
    )
    assert produce_error(secured, "bob", inside) is None
    error = produce_error(secured, "bob", outside)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_metadata_leaves_out_topics_the_principal_may_not_describe(secured):
    visible, hidden = new_name("vis"), new_name("hid")
    for name in (visible, hidden):
        create_topic(secured, name)
    grant(secured, "User:alice", AclOperation.READ, ResourceType.TOPIC, visible)
    client = admin(secured, "alice")
    topics = client.list_topics(timeout=30).topics
    assert visible in topics and hidden not in topics
    # Asked by name: denied and missing look alike.
    asked = client.list_topics(hidden, timeout=30).topics[hidden]
    assert asked.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    described = client.describe_topics(
        TopicCollection([visible]), include_authorized_operations=True
    )[visible].result(30)
    assert set(described.authorized_operations) == {AclOperation.READ, AclOperation.DESCRIBE}
    cluster = client.describe_cluster(include_authorized_operations=True).result(30)
    assert not cluster.authorized_operations  # none (librdkafka: None for an empty set)
    everything = admin(secured).describe_cluster(include_authorized_operations=True).result(30)
    assert AclOperation.CLUSTER_ACTION in everything.authorized_operations


def test_topic_creation_and_deletion_need_their_rights(secured):
    name = new_name("create")
    futures = admin(secured, "alice").create_topics([NewTopic(name, 1, 1)])
    with pytest.raises(KafkaException) as refused:
        futures[name].result(30)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(secured, "User:alice", AclOperation.CREATE, ResourceType.TOPIC, name)
    admin(secured, "alice").create_topics([NewTopic(name, 1, 1)])[name].result(30)
    with pytest.raises(KafkaException) as not_deletable:
        admin(secured, "alice").delete_topics([name])[name].result(30)
    assert not_deletable.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_configs_need_describe_configs_or_alter_configs(secured):
    topic = new_name("cfg")
    create_topic(secured, topic)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    client = admin(secured, "alice")
    with pytest.raises(KafkaException) as refused:
        client.describe_configs([resource])[resource].result(30)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    broker = ConfigResource(ConfigResource.Type.BROKER, "1")
    with pytest.raises(KafkaException) as cluster_refused:
        client.describe_configs([broker])[broker].result(30)
    assert cluster_refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    # AlterConfigs implies DescribeConfigs.
    grant(secured, "User:alice", AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, topic)
    described = client.describe_configs([resource])[resource].result(30)
    assert "retention.ms" in described


def test_log_dir_apis_need_cluster_rights(secured):
    described = raw_call(secured, "alice", 35, 4, topics=None)
    assert described.error_code == ErrorCode.cluster_authorization_failed
    assert described.results == ()
    assert raw_call(secured, "admin", 35, 4, topics=None).error_code == ErrorCode.none
    module = request_module(34, 2)
    moved = raw_call(
        secured,
        "alice",
        34,
        2,
        dirs=(
            module.AlterReplicaLogDir(
                path="/nowhere",
                topics=(module.AlterReplicaLogDirTopic(name="t", partitions=(i32(0),)),),
            ),
        ),
    )
    codes = [p.error_code for t in moved.results for p in t.partitions]
    assert codes == [ErrorCode.cluster_authorization_failed]


def error_codes(response) -> set[int]:
    """Every error_code in a response, at any depth."""
    found: set[int] = set()

    def walk(value) -> None:
        if isinstance(value, tuple):
            for item in value:
                walk(item)
        elif dataclasses.is_dataclass(value):
            for field in dataclasses.fields(value):
                item = getattr(value, field.name)
                if field.name == "error_code":
                    found.add(int(item))
                else:
                    walk(item)

    walk(response)
    return found


def test_every_api_answers_its_kafka_error_to_a_principal_without_acls(secured):
    """A principal granted nothing (dave) gets, from each API, the error code Kafka's
    KafkaApis answers with: the topic's, the group's, the transactional id's or the
    cluster's AUTHORIZATION_FAILED, and nothing else in the response; lists are filtered
    instead. The same requests from the super user pass the authorizer (changes are
    validate_only: the authorizer is asked before the validation)."""
    topic, group, transactional_id = new_name("api"), new_name("api-g"), new_name("api-tx")
    create_topic(secured, topic)
    assert produce_error(secured, "admin", topic) is None
    timeout = datetime.timedelta(seconds=10)
    topic_failed = ErrorCode.topic_authorization_failed
    group_failed = ErrorCode.group_authorization_failed
    txn_failed = ErrorCode.transactional_id_authorization_failed
    cluster_failed = ErrorCode.cluster_authorization_failed

    def m(api_key: int, version: int):
        return request_module(api_key, version)

    calls = {
        # api name: (api key, version, fields, the error Kafka answers)
        "ListOffsets": (2, 7, dict(
            replica_id=BrokerId(-1), isolation_level=i8(0),
            topics=(m(2, 7).ListOffsetsTopic(name=topic, partitions=(
                m(2, 7).ListOffsetsPartition(
                    partition_index=i32(0), current_leader_epoch=i32(-1), timestamp=i64(-1)),
            )),),
        ), topic_failed),
        "OffsetCommit": (8, 9, dict(
            group_id=group, generation_id_or_member_epoch=i32(-1), member_id="",
            group_instance_id=None,
            topics=(m(8, 9).OffsetCommitRequestTopic(name=topic, partitions=(
                m(8, 9).OffsetCommitRequestPartition(
                    partition_index=i32(0), committed_offset=i64(1),
                    committed_leader_epoch=i32(-1), committed_metadata=None),
            )),),
        ), group_failed),
        "OffsetFetch": (9, 9, dict(
            groups=(m(9, 9).OffsetFetchRequestGroup(
                group_id=group, member_id=None, member_epoch=i32(-1), topics=None),),
            require_stable=False,
        ), group_failed),
        "FindCoordinator(group)": (10, 6, dict(key_type=i8(0), coordinator_keys=(group,)),
                                   group_failed),
        "FindCoordinator(transaction)": (
            10, 6, dict(key_type=i8(1), coordinator_keys=(transactional_id,)), txn_failed),
        "JoinGroup": (11, 9, dict(
            group_id=group, session_timeout=timeout, rebalance_timeout=timeout, member_id="",
            group_instance_id=None, protocol_type="consumer",
            protocols=(m(11, 9).JoinGroupRequestProtocol(name="range", metadata=b""),),
            reason=None,
        ), group_failed),
        "DescribeGroups": (15, 5, dict(groups=(group,), include_authorized_operations=True),
                           group_failed),
        "DeleteRecords": (21, 2, dict(
            topics=(m(21, 2).DeleteRecordsTopic(name=topic, partitions=(
                m(21, 2).DeleteRecordsPartition(partition_index=i32(0), offset=i64(1)),)),),
            timeout=timeout,
        ), topic_failed),
        "InitProducerId(transactional)": (22, 4, dict(
            transactional_id=transactional_id, transaction_timeout=timeout,
            producer_id=ProducerId(-1), producer_epoch=i16(-1),
        ), txn_failed),
        "InitProducerId(idempotent)": (22, 4, dict(
            transactional_id=None, transaction_timeout=timeout,
            producer_id=ProducerId(-1), producer_epoch=i16(-1),
        ), cluster_failed),
        "OffsetForLeaderEpoch": (23, 4, dict(
            replica_id=BrokerId(-1),
            topics=(m(23, 4).OffsetForLeaderTopic(topic=topic, partitions=(
                m(23, 4).OffsetForLeaderPartition(
                    partition=i32(0), current_leader_epoch=i32(-1), leader_epoch=i32(0)),)),),
        ), topic_failed),
        "EndTxn": (26, 3, dict(
            transactional_id=transactional_id, producer_id=ProducerId(1),
            producer_epoch=i16(0), committed=True,
        ), txn_failed),
        "AlterConfigs(topic)": (33, 2, dict(
            resources=(m(33, 2).AlterConfigsResource(
                resource_type=i8(2), resource_name=topic,
                configs=(m(33, 2).AlterableConfig(name="retention.ms", value="1000"),)),),
            validate_only=True,
        ), topic_failed),
        "IncrementalAlterConfigs(broker)": (44, 1, dict(
            resources=(m(44, 1).AlterConfigsResource(
                resource_type=i8(4), resource_name="1",
                configs=(m(44, 1).AlterableConfig(
                    name="log.retention.ms", config_operation=i8(0), value="1000"),)),),
            validate_only=True,
        ), cluster_failed),
        "CreatePartitions": (37, 3, dict(
            topics=(m(37, 3).CreatePartitionsTopic(name=topic, count=i32(3), assignments=None),),
            timeout=timeout, validate_only=True,
        ), topic_failed),
        "DeleteGroups": (42, 2, dict(groups_names=(group,)), group_failed),
        "ElectLeaders": (43, 2, dict(
            election_type=i8(0),
            topic_partitions=(m(43, 2).TopicPartitions(topic=topic, partitions=(i32(0),)),),
            timeout=timeout,
        ), cluster_failed),
        "AlterPartitionReassignments": (45, 0, dict(
            timeout=timeout,
            topics=(m(45, 0).ReassignableTopic(name=topic, partitions=(
                m(45, 0).ReassignablePartition(partition_index=i32(0), replicas=(BrokerId(1),)),
            )),),
        ), cluster_failed),
        "ListPartitionReassignments": (46, 0, dict(timeout=timeout, topics=None),
                                       cluster_failed),
        "OffsetDelete": (47, 0, dict(group_id=group, topics=(
            m(47, 0).OffsetDeleteRequestTopic(name=topic, partitions=(
                m(47, 0).OffsetDeleteRequestPartition(partition_index=i32(0)),)),)),
            group_failed),
        "DescribeUserScramCredentials": (50, 0, dict(users=None), cluster_failed),
        "AlterUserScramCredentials": (51, 0, dict(deletions=(
            m(51, 0).ScramCredentialDeletion(name="alice", mechanism=i8(2)),), upsertions=()),
            cluster_failed),
        "DescribeProducers": (61, 0, dict(topics=(
            m(61, 0).TopicRequest(name=topic, partition_indexes=(i32(0),)),)), topic_failed),
        "DescribeTransactions": (65, 0, dict(transactional_ids=(transactional_id,)),
                                 txn_failed),
        "ConsumerGroupHeartbeat": (68, 0, dict(
            group_id=group, member_id="", member_epoch=i32(0), instance_id=None, rack_id=None,
            rebalance_timeout=timeout, subscribed_topic_names=(topic,),
            server_assignor=None, topic_partitions=(),
        ), group_failed),
        "ConsumerGroupDescribe": (69, 0, dict(
            group_ids=(group,), include_authorized_operations=True), group_failed),
    }  # fmt: skip
    # The group coordinator ready first (a commit of another group lands), so that a refused
    # commit could only be kept out by the authorizer.
    # (FindCoordinator makes __consumer_offsets, as in Kafka.)
    other = {**calls["OffsetCommit"][2], "group_id": new_name("api-warm")}
    deadline = time.monotonic() + 30
    while True:
        raw_call(secured, "admin", 10, 6, key_type=i8(0), coordinator_keys=(other["group_id"],))
        codes = error_codes(raw_call(secured, "admin", 8, 9, **other))
        if codes == {0}:
            break
        assert time.monotonic() < deadline, f"the group coordinator never became ready: {codes}"
        time.sleep(0.2)

    wrong = {}
    for name, (api_key, version, fields, expected) in calls.items():
        codes = error_codes(raw_call(secured, "dave", api_key, version, **fields))
        if codes != {expected}:
            wrong[name] = (sorted(ErrorCode(c).name for c in codes), expected.name)
    assert not wrong, wrong
    # ...and nothing was done: dave's refused commit was not stored.
    fetched = raw_call(
        secured, "admin", 9, 9, require_stable=False,
        groups=(m(9, 9).OffsetFetchRequestGroup(
            group_id=group, member_id=None, member_epoch=i32(-1),
            topics=(m(9, 9).OffsetFetchRequestTopics(name=topic, partition_indexes=(i32(0),)),),
        ),),
    )  # fmt: skip
    (partition,) = fetched.groups[0].topics[0].partitions
    assert partition.committed_offset == -1

    # The super user passes the authorizer on every one of them.
    for name, (api_key, version, fields, _) in calls.items():
        if name == "DescribeTransactions":
            continue  # kio cannot read the -1 start time of an id without a transaction
        codes = error_codes(raw_call(secured, "admin", api_key, version, **fields))
        refused = {topic_failed, group_failed, txn_failed, cluster_failed} & codes
        assert not refused, (name, codes)

    # Lists are filtered, not refused: dave sees none of the groups (the super user's
    # ConsumerGroupHeartbeat above made `group`).
    listed = raw_call(secured, "dave", 16, 5, states_filter=(), types_filter=())
    assert listed.error_code == ErrorCode.none and listed.groups == ()
    everyone = raw_call(secured, "admin", 16, 5, states_filter=(), types_filter=())
    assert group in [g.group_id for g in everyone.groups]


def test_describe_groups_answers_the_operations_the_principal_may_do(secured):
    """DescribeGroups with include_authorized_operations: Kafka's bit field (bit n for the
    AclOperation of code n) of what the caller may do to the group under the ACLs: READ
    (which implies DESCRIBE) for alice, everything a group supports for the super user."""
    topic, group = new_name("ops"), new_name("ops-g")
    create_topic(secured, topic)
    module = request_module(8, 9)
    commit = dict(
        group_id=group, generation_id_or_member_epoch=i32(-1), member_id="",
        group_instance_id=None,
        topics=(module.OffsetCommitRequestTopic(name=topic, partitions=(
            module.OffsetCommitRequestPartition(
                partition_index=i32(0), committed_offset=i64(0),
                committed_leader_epoch=i32(-1), committed_metadata=None),
        )),),
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:  # the group exists (empty, with an offset) once the coordinator is ready
        raw_call(secured, "admin", 10, 6, key_type=i8(0), coordinator_keys=(group,))
        codes = error_codes(raw_call(secured, "admin", 8, 9, **commit))
        if codes == {0}:
            break
        assert time.monotonic() < deadline, codes
        time.sleep(0.2)
    grant(secured, "User:alice", AclOperation.READ, ResourceType.GROUP, group)

    def operations(user: str) -> set[str]:
        (described,) = raw_call(
            secured, user, 15, 5, groups=(group,), include_authorized_operations=True
        ).groups
        assert described.error_code == ErrorCode.none
        bits = described.authorized_operations
        return {op.name for op in AclOperation if op.value >= 0 and bits & (1 << op.value)}

    assert operations("alice") == {"READ", "DESCRIBE"}
    assert operations("admin") == {"READ", "DESCRIBE", "DELETE"}


# Inter-broker requests ------------------------------------------------------------------------


def test_a_non_broker_principal_is_refused_cluster_action(secured):
    """LeaderAndIsr, StopReplica and UpdateMetadata from a principal without CLUSTER_ACTION
    are refused with CLUSTER_AUTHORIZATION_FAILED, on the client listener and on the
    inter-broker one alike (with an authorizer the principal decides, not the listener)."""

    async def send(user: str, request, address: str):
        host, port = address.rsplit(":", 1)
        security = ClientSecurity("SASL_PLAINTEXT", sasl_username=user, sasl_password=USERS[user])
        connection = BrokerConnection(host, int(port), security=security, request_timeout=15)
        try:
            return await connection.send(request)
        finally:
            await connection.close()

    requests = {
        "LeaderAndIsr": interbroker.LeaderAndIsrRequest(
            controller_id=1, controller_epoch=0, topic_states=(), live_leaders=()
        ),
        "StopReplica": interbroker.StopReplicaRequest(
            controller_id=1, controller_epoch=0, topic_states=()
        ),
        "UpdateMetadata": interbroker.UpdateMetadataRequest(
            controller_id=1, controller_epoch=0, topic_states=(), live_brokers=()
        ),
    }
    for name, request in requests.items():
        for address in (secured.bootstrap, secured.internal_bootstrap):
            refused = asyncio.run(send("alice", request, address))
            assert refused.error_code == ErrorCode.cluster_authorization_failed, (name, address)
        # The broker's own principal (a super user) gets past the authorizer to the epoch
        # checks.
        passed = asyncio.run(send("admin", request, secured.internal_bootstrap))
        assert passed.error_code != ErrorCode.cluster_authorization_failed, name


def test_a_follower_fetch_without_cluster_action_is_refused(secured):
    """A Fetch with a replica id from a principal without CLUSTER_ACTION: every partition
    TOPIC_AUTHORIZATION_FAILED (Kafka), even with READ on the topic and on the inter-broker
    listener (with an authorizer the principal decides, not the listener)."""
    topic = new_name("follow")
    create_topic(secured, topic)
    grant(secured, "User:alice", AclOperation.READ, ResourceType.TOPIC, topic)
    module = request_module(1, 12)

    def fetch(user: str, replica_id: int, address=None):
        return raw_call(
            secured,
            user,
            1,
            12,
            address=address,
            replica_id=BrokerId(replica_id),
            max_wait=datetime.timedelta(0),
            min_bytes=i32(0),
            session_id=i32(0),
            session_epoch=i32(-1),
            topics=(
                module.FetchTopic(
                    topic=topic,
                    partitions=(
                        module.FetchPartition(
                            partition=i32(0), fetch_offset=i64(0), partition_max_bytes=i32(1024)
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
            rack_id="",
        )

    def codes(response):
        return [p.error_code for t in response.responses for p in t.partitions]

    assert codes(fetch("alice", 2)) == [ErrorCode.topic_authorization_failed]
    internal = secured.internal_bootstrap
    assert codes(fetch("alice", 2, internal)) == [ErrorCode.topic_authorization_failed]
    assert codes(fetch("admin", 2, internal)) == [ErrorCode.none]  # the brokers' principal
    assert codes(fetch("alice", -1)) == [ErrorCode.none]  # as a consumer, READ suffices


# The command line ------------------------------------------------------------------------------


def test_brokerd_acls_through_the_admin_api(secured, tmp_path):
    config = tmp_path / "admin.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret";\n'
    )
    topic, group = new_name(), new_name("g")
    create_topic(secured, topic)
    base = ["--bootstrap-server", secured.bootstrap, "--command-config", str(config)]
    added = brokerd_acls(
        *base, "--add", "--allow-principal", "User:bob", "--producer", "--topic", topic
    )
    assert added.returncode == 0, added.stderr
    assert "operation=WRITE, permissionType=ALLOW" in added.stdout
    assert produce_error(secured, "bob", topic) is None
    listed = brokerd_acls(*base, "--list", "--topic", topic)
    assert f"name={topic}, patternType=LITERAL" in listed.stdout
    assert listed.stdout.count("principal=User:bob") == 3  # WRITE, DESCRIBE, CREATE
    consumer = brokerd_acls(
        *base,
        "--add",
        "--allow-principal",
        "User:bob",
        "--consumer",
        "--topic",
        topic,
        "--group",
        group,
    )
    assert consumer.returncode == 0, consumer.stderr
    removed = brokerd_acls(*base, "--remove", "--topic", topic, "--force")
    assert removed.returncode == 0, removed.stderr
    error = produce_error(secured, "bob", topic)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert "principal=User:bob" not in brokerd_acls(*base, "--list", "--topic", topic).stdout


# Several brokers --------------------------------------------------------------------------------


def test_acl_changes_reach_every_broker(zookeeper, tmp_path_factory):
    """Two brokers of one cluster (replicating over SASL as the super user): an ACL created
    through one broker, and one written by `brokerd acls` on ZooKeeper, are applied by the
    other from the change notifications."""
    first = secured_broker(zookeeper, tmp_path_factory)
    zk_connect = first.props["zookeeper.connect"]
    second = secured_broker(zookeeper, tmp_path_factory, zk_connect=zk_connect, broker_id=2)
    try:
        first.start()
        second.start()
        topic = new_name("two")
        admin(first).create_topics([NewTopic(topic, 1, 2)])[topic].result(30)
        binding = grant(first, "User:alice", AclOperation.READ, ResourceType.TOPIC, topic)
        exact = AclBindingFilter(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )

        def seen_by_second() -> list:
            # DescribeAcls answers from the broker's own copy of the ACLs.
            deadline = time.monotonic() + 10
            while True:
                found = admin(second).describe_acls(exact).result(30)
                if found or time.monotonic() > deadline:
                    return found
                time.sleep(0.1)

        assert seen_by_second() == [binding]
        # alice's Metadata on the second broker now shows the topic.
        assert topic in admin(second, "alice").list_topics(timeout=30).topics
        done = brokerd_acls(
            "--authorizer-properties",
            f"zookeeper.connect={zk_connect}",
            "--remove",
            "--topic",
            topic,
        )
        assert done.returncode == 0, done.stderr
        assert seen_by_second() == []
        assert topic not in admin(second, "alice").list_topics(timeout=30).topics
        # Replication between the brokers (CLUSTER_ACTION as the super user) works.
        assert produce_error(first, "admin", topic) is None
    finally:
        first.kill()
        second.kill()
