"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44): topics and brokers.

Every entry carries value, source, read-only and sensitive flags, its type and, on
request, its synonyms in Kafka's precedence order (topic override, dynamic broker, static
broker, default), so consoles can show where a value comes from.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from brokerd.config import (
    BROKER_CONFIGS,
    PARSERS,
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_TOPIC,
    SOURCE_STATIC_BROKER,
    TOPIC_CONFIGS,
    TYPE_IDS,
    ConfigError,
)
from brokerd.coordination import zk
from brokerd.protocol.errors import ErrorCode, KafkaError, error_code_of
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module

from ..topic_admin import validate_configs

log = logging.getLogger(__name__)

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

_SCALE = {
    "log.retention.minutes": 60_000,
    "log.retention.hours": 3_600_000,
    "log.roll.hours": 3_600_000,
}


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


def _render(definition, value: Any) -> str | None:
    return None if definition.sensitive else definition.render(value)


def describe_topic(broker, overrides: dict[str, str], keys, include_synonyms: bool):
    config = broker.config
    entries = []
    for name, definition in TOPIC_CONFIGS.items():
        if keys is not None and name not in keys:
            continue
        synonyms: list[tuple[str, str | None, int]] = []
        if name in overrides:
            synonyms.append((name, overrides[name], SOURCE_DYNAMIC_TOPIC))
        for synonym in definition.broker_synonyms:
            for layer, source in (
                (config.dynamic, SOURCE_DYNAMIC_BROKER),
                (config.static, SOURCE_STATIC_BROKER),
            ):
                if layer.get(synonym) is not None:
                    synonyms.append(
                        (synonym, BROKER_CONFIGS[synonym].render(layer[synonym]), source)
                    )
        synonyms.append((name, definition.render(definition.default), SOURCE_DEFAULT))
        winner_name, winner_value, source = synonyms[0]
        if winner_name in _SCALE:  # log.retention.hours=2 shows as retention.ms=7200000
            winner_value = str(PARSERS["long"](winner_value) * _SCALE[winner_name])
        entries.append(
            ConfigEntry(
                name,
                winner_value,
                source,
                read_only=False,
                sensitive=definition.sensitive,
                type_id=TYPE_IDS.get(definition.type, 0),
                documentation=definition.doc,
                synonyms=synonyms if include_synonyms else [],
            )
        )
    return entries


def describe_broker(broker, keys, include_synonyms: bool):
    config = broker.config
    entries = []
    for name, definition in BROKER_CONFIGS.items():
        if keys is not None and name not in keys:
            continue
        synonyms = []
        if name in config.dynamic:
            synonyms.append(
                (name, _render(definition, config.dynamic[name]), SOURCE_DYNAMIC_BROKER)
            )
        if name in config.static:
            synonyms.append((name, _render(definition, config.static[name]), SOURCE_STATIC_BROKER))
        if definition.default is not None:
            synonyms.append((name, _render(definition, definition.default), SOURCE_DEFAULT))
        entries.append(
            ConfigEntry(
                name,
                _render(definition, config.get(name)),
                config.source(name),
                read_only=definition.read_only,
                sensitive=definition.sensitive,
                type_id=TYPE_IDS.get(definition.type, 0),
                documentation=definition.doc,
                synonyms=synonyms if include_synonyms else [],
            )
        )
    return entries


def _check_broker_name(broker, resource_name: str) -> str:
    """The ZooKeeper entity: this broker's id, or <default> for the cluster-wide default."""
    if resource_name == "":
        return zk.DEFAULT_BROKER_ENTITY
    if resource_name != str(broker.broker_id):
        raise KafkaError(
            ErrorCode.invalid_request,
            f"Unexpected broker id, expected {broker.broker_id} but received {resource_name}",
        )
    return resource_name


