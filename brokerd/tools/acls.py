"""`brokerd acls`: ACLs like kafka-acls.sh, through a broker (CreateAcls, DescribeAcls,
DeleteAcls) or straight on ZooKeeper (to give the first admin its rights before any broker
runs, or when every principal is locked out).

    brokerd acls --bootstrap-server localhost:9092 --command-config admin.properties \\
        --add --allow-principal User:alice --operation Read --operation Describe --topic orders
    brokerd acls --authorizer-properties zookeeper.connect=localhost:2181 \\
        --add --allow-principal User:admin --operation All --cluster
    brokerd acls --bootstrap-server localhost:9092 --list [--topic orders] [--principal User:alice]
    brokerd acls --bootstrap-server localhost:9092 --remove --topic orders [--deny-principal ...]
    brokerd acls ... --add --allow-principal User:app --consumer --topic orders --group app
    brokerd acls ... --add --allow-principal User:app --producer --topic orders [--idempotent]

`--command-config` holds the client's settings as Kafka clients write them
(`security.protocol`, `sasl.mechanism`, `sasl.jaas.config` with username/password,
`ssl.truststore.location` or `ssl.ca.location` as a PEM file, `ssl.keystore.location` /
`ssl.certificate.location` + `ssl.key.location` for mutual TLS).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections import defaultdict
from collections.abc import Iterable

from kio.static.primitive import i8

from brokerd.client.connection import BrokerConnection, ClientSecurity
from brokerd.config.properties import parse_properties
from brokerd.coordination import zk_data
from brokerd.coordination.acl_store import AclStore
from brokerd.coordination.zk_client import ZkClient
from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.messages import request_module
from brokerd.security.acl import (
    CLUSTER_NAME,
    WILDCARD_HOST,
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
from brokerd.security.authorizer import AclAuthorizer

ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY


class CommandError(Exception):
    pass


def add_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--bootstrap-server", help="host:port of a broker")
    where.add_argument(
        "--authorizer-properties",
        nargs="+",
        metavar="KEY=VALUE",
        help="zookeeper.connect=host:port[/chroot]: change ZooKeeper directly",
    )
    parser.add_argument("--command-config", help="client properties file (security settings)")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true")
    action.add_argument("--remove", action="store_true")
    action.add_argument("--list", action="store_true")
    parser.add_argument("--allow-principal", action="append", default=[])
    parser.add_argument("--deny-principal", action="append", default=[])
    parser.add_argument("--allow-host", action="append", default=[])
    parser.add_argument("--deny-host", action="append", default=[])
    parser.add_argument("--principal", action="append", default=[], help="--list filter")
    parser.add_argument("--operation", action="append", default=[])
    parser.add_argument("--topic", action="append", default=[])
    parser.add_argument("--group", action="append", default=[])
    parser.add_argument("--transactional-id", action="append", default=[])
    parser.add_argument("--delegation-token", action="append", default=[])
    parser.add_argument("--cluster", action="store_true")
    parser.add_argument(
        "--resource-pattern-type",
        default="literal",
        type=str.lower,
        choices=["literal", "prefixed", "any", "match"],
    )
    parser.add_argument("--producer", action="store_true")
    parser.add_argument("--consumer", action="store_true")
    parser.add_argument("--idempotent", action="store_true")
    parser.add_argument("--force", action="store_true", help="accepted; nothing is asked")


# What the options mean --------------------------------------------------------------------


def _resources(args) -> list[ResourcePattern]:
    pattern_type = PatternType.parse(args.resource_pattern_type)
    out = [ResourcePattern(ResourceType.TOPIC, n, pattern_type) for n in args.topic]
    out += [ResourcePattern(ResourceType.GROUP, n, pattern_type) for n in args.group]
    out += [
        ResourcePattern(ResourceType.TRANSACTIONAL_ID, n, pattern_type)
        for n in args.transactional_id
    ]
    out += [
        ResourcePattern(ResourceType.DELEGATION_TOKEN, n, pattern_type)
        for n in args.delegation_token
    ]
    if args.cluster:
        out.append(ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME, pattern_type))
    return out


def _operations(args) -> list[AclOperation]:
    try:
        return [AclOperation.parse(o.strip()) for o in args.operation] or [AclOperation.ALL]
    except ValueError as exc:
        raise CommandError(str(exc)) from exc


def _entries(args, operations: Iterable[AclOperation]) -> list[AccessControlEntry]:
    out = []
    for principals, hosts, permission in (
        (args.allow_principal, args.allow_host, ALLOW),
        (args.deny_principal, args.deny_host, DENY),
    ):
        for principal in principals:
            for host in hosts or [WILDCARD_HOST]:
                for operation in operations:
                    out.append(AccessControlEntry(principal, host, operation, permission))
    return out


def bindings_to_add(args) -> list[AclBinding]:
    resources = _resources(args)
    if not args.allow_principal and not args.deny_principal:
        raise CommandError("--add needs --allow-principal or --deny-principal")
    if PatternType.parse(args.resource_pattern_type) not in (
        PatternType.LITERAL,
        PatternType.PREFIXED,
    ):
        raise CommandError("A '--resource-pattern-type' value of 'literal' or 'prefixed' is needed")
    by_resource: list[tuple[ResourcePattern, list[AclOperation]]] = []
    if args.producer or args.consumer:
        topics = [r for r in resources if r.resource_type == ResourceType.TOPIC]
        if not topics:
            raise CommandError("--producer and --consumer need --topic")
        for topic in topics:
            ops: list[AclOperation] = []
            if args.producer:
                ops += [AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE]
            if args.consumer:
                ops += [AclOperation.READ, AclOperation.DESCRIBE]
            by_resource.append((topic, list(dict.fromkeys(ops))))
        if args.consumer:
            groups = [r for r in resources if r.resource_type == ResourceType.GROUP]
            if not groups:
                raise CommandError("--consumer needs --group")
            by_resource += [(g, [AclOperation.READ]) for g in groups]
        if args.producer:
            by_resource += [
                (r, [AclOperation.WRITE, AclOperation.DESCRIBE])
                for r in resources
                if r.resource_type == ResourceType.TRANSACTIONAL_ID
            ]
            if args.idempotent:
                cluster = ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME)
                by_resource.append((cluster, [AclOperation.IDEMPOTENT_WRITE]))
    else:
        if not resources:
            raise CommandError("give a resource: --topic, --group, --cluster, ...")
        by_resource = [(r, _operations(args)) for r in resources]
    bindings = [
        AclBinding(resource, entry)
        for resource, operations in by_resource
        for entry in _entries(args, operations)
    ]
    for binding in bindings:
        try:
            validate_binding(binding)
        except AclError as exc:
            raise CommandError(str(exc)) from exc
    return bindings


def filters_of(args, removing: bool) -> list[AclBindingFilter]:
    """One filter per resource (or one for everything), narrowed by the principals, hosts
    and operations given, as kafka-acls.sh builds them."""
    pattern_type = PatternType.parse(args.resource_pattern_type)
    resources = _resources(args)
    targets: list[tuple[ResourceType, str | None, PatternType]] = [
        (r.resource_type, r.name, pattern_type) for r in resources
    ] or [(ResourceType.ANY, None, PatternType.ANY)]
    out = []
    for resource_type, name, patterns in targets:
        narrowing: list[tuple[str | None, str | None, AclOperation, AclPermissionType]] = []
        if removing and (args.allow_principal or args.deny_principal):
            for entry in _entries(
                args, _operations(args) if args.operation else [AclOperation.ANY]
            ):
                narrowing.append(
                    (entry.principal, entry.host, entry.operation, entry.permission_type)
                )
        elif args.principal:
            narrowing = [(p, None, AclOperation.ANY, AclPermissionType.ANY) for p in args.principal]
        else:
            narrowing = [(None, None, AclOperation.ANY, AclPermissionType.ANY)]
        for principal, host, operation, permission in narrowing:
            if host == WILDCARD_HOST and not (args.allow_host or args.deny_host):
                host = None  # no host given: any host
            out.append(
                AclBindingFilter(
                    resource_type, name, patterns, principal, host, operation, permission
                )
            )
    return out


# Output as kafka-acls.sh prints it ----------------------------------------------------------


def _entry_text(entry: AccessControlEntry) -> str:
    return (
        f"(principal={entry.principal}, host={entry.host}, operation={entry.operation.name}, "
        f"permissionType={entry.permission_type.name})"
    )


def print_grouped(title: str, bindings: Iterable[AclBinding]) -> None:
    grouped: dict[ResourcePattern, list[AccessControlEntry]] = defaultdict(list)
    for binding in bindings:
        grouped[binding.pattern].append(binding.entry)
    for pattern in sorted(grouped, key=lambda p: (p.resource_type, p.pattern_type, p.name)):
        print(f"{title} `{pattern}`: ")
        for entry in sorted(grouped[pattern], key=_entry_text):
            print(f" \t{_entry_text(entry)} ")
        print()


# Through ZooKeeper ---------------------------------------------------------------------------


def _zookeeper_connect(properties: list[str]) -> str:
    values = dict(p.split("=", 1) for p in properties if "=" in p)
    connect = values.get("zookeeper.connect")
    if not connect:
        raise CommandError("--authorizer-properties needs zookeeper.connect=host:port[/chroot]")
    return connect


async def run_on_zookeeper(args) -> int:
    connect = _zookeeper_connect(args.authorizer_properties)
    hosts, slash, chroot = connect.partition("/")
    zk = ZkClient(
        hosts, "/" + chroot.strip("/") if slash and chroot.strip("/") else None, 30000, 15000
    )
    await zk.start()
    try:
        authorizer = AclAuthorizer()
        store = AclStore(zk, authorizer)  # no watches: this process only reads and writes
        for path in zk_data.ACL_PATHS:
            await zk.ensure_path(path)
        await store.load_all()
        if args.add:
            bindings = bindings_to_add(args)
            print_grouped("Adding ACLs for resource", bindings)
            await store.create(bindings)
            _print_current(authorizer, {b.pattern for b in bindings})
        elif args.remove:
            removed = await store.delete(filters_of(args, removing=True))
            print_grouped("Removed ACLs for resource", (b for group in removed for b in group))
        else:
            found = [b for f in filters_of(args, removing=False) for b in authorizer.bindings(f)]
            print_grouped("Current ACLs for resource", dict.fromkeys(found))
        return 0
    finally:
        await zk.stop()


def _print_current(authorizer: AclAuthorizer, patterns: set[ResourcePattern]) -> None:
    current = [AclBinding(p, e) for p in patterns for e in authorizer.acls(p)]
    print_grouped("Current ACLs for resource", current)


# Through a broker --------------------------------------------------------------------------


_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def client_security(path: str | None) -> ClientSecurity:
    if not path:
        return ClientSecurity()
    with open(path, encoding="utf-8") as handle:
        props = parse_properties(handle.read())
    jaas = dict(_JAAS_OPTION.findall(props.get("sasl.jaas.config", "")))
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    return ClientSecurity(
        protocol,
        ssl_cafile=props.get("ssl.truststore.location") or props.get("ssl.ca.location"),
        ssl_certfile=props.get("ssl.certificate.location") or props.get("ssl.keystore.location"),
        ssl_keyfile=props.get("ssl.key.location"),
        ssl_password=props.get("ssl.key.password"),
        ssl_check_hostname=props.get("ssl.endpoint.identification.algorithm", "https") != "",
        sasl_mechanism=props.get("sasl.mechanism", props.get("sasl.mechanisms", "PLAIN")),
        sasl_username=jaas.get("username") or props.get("sasl.username"),
        sasl_password=jaas.get("password") or props.get("sasl.password"),
    )


def _filter_values(acl_filter: AclBindingFilter) -> dict:
    return {
        "resource_type_filter": i8(acl_filter.resource_type),
        "resource_name_filter": acl_filter.name,
        "pattern_type_filter": i8(acl_filter.pattern_type),
        "principal_filter": acl_filter.principal,
        "host_filter": acl_filter.host,
        "operation": i8(acl_filter.operation),
        "permission_type": i8(acl_filter.permission_type),
    }


def _binding_of(pattern_fields, acl) -> AclBinding:
    return AclBinding(
        ResourcePattern(
            ResourceType.of(pattern_fields.resource_type),
            pattern_fields.resource_name,
            PatternType.of(pattern_fields.pattern_type),
        ),
        AccessControlEntry(
            acl.principal,
            acl.host,
            AclOperation.of(acl.operation),
            AclPermissionType.of(acl.permission_type),
        ),
    )


def _check(code, message, what: str) -> None:
    if code != ErrorCode.none:
        raise CommandError(f"{what} failed: {ErrorCode(code).name} {message or ''}".strip())


async def _describe(connection: BrokerConnection, version: int, acl_filter) -> list[AclBinding]:
    module = request_module(29, version)
    response = await connection.send(module.DescribeAclsRequest(**_filter_values(acl_filter)))
    _check(response.error_code, response.error_message, "DescribeAcls")
    return [_binding_of(r, a) for r in response.resources for a in r.acls]


async def run_on_broker(args) -> int:
    host, _, port = args.bootstrap_server.split(",")[0].rpartition(":")
    connection = BrokerConnection(
        host or "localhost",
        int(port),
        client_id="brokerd-acls",
        security=client_security(args.command_config),
    )
    try:
        await connection.connect()
        ranges = connection.api_versions
        if 30 not in ranges:
            raise CommandError("the broker does not speak CreateAcls/DescribeAcls/DeleteAcls")

        def version_of(key: int) -> int:
            return min(3, ranges[key].max_version)

        if args.add:
            bindings = bindings_to_add(args)
            print_grouped("Adding ACLs for resource", bindings)
            module = request_module(30, version_of(30))
            creations = tuple(
                module.AclCreation(
                    resource_type=i8(b.pattern.resource_type),
                    resource_name=b.pattern.name,
                    resource_pattern_type=i8(b.pattern.pattern_type),
                    principal=b.entry.principal,
                    host=b.entry.host,
                    operation=i8(b.entry.operation),
                    permission_type=i8(b.entry.permission_type),
                )
                for b in bindings
            )
            response = await connection.send(module.CreateAclsRequest(creations=creations))
            for result in response.results:
                _check(result.error_code, result.error_message, "CreateAcls")
            current = []
            for pattern in dict.fromkeys(b.pattern for b in bindings):
                exact = AclBindingFilter(pattern.resource_type, pattern.name, pattern.pattern_type)
                current += await _describe(connection, version_of(29), exact)
            print_grouped("Current ACLs for resource", current)
        elif args.remove:
            module = request_module(31, version_of(31))
            filters = filters_of(args, removing=True)
            response = await connection.send(
                module.DeleteAclsRequest(
                    filters=tuple(module.DeleteAclsFilter(**_filter_values(f)) for f in filters)
                )
            )
            removed = []
            for result in response.filter_results:
                _check(result.error_code, result.error_message, "DeleteAcls")
                removed += [_binding_of(m, m) for m in result.matching_acls]
            print_grouped("Removed ACLs for resource", removed)
        else:
            found: list[AclBinding] = []
            for acl_filter in filters_of(args, removing=False):
                found += await _describe(connection, version_of(29), acl_filter)
            print_grouped("Current ACLs for resource", dict.fromkeys(found))
        return 0
    finally:
        await connection.close()


def run(args: argparse.Namespace) -> int:
    try:
        if args.bootstrap_server:
            return asyncio.run(run_on_broker(args))
        return asyncio.run(run_on_zookeeper(args))
    except CommandError as exc:
        print(f"brokerd acls: {exc}", file=sys.stderr)
        return 1
