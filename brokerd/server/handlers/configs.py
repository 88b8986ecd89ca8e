"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44): topics and brokers.

Answers as ZooKeeper-mode Kafka 3.9 does (ConfigHelper, ZkAdminManager, ConfigAdminManager,
DynamicBrokerConfig): every config name Kafka defines is described, with its value, source,
read-only and sensitive flags, type, documentation and synonyms in Kafka's precedence (topic
override, dynamic per-broker, dynamic cluster-wide default, static, default). Configs brokerd
accepts and stores but does not apply say so in their documentation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from brokerd.config import (
    ALL_TOPIC_CONFIGS,
    APPLIED_BROKER_CONFIGS,
    BROKER_CONFIGS,
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    SOURCE_DYNAMIC_TOPIC,
    SOURCE_STATIC_BROKER,
    TYPE_IDS,
    UNAPPLIED_TOPIC_CONFIGS,
    ConfigError,
    resolve_topic_config,
    validate_topic_overrides,
)
from brokerd.config import catalog as config_catalog
from brokerd.config.security import APPLIED_SECURITY_CONFIGS
from brokerd.coordination import zk_data
from brokerd.coordination.group_configs import (
    CONSUMER_HEARTBEAT_INTERVAL_MS,
    CONSUMER_SESSION_TIMEOUT_MS,
)
from brokerd.protocol.errors import ErrorCode, KafkaError, error_code_of
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation

from ..topic_admin import validate_topic_name
from .context import HandlerContext

log = logging.getLogger(__name__)

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
GROUP = 32  # KIP-848's per-group configs
SOURCE_DYNAMIC_GROUP = 8  # Kafka's DYNAMIC_GROUP_CONFIG

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_LIST_OPERATIONS = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

# Broker configs Kafka updates live that brokerd reads only when it starts: a dynamic value
# is stored and described at once, and takes effect at the broker's next start.
APPLIED_AT_START_UP = frozenset(
    {
        "listeners",
        "advertised.listeners",
        "listener.security.protocol.map",
        "log.cleaner.backoff.ms",
        "log.cleaner.dedupe.buffer.size",
    }
)
# Configs brokerd defines (and checks) but does not act on yet: batches are stored in the
# producer's codec, and old fetchers are always served.
DEFINED_NOT_APPLIED = frozenset(
    {
        "compression.type",
        "message.downconversion.enable",
        "log.message.downconversion.enable",
    }
)
# Dynamic-only broker configs (no static definition, so outside APPLIED_BROKER_CONFIGS)
# that brokerd applies: the log manager reads this one at each copy step of a move.
APPLIED_DYNAMIC_ONLY = frozenset({"replica.alter.log.dirs.io.max.bytes.per.second"})
NOT_APPLIED_NOTE = " (brokerd accepts, validates and stores this config but does not apply it.)"
START_UP_NOTE = " (brokerd applies a dynamic change of it when the broker next starts.)"


@dataclass
class ConfigEntry:
    name: str
    value: str | None
    source: int
    read_only: bool
    sensitive: bool
    type_id: int
    documentation: str
    synonyms: list[tuple[str, str | None, int]] = field(default_factory=list)


# Documentation and types ------------------------------------------------------------------


def broker_documentation(name: str) -> str:
    """Kafka's description (brokerd's own for its additions), and whether brokerd applies it."""
    spec = config_catalog.broker_spec(name)
    definition = BROKER_CONFIGS.get(name)
    doc = spec.doc if spec is not None else definition.doc if definition is not None else ""
    applied = (
        name in APPLIED_BROKER_CONFIGS
        or name in APPLIED_SECURITY_CONFIGS
        or name in APPLIED_DYNAMIC_ONLY
    )
    if not applied or name in DEFINED_NOT_APPLIED:
        return doc + NOT_APPLIED_NOTE
    if name in APPLIED_AT_START_UP:
        return doc + START_UP_NOTE
    return doc


def topic_documentation(name: str) -> str:
    spec = config_catalog.TOPIC_SPECS.get(name)
    doc = spec.doc if spec is not None else ALL_TOPIC_CONFIGS[name].doc
    applied = name not in UNAPPLIED_TOPIC_CONFIGS and name not in DEFINED_NOT_APPLIED
    return doc if applied else doc + NOT_APPLIED_NOTE


