"""The ACL authorizer's decisions and Kafka's filter semantics, without I/O: literal, `*` and
prefixed patterns, deny over allow, host and principal wildcards, super users,
allow.everyone.if.no.acl.found, Kafka's operation implications, authorizeByResourceType,
the authorized-operations bit fields, and the ZooKeeper payloads as Kafka writes them."""

from __future__ import annotations

import json

import pytest

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
    decode_acls,
    decode_change,
    encode_acls,
    encode_extended_change,
    encode_literal_change,
    validate_binding,
)
from brokerd.security.authorizer import (
    AclAuthorizer,
    UnsupportedAuthorizerError,
    authorizer_enabled,
    parse_super_users,
)

Op = AclOperation
T = ResourceType
ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY
ALICE = "User:alice"
HOST = "10.0.0.1"


def ace(principal=ALICE, op=Op.READ, permission=ALLOW, host="*"):
    return AccessControlEntry(principal, host, op, permission)


def topic(name, pattern=PatternType.LITERAL):
    return ResourcePattern(T.TOPIC, name, pattern)


def authorizer(*acls, **options) -> AclAuthorizer:
    a = AclAuthorizer(**options)
    by_pattern: dict = {}
    for pattern, entry in acls:
        by_pattern.setdefault(pattern, set()).add(entry)
    for pattern, entries in by_pattern.items():
        a.set_acls(pattern, entries)
    return a


def test_no_acl_denies_unless_allow_everyone():
    assert not authorizer().authorize(ALICE, HOST, Op.READ, T.TOPIC, "t")
    assert authorizer(allow_everyone_if_no_acl_found="true").authorize(
        ALICE, HOST, Op.READ, T.TOPIC, "t"
    )
    # Once any ACL names the resource, allow-everyone no longer applies to it.
    a = authorizer((topic("t"), ace("User:bob")), allow_everyone_if_no_acl_found=True)
    assert not a.authorize(ALICE, HOST, Op.READ, T.TOPIC, "t")
    assert a.authorize(ALICE, HOST, Op.READ, T.TOPIC, "other")


def test_literal_wildcard_and_prefixed_patterns():
    a = authorizer(
        (topic("orders"), ace(op=Op.WRITE)),
        (topic("*"), ace(op=Op.DESCRIBE)),
        (topic("app-", PatternType.PREFIXED), ace(op=Op.READ)),
    )
    assert a.authorize(ALICE, HOST, Op.WRITE, T.TOPIC, "orders")
    assert not a.authorize(ALICE, HOST, Op.WRITE, T.TOPIC, "orders2")
    assert a.authorize(ALICE, HOST, Op.DESCRIBE, T.TOPIC, "anything")
    assert a.authorize(ALICE, HOST, Op.READ, T.TOPIC, "app-events")
    assert not a.authorize(ALICE, HOST, Op.READ, T.TOPIC, "ap")
    assert not a.authorize(ALICE, HOST, Op.READ, T.GROUP, "app-events")  # other type


def test_deny_wins_over_allow_and_only_for_its_operation():
    a = authorizer(
        (topic("*"), ace(op=Op.ALL)),
        (topic("secret", PatternType.PREFIXED), ace(op=Op.READ, permission=DENY)),
    )
    assert a.authorize(ALICE, HOST, Op.READ, T.TOPIC, "public")
    assert not a.authorize(ALICE, HOST, Op.READ, T.TOPIC, "secret-plans")
    # A DENY READ does not deny DESCRIBE (Kafka matches deny on the exact operation).
    assert a.authorize(ALICE, HOST, Op.DESCRIBE, T.TOPIC, "secret-plans")
    b = authorizer((topic("t"), ace(op=Op.READ)), (topic("t"), ace(op=Op.ALL, permission=DENY)))
    assert not b.authorize(ALICE, HOST, Op.READ, T.TOPIC, "t")


def test_implications_as_kafka():
    for granted in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        a = authorizer((topic("t"), ace(op=granted)))
        assert a.authorize(ALICE, HOST, Op.DESCRIBE, T.TOPIC, "t"), granted
    a = authorizer((topic("t"), ace(op=Op.ALTER_CONFIGS)))
    assert a.authorize(ALICE, HOST, Op.DESCRIBE_CONFIGS, T.TOPIC, "t")
    assert not a.authorize(ALICE, HOST, Op.ALTER, T.TOPIC, "t")
    a = authorizer((topic("t"), ace(op=Op.READ)))
    assert not a.authorize(ALICE, HOST, Op.WRITE, T.TOPIC, "t")
    assert not a.authorize(ALICE, HOST, Op.DESCRIBE_CONFIGS, T.TOPIC, "t")


def test_principal_and_host_matching():
    a = authorizer(
        (topic("t"), ace("User:*", op=Op.READ, host=HOST)),
        (topic("u"), ace(ALICE, op=Op.READ, host="10.0.0.2")),
    )
    assert a.authorize("User:anyone", HOST, Op.READ, T.TOPIC, "t")
    assert not a.authorize("User:anyone", "10.9.9.9", Op.READ, T.TOPIC, "t")
    assert not a.authorize(ALICE, HOST, Op.READ, T.TOPIC, "u")
    assert a.authorize(ALICE, "10.0.0.2", Op.READ, T.TOPIC, "u")