async def handle_describe_configs(broker, request: Request):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    include_synonyms = getattr(body, "include_synonyms", False)
    include_docs = getattr(body, "include_documentation", False)
    results = []
    for resource in body.resources:
        keys = set(resource.configuration_keys) if resource.configuration_keys is not None else None
        error, message, entries = ErrorCode.none, None, []
        try:
            if resource.resource_type == TOPIC:
                info = broker.metadata.topic(resource.resource_name)
                if info is None:
                    raise KafkaError(
                        ErrorCode.unknown_topic_or_partition,
                        f"Topic '{resource.resource_name}' does not exist.",
                    )
                entries = describe_topic(broker, info.configs, keys, include_synonyms)
            elif resource.resource_type == BROKER:
                _check_broker_name(broker, resource.resource_name)
                entries = describe_broker(broker, keys, include_synonyms)
            else:
                raise KafkaError(
                    ErrorCode.invalid_request,
                    f"Unsupported resource type {resource.resource_type}",
                )
        except Exception as exc:  # noqa: BLE001 - per-resource answer
            error, message = error_code_of(exc), getattr(exc, "message", None) or str(exc)
        configs = tuple(
            build(
                module.DescribeConfigsResourceResult,
                name=e.name,
                value=e.value,
                read_only=e.read_only,
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


def _apply_incremental(current: dict[str, str], changes, list_names) -> dict[str, str]:
    updated = dict(current)
    for change in changes:
        operation = change.config_operation
        if operation == SET:
            updated[change.name] = change.value
        elif operation == DELETE:
            updated.pop(change.name, None)
        elif operation in (APPEND, SUBTRACT):
            if change.name not in list_names:
                raise KafkaError(
                    ErrorCode.invalid_config,
                    f"Config value append is not allowed for config key: {change.name}",
                )
            items = [i for i in (updated.get(change.name) or "").split(",") if i]
            values = [v.strip() for v in (change.value or "").split(",") if v.strip()]
            if operation == APPEND:
                items += [v for v in values if v not in items]
            else:
                items = [i for i in items if i not in values]
            updated[change.name] = ",".join(items)
        else:
            raise KafkaError(ErrorCode.invalid_request, f"Unknown operation {operation}")
    return updated


async def _alter(broker, resource, new_configs_of, validate_only: bool) -> None:
    if resource.resource_type == TOPIC:
        info = broker.metadata.topic(resource.resource_name)
        if info is None:
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition,
                f"Topic '{resource.resource_name}' does not exist.",
            )
        lists = {n for n, d in TOPIC_CONFIGS.items() if d.type == "list"}
        updated = validate_configs(new_configs_of(info.configs, lists))
        if not validate_only:
            await broker.controller.alter_topic_config(info.name, updated)
            broker.replicas.refresh_topic_config(info.name)
    elif resource.resource_type == BROKER:
        entity = _check_broker_name(broker, resource.resource_name)
        found = await broker.zk.get_json(zk.broker_config_path(entity))
        current = (
            {k: str(v) for k, v in ((found[0] or {}).get("config") or {}).items()} if found else {}
        )
        lists = {n for n, d in BROKER_CONFIGS.items() if d.type == "list"}
        updated = {k: v for k, v in new_configs_of(current, lists).items() if v is not None}
        try:
            broker.config.validate_dynamic(updated)
        except ConfigError as exc:
            raise KafkaError(ErrorCode.invalid_config, str(exc)) from exc
        if not validate_only:
            await broker.controller.alter_broker_config(entity, updated)
            await broker.load_dynamic_broker_config()
            broker.replicas.refresh_all_configs()
    elif resource.resource_type == BROKER_LOGGER:
        raise KafkaError(ErrorCode.invalid_request, "Broker loggers are not supported")
    else:
        raise KafkaError(
            ErrorCode.invalid_request, f"Unsupported resource type {resource.resource_type}"
        )


async def _alter_all(broker, request: Request, incremental: bool):
    body = request.body
    module = response_module(request.api_key, request.api_version)
    responses = []
    for resource in body.resources:
        error, message = ErrorCode.none, None
        if incremental:

            def new_configs_of(current, lists, changes=resource.configs):
                return _apply_incremental(current, changes, lists)
        else:

            def new_configs_of(current, lists, changes=resource.configs):
                return {c.name: c.value for c in changes}  # AlterConfigs replaces the set

        try:
            async with broker.admin_lock:
                await _alter(broker, resource, new_configs_of, body.validate_only)
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


async def handle_alter_configs(broker, request: Request):
    return await _alter_all(broker, request, incremental=False)


async def handle_incremental_alter_configs(broker, request: Request):
    return await _alter_all(broker, request, incremental=True)


HANDLERS = {
    32: handle_describe_configs,
    33: handle_alter_configs,
    44: handle_incremental_alter_configs,
}
