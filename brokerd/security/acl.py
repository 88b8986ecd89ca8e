"""Kafka's ACL model: resource types, operations, permission and pattern types with Kafka's
codes and names, resource patterns, access control entries, bindings, Kafka's filter
semantics (AclBindingFilter, with the ANY and MATCH pattern types), and the JSON Kafka
stores them in under /kafka-acl (AclEntry.toJsonCompatibleMap). No I/O."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

WILDCARD_RESOURCE = "*"
WILDCARD_HOST = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


def _camel(name: str) -> str:
    """TRANSACTIONAL_ID -> TransactionalId (Kafka's SecurityUtils.toPascalCase)."""
    return "".join(part.capitalize() for part in name.split("_"))


class _Named(IntEnum):
    @property
    def kafka_name(self) -> str:
        """The name Kafka writes in ZooKeeper and prints (Topic, IdempotentWrite, Allow)."""
        return _camel(self.name)

    @classmethod
    def parse(cls, text: str):
        """By Kafka name, enum name or any case ('Read', 'READ', 'read', 'idempotent_write',
        'IdempotentWrite'); ValueError if unknown."""
        wanted = text.replace("_", "").replace("-", "").upper()
        for member in cls:
            if member.name.replace("_", "") == wanted:
                return member
        raise ValueError(f"unknown {cls.__name__}: {text!r}")

    @classmethod
    def of(cls, code: int):
        """By wire code; UNKNOWN for a code this broker does not know."""
        try:
            return cls(code)
        except ValueError:
            return cls(0)


class ResourceType(_Named):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class AclOperation(_Named):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_Named):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class PatternType(_Named):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


# The resource types ACLs may name in ZooKeeper mode (AclAuthorizer's).
ACL_RESOURCE_TYPES = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
    ResourceType.DELEGATION_TOKEN,
    ResourceType.USER,
)

_O = AclOperation
# AclEntry.supportedOperations: what each resource type's authorized-operations field covers.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        _O.READ,
        _O.WRITE,
        _O.CREATE,
        _O.DESCRIBE,
        _O.DELETE,
        _O.ALTER,
        _O.DESCRIBE_CONFIGS,
        _O.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE),
    ResourceType.CLUSTER: (
        _O.CREATE,
        _O.CLUSTER_ACTION,
        _O.DESCRIBE_CONFIGS,
        _O.ALTER_CONFIGS,
        _O.IDEMPOTENT_WRITE,
        _O.ALTER,
        _O.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}

# Kafka's implications: an allow of any of these also allows the key (AclAuthorizer).
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    _O.DESCRIBE: frozenset({_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER}),
    _O.DESCRIBE_CONFIGS: frozenset({_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}),
}

# Kafka's authorized-operations value when the client did not ask (Integer.MIN_VALUE).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def operations_bitfield(operations: Iterable[AclOperation]) -> int:
    """Utils.to32BitField: bit `code` set for each operation."""
    bits = 0
    for operation in operations:
        bits |= 1 << int(operation)
    return bits


class AclError(ValueError):
    """An ACL or filter that cannot be stored or matched (Kafka answers INVALID_REQUEST)."""


