"""The ACL authorizer's decisions, as Kafka's AclAuthorizer makes them, over an in-memory
copy of the ACLs (filled and kept current by brokerd.coordination.acl_store). No I/O.

An operation on a resource is allowed when the principal is a super user
(`super.users`, semicolon-separated principals), or when no DENY ACL matches and an ALLOW ACL
does; a resource no ACL matches at all is allowed only with
`allow.everyone.if.no.acl.found=true`. The ACLs that match a resource are those of the
literal pattern of its name, of the literal `*` of its type and of every prefixed pattern its
name starts with. An ACL matches a request when its principal is the request's or `User:*`,
its host the client's address or `*`, and its operation the one asked or ALL. Allowing READ,
WRITE, DELETE or ALTER also allows DESCRIBE, and ALTER_CONFIGS allows DESCRIBE_CONFIGS; a
DENY matches only the operation it names (or ALL).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .acl import (
    IMPLIED_BY,
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    operations_bitfield,
)

# Kafka's own class names, accepted for `authorizer.class.name` as the built-in authorizer.
AUTHORIZER_CLASS_NAMES = frozenset(
    {
        "kafka.security.authorizer.AclAuthorizer",
        "kafka.security.auth.SimpleAclAuthorizer",
        "brokerd.security.authorizer.AclAuthorizer",
    }
)


class UnsupportedAuthorizerError(ValueError):
    pass


def authorizer_enabled(class_name: str | None) -> bool:
    """`authorizer.class.name`: empty means no authorization; Kafka's ACL authorizer (under
    either of its names) means this one; anything else cannot be loaded here."""
    name = (class_name or "").strip()
    if not name:
        return False
    if name in AUTHORIZER_CLASS_NAMES:
        return True
    raise UnsupportedAuthorizerError(
        f"authorizer.class.name: {name} is not available; use "
        "kafka.security.authorizer.AclAuthorizer (or leave it empty)"
    )


def parse_super_users(text: str | None) -> frozenset[str]:
    """`super.users`: `User:admin;User:broker` (whitespace around each is ignored)."""
    return frozenset(p.strip() for p in (text or "").split(";") if p.strip())


def _flag(value: object) -> bool:
    return str(value).strip().lower() == "true"


class AclAuthorizer:
    def __init__(self, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found=False):
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = _flag(allow_everyone_if_no_acl_found)
        # Every pattern's ACLs; prefixed patterns also by type then name for prefix lookups.
        self._acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        self._prefixed: dict[ResourceType, dict[str, frozenset[AccessControlEntry]]] = {}

    @classmethod
    def from_config(cls, raw: dict[str, str]) -> AclAuthorizer:
        """From the broker's properties (`super.users`, `allow.everyone.if.no.acl.found` are
        the authorizer's own keys, as Kafka passes them to AclAuthorizer.configure)."""
        return cls(
            parse_super_users(raw.get("super.users")),
            raw.get("allow.everyone.if.no.acl.found", "false"),
        )

    # The ACL cache -----------------------------------------------------------------------
    def set_acls(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """Replace one pattern's ACLs (none: the pattern is forgotten)."""
        entries = frozenset(entries)
        if entries:
            self._acls[pattern] = entries
        else:
            self._acls.pop(pattern, None)
        if pattern.pattern_type == PatternType.PREFIXED:
            by_name = self._prefixed.setdefault(pattern.resource_type, {})
            if entries:
                by_name[pattern.name] = entries
            else:
                by_name.pop(pattern.name, None)

    def acls(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        return self._acls.get(pattern, frozenset())

    def patterns(self) -> list[ResourcePattern]:
        return list(self._acls)

    def bindings(self, acl_filter: AclBindingFilter) -> Iterator[AclBinding]:
        """Every stored ACL the filter matches (DescribeAcls, DeleteAcls)."""
        for pattern, entries in list(self._acls.items()):
            if not acl_filter.matches_pattern(pattern):
                continue
            for entry in entries:
                if acl_filter.matches_entry(entry):
                    yield AclBinding(pattern, entry)

    def matching_acls(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        """The ACLs that apply to a resource: its literal name, the literal `*`, and every
        prefixed pattern its name starts with (one lookup per prefix length)."""
        found: list[AccessControlEntry] = []
        found.extend(self._acls.get(ResourcePattern(resource_type, name), ()))
        if name != WILDCARD_RESOURCE:
            found.extend(self._acls.get(ResourcePattern(resource_type, WILDCARD_RESOURCE), ()))
        prefixed = self._prefixed.get(resource_type)
        if prefixed:
            if len(prefixed) < len(name):
                for prefix, entries in prefixed.items():
                    if name.startswith(prefix):
                        found.extend(entries)
            else:
                for end in range(1, len(name) + 1):
                    found.extend(prefixed.get(name[:end], ()))
        return found

    # Decisions ---------------------------------------------------------------------------
    def is_super_user(self, principal: str) -> bool:
        return principal in self.super_users

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        acls = self.matching_acls(resource_type, name)
        if not acls:
            return self.allow_everyone_if_no_acl_found
        if _matching(acls, principal, host, (operation,), AclPermissionType.DENY):
            return False
        allow_ops = IMPLIED_BY.get(operation, (operation,))
        return _matching(acls, principal, host, allow_ops, AclPermissionType.ALLOW)

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether the principal may do `operation` on at least one resource of the type
        (Kafka's authorizeByResourceType, used by InitProducerId for idempotent producers):
        an ALLOW pattern not covered by a DENY of the `*` literal, of the same literal or of
        a prefix of it."""
        if principal in self.super_users:
            return True
        # Kafka's default: a name no ACL names explicitly (covers allow-everyone and `*`).
        if self.authorize(principal, host, operation, resource_type, "\x00hardcode"):
            return True
        deny_literals: set[str] = set()
        deny_prefixes: set[str] = set()
        allow_literals: set[str] = set()
        allow_prefixes: set[str] = set()
        allow_ops = IMPLIED_BY.get(operation, frozenset((operation,)))
        for pattern, entries in self._acls.items():
            if pattern.resource_type != resource_type:
                continue
            for entry in entries:
                if not _entry_applies(entry, principal, host):
                    continue
                op = entry.operation
                if entry.permission_type == AclPermissionType.DENY and op in (
                    operation,
                    AclOperation.ALL,
                ):
                    target = (
                        deny_literals
                        if pattern.pattern_type == PatternType.LITERAL
                        else deny_prefixes
                    )
                    target.add(pattern.name)
                elif entry.permission_type == AclPermissionType.ALLOW and (
                    op in allow_ops or op == AclOperation.ALL
                ):
                    target = (
                        allow_literals
                        if pattern.pattern_type == PatternType.LITERAL
                        else allow_prefixes
                    )
                    target.add(pattern.name)
        if WILDCARD_RESOURCE in deny_literals:
            return False

        def dominated(name: str) -> bool:
            return any(name.startswith(prefix) for prefix in deny_prefixes)

        if any(not dominated(prefix) for prefix in allow_prefixes):
            return True
        return any(
            literal != WILDCARD_RESOURCE and literal not in deny_literals and not dominated(literal)
            for literal in allow_literals
        )

    def authorized_operations(
        self, principal: str, host: str, resource_type: ResourceType, name: str
    ) -> int:
        """The bit field Metadata, DescribeCluster and DescribeGroups answer when asked."""
        return operations_bitfield(
            op
            for op in SUPPORTED_OPERATIONS.get(resource_type, ())
            if self.authorize(principal, host, op, resource_type, name)
        )


def all_operations(resource_type: ResourceType) -> int:
    """The bit field without an authorizer: every operation the type supports (Kafka)."""
    return operations_bitfield(SUPPORTED_OPERATIONS.get(resource_type, ()))


def _entry_applies(entry: AccessControlEntry, principal: str, host: str) -> bool:
    return (entry.principal == principal or entry.principal == WILDCARD_PRINCIPAL) and (
        entry.host == host or entry.host == WILDCARD_HOST
    )


def _matching(
    acls: Iterable[AccessControlEntry],
    principal: str,
    host: str,
    operations: Iterable[AclOperation],
    permission: AclPermissionType,
) -> bool:
    wanted = set(operations)
    wanted.add(AclOperation.ALL)
    return any(
        entry.permission_type == permission
        and entry.operation in wanted
        and _entry_applies(entry, principal, host)
        for entry in acls
    )