def _broker_type(name: str) -> str | None:
    """Kafka's type of a name (KafkaConfig.configType); brokerd's for its own additions."""
    kafka_type = config_catalog.broker_type(name)
    if kafka_type is not None:
        return kafka_type
    definition = BROKER_CONFIGS.get(name)
    return definition.type if definition is not None else None


def _broker_sensitive(name: str) -> bool:
    """Passwords, and (as Kafka, to be safe) any name whose type is unknown."""
    return _broker_type(name) in (None, "password")


def _render_broker(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value  # as set: Kafka describes the string it was given
    definition = BROKER_CONFIGS.get(name)
    if definition is None:
        base = config_catalog.listener_base(name)
        definition = BROKER_CONFIGS.get(base) if base is not None else None
    return definition.render(value) if definition is not None else str(value)


def _kafka_default(name: str) -> Any:
    """KafkaConfig's default of a broker config (DynamicBrokerConfig.staticDefaultConfigs)."""
    definition = BROKER_CONFIGS.get(name)
    if definition is None or name in config_catalog.DYNAMIC_ONLY_BROKER_SPECS:
        return None
    return definition.default


# Describing ---------------------------------------------------------------------------------


def _config_synonyms(
    config, name: str, candidates: list[str], sensitive: bool
) -> list[tuple[str, str | None, int]]:
    """ConfigHelper.configSynonyms: each candidate set at each level, in precedence order,
    from the first entry for `name` itself on (a listener override is no synonym of its
    base config)."""
    found: list[tuple[str, str | None, int]] = []
    for layer, source in (
        (config.dynamic_broker, SOURCE_DYNAMIC_BROKER),
        (config.dynamic_default, SOURCE_DYNAMIC_DEFAULT_BROKER),
        (config.static, SOURCE_STATIC_BROKER),
    ):
        for candidate in candidates:
            if layer.get(candidate) is not None:
                value = None if sensitive else _render_broker(candidate, layer[candidate])
                found.append((candidate, value, source))
    for candidate in candidates:
        default = _kafka_default(candidate)
        if default is not None:
            value = None if sensitive else _render_broker(candidate, default)
            found.append((candidate, value, SOURCE_DEFAULT))
    while found and found[0][0] != name:
        found.pop(0)
    return found


def describe_topic(ctx: HandlerContext, overrides: Mapping[str, str], keys, include_synonyms: bool):
    """Every topic config of a topic with these overrides (also CreateTopics' answer)."""
    config = ctx.config
    entries = []
    for name, definition in ALL_TOPIC_CONFIGS.items():
        if keys and name not in keys:
            continue
        value, _ = resolve_topic_config(name, overrides, config.explicit)
        rendered = None if definition.sensitive else definition.render(value)
        synonyms: list[tuple[str, str | None, int]] = []
        if name in overrides:
            synonyms.append((name, rendered, SOURCE_DYNAMIC_TOPIC))
        if definition.broker_synonyms:
            primary = definition.broker_synonyms[0]
            synonyms += _config_synonyms(
                config,
                primary,
                config_catalog.broker_synonyms(primary),
                definition.sensitive,
            )
        entries.append(
            ConfigEntry(
                name,
                rendered,
                synonyms[0][2] if synonyms else SOURCE_DEFAULT,
                read_only=False,
                sensitive=definition.sensitive,
                type_id=TYPE_IDS.get(definition.type, 0),
                documentation=topic_documentation(name),
                synonyms=synonyms if include_synonyms else [],
            )
        )
    return entries


def _broker_entry(config, name: str, value: Any, per_broker: bool, include_synonyms: bool):
    sensitive = _broker_sensitive(name)
    synonyms = _config_synonyms(config, name, config_catalog.broker_synonyms(name), sensitive)
    if not per_broker:
        synonyms = [s for s in synonyms if s[2] == SOURCE_DYNAMIC_DEFAULT_BROKER]
    return ConfigEntry(
        name,
        None if sensitive else _render_broker(name, value),
        synonyms[0][2] if synonyms else SOURCE_DEFAULT,
        read_only=name not in config_catalog.ALL_DYNAMIC_CONFIGS,
        sensitive=sensitive,
        type_id=TYPE_IDS.get(_broker_type(name) or "", 0),
        documentation=broker_documentation(name),
        synonyms=synonyms if include_synonyms else [],
    )


def describe_broker(ctx: HandlerContext, keys, include_synonyms: bool, per_broker: bool = True):
    """This broker's configs: every config Kafka's brokers list (and brokerd's own), plus
    whatever was set; for the cluster-wide default entity only what is set there."""
    config = ctx.config
    if per_broker:
        names = [
            n
            for n in BROKER_CONFIGS
            if n not in config_catalog.DYNAMIC_ONLY_BROKER_SPECS or n in config.explicit
        ]
        names += sorted({*config.explicit, *config.unknown} - set(names))
        values = {**config.unknown, **config.explicit}
    else:
        names = sorted(config.dynamic_default)
        values = config.dynamic_default
    entries = []
    for name in names:
        if keys and name not in keys:
            continue
        value = values[name] if name in values else _kafka_default(name)
        entries.append(_broker_entry(config, name, value, per_broker, include_synonyms))
    return entries


def _broker_entity(ctx: HandlerContext, resource_name: str) -> str:
    """The ZooKeeper entity: this broker's id, or <default> for the cluster-wide default."""
    if resource_name == "":
        return zk_data.DEFAULT_BROKER_ENTITY
    if not resource_name.lstrip("-").isdigit():
        raise KafkaError(
            ErrorCode.invalid_request, f"Node id must be an integer, but it is: {resource_name}"
        )
    if int(resource_name) != ctx.broker_id:
        raise KafkaError(
            ErrorCode.invalid_request,
            f"Unexpected broker id, expected {ctx.broker_id}, but received {resource_name}",
        )
    return str(ctx.broker_id)


def _check_access(ctx: HandlerContext, resource, operation: AclOperation) -> None:
    """ACLs: DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic, or on the cluster for a broker
    or broker logger (Kafka's KafkaApis)."""
    if resource.resource_type == TOPIC:
        if not ctx.auth.topic(operation, resource.resource_name):
            raise KafkaError(ErrorCode.topic_authorization_failed)
    elif resource.resource_type in (BROKER, BROKER_LOGGER):
        if not ctx.auth.cluster(operation):
            raise KafkaError(ErrorCode.cluster_authorization_failed)
    elif resource.resource_type == GROUP:
        if not ctx.auth.group(operation, resource.resource_name):
            raise KafkaError(ErrorCode.group_authorization_failed)


# GROUP (32): Kafka's GroupConfig, the consumer group ones, defaulting to the broker's.
_GROUP_CONFIGS = {
    CONSUMER_HEARTBEAT_INTERVAL_MS: (
        "group.consumer.heartbeat.interval.ms",
        "The heartbeat interval given to the members.",
    ),
    CONSUMER_SESSION_TIMEOUT_MS: (
        "group.consumer.session.timeout.ms",
        "The timeout to detect client failures when using the consumer group protocol.",
    ),
}


def _broker_group_default(ctx: HandlerContext, name: str) -> int:
    groups = ctx.config.groups
    if name == CONSUMER_SESSION_TIMEOUT_MS:
        return groups.group_consumer_session_timeout_ms
    return groups.group_consumer_heartbeat_interval_ms


def describe_group(ctx: HandlerContext, stored: Mapping[str, str], keys, include_synonyms: bool):
    entries = []
    for name, (broker_name, documentation) in sorted(_GROUP_CONFIGS.items()):
        if keys and name not in keys:
            continue
        default = str(_broker_group_default(ctx, name))
        synonyms: list[tuple[str, str | None, int]] = []
        if name in stored:
            synonyms.append((name, stored[name], SOURCE_DYNAMIC_GROUP))
        synonyms.append((broker_name, default, SOURCE_DEFAULT))
        entries.append(
            ConfigEntry(
                name,
                stored.get(name, default),
                SOURCE_DYNAMIC_GROUP if name in stored else SOURCE_DEFAULT,
                read_only=False,
                sensitive=False,
                type_id=TYPE_IDS.get("int", 0),
                documentation=documentation,
                synonyms=synonyms if include_synonyms else [],
            )
        )
    return entries


def _validate_group_configs(ctx: HandlerContext, configs: Mapping[str, str]) -> None:
    """Kafka's GroupConfig.validate: known names, ints, within the broker's bounds, and the
    heartbeat interval below the session timeout."""
    groups = ctx.config.groups
    values: dict[str, int] = {}
    for name, value in configs.items():
        if name not in _GROUP_CONFIGS:
            raise KafkaError(ErrorCode.invalid_config, f"Unknown group config name: {name}")
        try:
            values[name] = int(value)
        except (TypeError, ValueError):
            raise KafkaError(
                ErrorCode.invalid_config,
                f"Invalid value {value} for configuration {name}: Not a number of type INT",
            ) from None
    bounds: dict[str, tuple[str, int, str, int]] = {
        CONSUMER_SESSION_TIMEOUT_MS: (
            "group.consumer.min.session.timeout.ms",
            groups.group_consumer_min_session_timeout_ms,
            "group.consumer.max.session.timeout.ms",
            groups.group_consumer_max_session_timeout_ms,
        ),
        CONSUMER_HEARTBEAT_INTERVAL_MS: (
            "group.consumer.min.heartbeat.interval.ms",
            groups.group_consumer_min_heartbeat_interval_ms,
            "group.consumer.max.heartbeat.interval.ms",
            groups.group_consumer_max_heartbeat_interval_ms,
        ),
    }
    for name, number in values.items():
        low_name, low, high_name, high = bounds[name]
        if number < low:
            raise KafkaError(
                ErrorCode.invalid_config, f"{name} must be greater than or equal to {low_name}"
            )
        if number > high:
            raise KafkaError(
                ErrorCode.invalid_config, f"{name} must be less than or equal to {high_name}"
            )
    session = values.get(CONSUMER_SESSION_TIMEOUT_MS, groups.group_consumer_session_timeout_ms)
    heartbeat = values.get(
        CONSUMER_HEARTBEAT_INTERVAL_MS, groups.group_consumer_heartbeat_interval_ms
    )
    if heartbeat >= session:
        raise KafkaError(
            ErrorCode.invalid_config,
            f"{CONSUMER_HEARTBEAT_INTERVAL_MS} must be less than {CONSUMER_SESSION_TIMEOUT_MS}",
        )


async def _alter_group(ctx: HandlerContext, resource, new_configs_of, validate_only: bool) -> None:
    group_id = resource.resource_name
    if not group_id:
        raise KafkaError(ErrorCode.invalid_request, "The group id must not be empty.")
    store = ctx.dynamic_configs.groups
    current = dict(await store.ensure(group_id))

    def group_type(name: str) -> str | None:
        return "int" if name in _GROUP_CONFIGS else None

    updated = new_configs_of(current, group_type, lambda _name: None)
    _validate_group_configs(ctx, updated)
    if not validate_only:
        await store.alter(group_id, updated)


def _describe_one(ctx: HandlerContext, resource, include_synonyms: bool):
    keys = set(resource.configuration_keys or ())
    _check_access(ctx, resource, AclOperation.DESCRIBE_CONFIGS)
    if resource.resource_type == TOPIC:
        validate_topic_name(resource.resource_name)
        info = ctx.metadata.topic(resource.resource_name)
        if info is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition)
        return describe_topic(ctx, info.configs, keys, include_synonyms)
    if resource.resource_type == BROKER:
        entity = _broker_entity(ctx, resource.resource_name)
        per_broker = entity != zk_data.DEFAULT_BROKER_ENTITY
        return describe_broker(ctx, keys, include_synonyms, per_broker)
    if resource.resource_type == GROUP:
        stored = ctx.dynamic_configs.groups.values(resource.resource_name)
        return describe_group(ctx, stored, keys, include_synonyms)
    raise KafkaError(
        ErrorCode.invalid_request, f"Unsupported resource type: {resource.resource_type}"
    )