def parse_principal(text: str) -> tuple[str, str]:
    """`Type:name` -> (type, name), as SecurityUtils.parseKafkaPrincipal."""
    kind, sep, name = (text or "").partition(":")
    if not sep or not kind or not name:
        raise AclError(f"expected a string in format principalType:principalName but got {text!r}")
    return kind, name


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name})"
        )


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def to_json(self) -> dict[str, str]:
        return {
            "principal": self.principal,
            "permissionType": self.permission_type.kafka_name,
            "operation": self.operation.kafka_name,
            "host": self.host,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AccessControlEntry:
        return cls(
            principal=str(data["principal"]),
            host=str(data.get("host", WILDCARD_HOST)),
            operation=AclOperation.parse(str(data["operation"])),
            permission_type=AclPermissionType.parse(str(data["permissionType"])),
        )


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


def validate_binding(binding: AclBinding) -> None:
    """What Kafka refuses in CreateAcls (KafkaApis.validateAclBinding, AclAuthorizer)."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type not in ACL_RESOURCE_TYPES:
        raise AclError("ACL binding contains unknown elements")
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise AclError("ACL binding contains unknown elements")
    if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise AclError("ACL binding contains unknown elements")
    if entry.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise AclError("ACL binding contains unknown elements")
    if "/" in pattern.name:
        raise AclError(f"ACL binding contains invalid resource name: {pattern.name}")
    if not pattern.name:
        raise AclError("Invalid empty resource name specified")
    if pattern.resource_type == ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise AclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if entry.host is None:
        raise AclError("ACL binding has no host")
    parse_principal(entry.principal)


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Kafka's AclBindingFilter: None or ANY matches everything in that position."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def validate(self) -> None:
        if self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN:
            raise AclError("The filter contains unknown elements")
        if self.operation == AclOperation.UNKNOWN:
            raise AclError("The filter contains unknown elements")
        if self.permission_type == AclPermissionType.UNKNOWN:
            raise AclError("The filter contains unknown elements")

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        """ResourcePatternFilter.matches."""
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if (
            self.pattern_type
            not in (
                PatternType.ANY,
                PatternType.MATCH,
            )
            and self.pattern_type != pattern.pattern_type
        ):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        if pattern.pattern_type == PatternType.PREFIXED:
            return self.name.startswith(pattern.name)
        return False

    def matches_entry(self, entry: AccessControlEntry) -> bool:
        """AccessControlEntryFilter.matches."""
        if self.principal is not None and self.principal != entry.principal:
            return False
        if self.host is not None and self.host != entry.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != entry.operation:
            return False
        return (
            self.permission_type == AclPermissionType.ANY
            or self.permission_type == entry.permission_type
        )

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self.matches_entry(binding.entry)


# ZooKeeper payloads (kafka.zk.ResourceZNode, the change stores) -------------------------


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    """/kafka-acl/<Type>/<name>: {"version":1,"acls":[...]}."""
    ordered = sorted(entries, key=lambda e: (e.principal, e.host, e.operation, e.permission_type))
    return json.dumps(
        {"version": 1, "acls": [e.to_json() for e in ordered]}, separators=(",", ":")
    ).encode("utf-8")


def decode_acls(raw: bytes | None) -> frozenset[AccessControlEntry]:
    """A resource node's ACLs; entries this broker cannot read are skipped."""
    if not raw:
        return frozenset()
    data = json.loads(raw.decode("utf-8"))
    out = set()
    for item in (data or {}).get("acls") or ():
        try:
            out.add(AccessControlEntry.from_json(item))
        except (KeyError, ValueError, TypeError):
            continue
    return frozenset(out)


def encode_literal_change(pattern: ResourcePattern) -> bytes:
    """/kafka-acl-changes/acl_changes_<seq>: `TOPIC:name` (LiteralAclChangeStore)."""
    return f"{pattern.resource_type.name}:{pattern.name}".encode()


def encode_extended_change(pattern: ResourcePattern) -> bytes:
    """/kafka-acl-extended-changes/acl_changes_<seq>: ExtendedAclChangeEvent's JSON."""
    return json.dumps(
        {
            "version": 1,
            "resourceType": pattern.resource_type.name,
            "name": pattern.name,
            "patternType": pattern.pattern_type.name,
        },
        separators=(",", ":"),
    ).encode("utf-8")


def decode_change(raw: bytes, extended: bool) -> ResourcePattern:
    """The resource a change notification names; ValueError if unreadable."""
    text = raw.decode("utf-8")
    if not extended:
        kind, sep, name = text.partition(":")
        if not sep:
            raise ValueError(f"expected ResourceType:ResourceName, got {text!r}")
        return ResourcePattern(ResourceType.parse(kind), name, PatternType.LITERAL)
    data = json.loads(text)
    if int(data.get("version", 1)) > 1:
        raise ValueError(f"unsupported ACL change event version {data.get('version')}")
    return ResourcePattern(
        ResourceType.parse(str(data["resourceType"])),
        str(data["name"]),
        PatternType.parse(str(data["patternType"])),
    )