def test_super_users_bypass_deny():
    assert parse_super_users(" User:admin ; User:broker;") == {"User:admin", "User:broker"}
    a = authorizer(
        (topic("*"), ace("User:*", op=Op.ALL, permission=DENY)),
        super_users=parse_super_users("User:admin;User:broker"),
    )
    assert a.authorize("User:admin", HOST, Op.DELETE, T.TOPIC, "t")
    assert not a.authorize(ALICE, HOST, Op.DESCRIBE, T.TOPIC, "t")


def test_authorize_by_resource_type():
    assert not authorizer().authorize_by_resource_type(ALICE, HOST, Op.WRITE, T.TOPIC)
    a = authorizer((topic("orders"), ace(op=Op.WRITE)))
    assert a.authorize_by_resource_type(ALICE, HOST, Op.WRITE, T.TOPIC)
    assert not a.authorize_by_resource_type("User:bob", HOST, Op.WRITE, T.TOPIC)
    denied = authorizer(
        (topic("orders"), ace(op=Op.WRITE)),
        (topic("ord", PatternType.PREFIXED), ace(op=Op.WRITE, permission=DENY)),
    )
    assert not denied.authorize_by_resource_type(ALICE, HOST, Op.WRITE, T.TOPIC)


def test_authorized_operations_bit_fields():
    a = authorizer((topic("t"), ace(op=Op.READ)))
    bits = a.authorized_operations(ALICE, HOST, T.TOPIC, "t")
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert a.authorized_operations(ALICE, HOST, T.TOPIC, "other") == 0


def test_filters_follow_kafkas_semantics():
    literal = AclBinding(topic("orders"), ace())
    wildcard = AclBinding(topic("*"), ace())
    prefixed = AclBinding(topic("ord", PatternType.PREFIXED), ace())
    everything = [literal, wildcard, prefixed]

    def matched(**kw):
        f = AclBindingFilter(**kw)
        return [b for b in everything if f.matches(b)]

    assert matched() == everything
    assert matched(resource_type=T.TOPIC, name="orders", pattern_type=PatternType.MATCH) == (
        everything
    )
    assert matched(name="orders", pattern_type=PatternType.ANY) == [literal]
    assert matched(name="orders", pattern_type=PatternType.LITERAL) == [literal]
    assert matched(pattern_type=PatternType.PREFIXED) == [prefixed]
    assert matched(principal="User:bob") == []
    assert matched(operation=Op.WRITE) == []
    assert matched(permission_type=ALLOW, host="*") == everything
    with pytest.raises(AclError):
        AclBindingFilter(operation=Op.UNKNOWN).validate()


def test_validation_refuses_what_kafka_refuses():
    validate_binding(AclBinding(topic("t"), ace()))
    bad = [
        AclBinding(topic("t", PatternType.MATCH), ace()),
        AclBinding(topic("t"), ace(op=Op.ANY)),
        AclBinding(topic("a/b"), ace()),
        AclBinding(ResourcePattern(T.CLUSTER, "other"), ace(op=Op.ALTER)),
        AclBinding(topic("t"), ace(principal="alice")),
        AclBinding(ResourcePattern(T.ANY, "t"), ace()),
    ]
    for binding in bad:
        with pytest.raises(AclError):
            validate_binding(binding)


def test_zookeeper_payloads_are_kafkas():
    entries = {ace(op=Op.IDEMPOTENT_WRITE, host="1.2.3.4"), ace("User:bob", Op.READ, DENY)}
    raw = encode_acls(entries)
    data = json.loads(raw)
    assert data["version"] == 1
    assert {
        "principal": "User:alice",
        "permissionType": "Allow",
        "operation": "IdempotentWrite",
        "host": "1.2.3.4",
    } in data["acls"]
    assert decode_acls(raw) == entries
    # Kafka's own spelling read back (and an operation this broker does not know skipped).
    kafka = (
        b'{"version":1,"acls":[{"principal":"User:x","permissionType":"Deny",'
        b'"operation":"DescribeConfigs","host":"*"},{"principal":"User:y",'
        b'"permissionType":"Allow","operation":"Teleport","host":"*"}]}'
    )
    assert decode_acls(kafka) == {ace("User:x", Op.DESCRIBE_CONFIGS, DENY)}
    assert encode_literal_change(topic("orders")) == b"TOPIC:orders"
    assert decode_change(b"Topic:orders", extended=False) == topic("orders")
    prefixed = ResourcePattern(T.TRANSACTIONAL_ID, "tx-", PatternType.PREFIXED)
    event = json.loads(encode_extended_change(prefixed))
    assert event == {
        "version": 1,
        "resourceType": "TRANSACTIONAL_ID",
        "name": "tx-",
        "patternType": "PREFIXED",
    }
    assert decode_change(encode_extended_change(prefixed), extended=True) == prefixed


def test_authorizer_class_names():
    assert not authorizer_enabled("")
    assert authorizer_enabled("kafka.security.authorizer.AclAuthorizer")
    assert authorizer_enabled("kafka.security.auth.SimpleAclAuthorizer")
    with pytest.raises(UnsupportedAuthorizerError):
        authorizer_enabled("com.example.MyAuthorizer")