async def handle_describe_configs(ctx: HandlerContext, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    include_synonyms = getattr(body, "include_synonyms", False)
    include_docs = getattr(body, "include_documentation", False)
    results = []
    for resource in body.resources:
        error, message, entries = ErrorCode.none, None, []
        try:
            if resource.resource_type == GROUP and resource.resource_name:
                await ctx.dynamic_configs.groups.ensure(resource.resource_name)
            entries = _describe_one(ctx, resource, include_synonyms)
        except Exception as exc:  # noqa: BLE001 - per-resource answer
            error, message = error_code_of(exc), getattr(exc, "message", None)
            if error == ErrorCode.unknown_server_error:
                log.exception("describing configs of %s failed", resource.resource_name)
                message = str(exc)
        configs = tuple(
            build(
                module.DescribeConfigsResourceResult,
                name=e.name,
                value=e.value,
                read_only=e.read_only,
                is_default=e.source == SOURCE_DEFAULT,
                config_source=e.source,
                is_sensitive=e.sensitive,
                synonyms=tuple(
                    build(module.DescribeConfigsSynonym, name=n, value=v, source=s)
                    for n, v, s in e.synonyms
                ),
                config_type=e.type_id,
                documentation=e.documentation if include_docs else None,
            )
            for e in entries
        )
        results.append(
            build(
                module.DescribeConfigsResult,
                error_code=error,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=configs,
            )
        )
    return build(module.DescribeConfigsResponse, throttle_time=NO_THROTTLE, results=tuple(results))


# Altering -----------------------------------------------------------------------------------


def _list_default(definition, kafka_type: str | None) -> str | None:
    """A list config's default as Kafka prints it, the start of APPEND and SUBTRACT."""
    if definition is None:
        return None
    return definition.render(definition.default) if kafka_type == "list" else None


def apply_incremental(
    current: Mapping[str, str],
    changes: Iterable,
    type_of: Callable[[str], str | None],
    default_of: Callable[[str], str | None],
) -> dict[str, str]:
    """ConfigAdminManager.prepareIncrementalConfigs: SET, DELETE, and APPEND / SUBTRACT on
    list configs, which start from the resource's own value, else the config's default."""
    updated = dict(current)
    for change in changes:
        name, operation = change.name, change.config_operation
        if operation == SET:
            updated[name] = change.value
        elif operation == DELETE:
            updated.pop(name, None)
        elif operation in _LIST_OPERATIONS:
            kind = _LIST_OPERATIONS[operation]
            kafka_type = type_of(name)
            if kafka_type is None:
                raise KafkaError(ErrorCode.invalid_config, f"Unknown config name: {name}")
            if kafka_type != "list":
                verb = "append" if operation == APPEND else "subtract"
                raise KafkaError(
                    ErrorCode.invalid_config,
                    f"Config value {verb} is not allowed for config key: {name}",
                )
            updated[name] = config_catalog.apply_list_operation(
                kind, updated.get(name), default_of(name), change.value
            )
        else:
            raise KafkaError(ErrorCode.invalid_request, f"Unknown operations type {operation}")
    return updated


def _topic_type(name: str) -> str | None:
    definition = ALL_TOPIC_CONFIGS.get(name)
    return definition.type if definition is not None else None


def _topic_default(name: str) -> str | None:
    definition = ALL_TOPIC_CONFIGS.get(name)
    return _list_default(definition, _topic_type(name))


def _broker_default(name: str) -> str | None:
    return _list_default(BROKER_CONFIGS.get(name), _broker_type(name))


def _preprocess(resources, incremental: bool) -> dict[int, KafkaError]:
    """ConfigAdminManager.preprocess: refusals decided before looking at any resource."""
    refused: dict[int, KafkaError] = {}
    seen: dict[tuple[int, str], int] = {}
    for index, resource in enumerate(resources):
        key = (resource.resource_type, resource.resource_name)
        if key in seen:
            for i in (seen[key], index):
                refused[i] = KafkaError(
                    ErrorCode.invalid_request, "Each resource must appear at most once."
                )
        seen[key] = index
    for index, resource in enumerate(resources):
        if index in refused:
            continue
        names = [c.name for c in resource.configs]
        if len(set(names)) != len(names):
            refused[index] = KafkaError(
                ErrorCode.invalid_request, "Error due to duplicate config keys"
            )
            continue
        nulls = [
            c.name
            for c in resource.configs
            if c.value is None and not (incremental and c.config_operation == DELETE)
        ]
        if nulls:
            refused[index] = KafkaError(
                ErrorCode.invalid_request, f"Null value not supported for : {', '.join(nulls)}"
            )
    return refused


async def _alter_topic(ctx: HandlerContext, resource, new_configs_of, validate_only: bool) -> None:
    name = resource.resource_name
    if not name:
        raise KafkaError(ErrorCode.invalid_request, "Default topic resources are not allowed.")
    info = ctx.metadata.topic(name)
    if info is None:
        raise KafkaError(
            ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist."
        )
    updated = new_configs_of(info.configs, _topic_type, _topic_default)
    try:
        validate_topic_overrides(updated, ctx.config.explicit)
    except ConfigError as exc:
        raise KafkaError(ErrorCode.invalid_config, str(exc)) from exc
    if not validate_only:
        await ctx.controller.alter_topic_config(info.name, updated)
        ctx.replicas.refresh_topic_config(info.name)


async def _stored_broker_configs(ctx: HandlerContext, entity: str) -> dict[str, str]:
    """The entity's configs in ZooKeeper, less what the broker would ignore in them
    (DynamicBrokerConfig.fromPersistentProps)."""
    found = await ctx.zk.get_json(zk_data.broker_config_path(entity))
    stored = ((found[0] or {}).get("config") or {}) if found is not None else {}
    raw = {str(k): str(v) for k, v in stored.items()}
    kept = ctx.config.validate_dynamic_lenient(
        raw, per_broker=entity != zk_data.DEFAULT_BROKER_ENTITY
    )
    return {k: v for k, v in raw.items() if k in kept}


async def _alter_broker(ctx: HandlerContext, resource, new_configs_of, validate_only: bool) -> None:
    entity = _broker_entity(ctx, resource.resource_name)
    per_broker = entity != zk_data.DEFAULT_BROKER_ENTITY
    current = await _stored_broker_configs(ctx, entity)
    updated = new_configs_of(current, _broker_type, _broker_default)
    try:
        ctx.config.validate_dynamic(updated, per_broker=per_broker)
    except ConfigError as exc:
        # ConfigAdminManager answers a refused broker change with INVALID_REQUEST.
        raise KafkaError(ErrorCode.invalid_request, str(exc)) from exc
    if validate_only:
        return
    passwords = sorted(n for n in updated if config_catalog.is_password_config(n))
    if passwords:
        # Kafka stores dynamic passwords encrypted with password.encoder.secret, and
        # refuses them without one; brokerd does not encrypt, so it refuses them always.
        reason = (
            "Password config can be defined only at broker level"
            if not per_broker
            else "Password encoder secret not configured"
            if ctx.config.security.password_encoder_secret is None
            else "brokerd does not store dynamic passwords"
        )
        raise KafkaError(
            ErrorCode.invalid_config,
            "Invalid config value for resource ConfigResource(type=BROKER, "
            f"name='{resource.resource_name}'): {reason}",
        )
    await ctx.controller.alter_broker_config(entity, updated)
    await ctx.dynamic_configs.load()
    ctx.replicas.refresh_all_configs()


async def _alter(ctx: HandlerContext, resource, new_configs_of, validate_only: bool) -> None:
    if resource.resource_type == TOPIC:
        await _alter_topic(ctx, resource, new_configs_of, validate_only)
    elif resource.resource_type == BROKER:
        await _alter_broker(ctx, resource, new_configs_of, validate_only)
    elif resource.resource_type == GROUP:
        await _alter_group(ctx, resource, new_configs_of, validate_only)
    else:
        raise KafkaError(
            ErrorCode.invalid_request, f"Unknown resource type {resource.resource_type}"
        )


async def _alter_all(ctx: HandlerContext, request: Request, incremental: bool):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    refused = _preprocess(body.resources, incremental)
    responses = []
    for index, resource in enumerate(body.resources):
        if incremental:

            def new_configs_of(current, type_of, default_of, changes=resource.configs):
                return apply_incremental(current, changes, type_of, default_of)
        else:

            def new_configs_of(current, type_of, default_of, changes=resource.configs):
                return {c.name: c.value for c in changes}  # AlterConfigs replaces the set

        error, message = ErrorCode.none, None
        try:
            if index in refused:
                raise refused[index]
            _check_access(ctx, resource, AclOperation.ALTER_CONFIGS)
            async with ctx.admin_lock:
                await _alter(ctx, resource, new_configs_of, body.validate_only)
        except Exception as exc:  # noqa: BLE001 - per-resource answer
            error = error_code_of(exc)
            message = getattr(exc, "message", None) or str(exc)
            if error == ErrorCode.unknown_server_error:
                log.exception("altering configs of %s failed", resource.resource_name)
        responses.append(
            build(
                module.AlterConfigsResourceResponse,
                error_code=error,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    response_type = (
        module.IncrementalAlterConfigsResponse if incremental else module.AlterConfigsResponse
    )
    return build(response_type, throttle_time=NO_THROTTLE, responses=tuple(responses))


async def handle_alter_configs(ctx: HandlerContext, request: Request):
    return await _alter_all(ctx, request, incremental=False)


async def handle_incremental_alter_configs(ctx: HandlerContext, request: Request):
    return await _alter_all(ctx, request, incremental=True)


HANDLERS = {
    32: handle_describe_configs,
    33: handle_alter_configs,
    44: handle_incremental_alter_configs,
}
