"""Every broker config brokerd knows: its own per subsystem, then the rest of Kafka's catalog.

The subsystem modules define the configs brokerd applies; every other config Kafka defines
comes from brokerd.config.catalog (Kafka's definitions, the one place they are written):
accepted, validated, stored and described, not applied.
"""

from __future__ import annotations

from typing import Any

from brokerd.config import (
    admin,
    catalog,
    cleaner,
    group_coordinator,
    replication,
    server,
    server_log,
    socket_server,
    transaction,
    zookeeper,
)
from brokerd.config.definitions import ConfigDef, kafka_defined

BROKER_CONFIGS: dict[str, ConfigDef] = {
    **server.DEFINITIONS,
    **socket_server.DEFINITIONS,
    **replication.DEFINITIONS,
    **zookeeper.DEFINITIONS,
    **server_log.DEFINITIONS,
    **cleaner.DEFINITIONS,
    **group_coordinator.DEFINITIONS,
    **transaction.DEFINITIONS,
    **admin.DEFINITIONS,
    **server_log.TOPIC_SYNONYM_DEFINITIONS,
}

# The broker configs brokerd defines and applies.
APPLIED_BROKER_CONFIGS = frozenset(BROKER_CONFIGS)
BROKER_CONFIGS.update(
    (name, kafka_defined(spec))
    for name, spec in {
        **catalog.BROKER_SPECS,
        **catalog.DYNAMIC_ONLY_BROKER_SPECS,
    }.items()
    if name not in BROKER_CONFIGS
)


def is_dynamic_broker_config(name: str) -> bool:
    """AlterConfigs may set it: dynamic in Kafka (DynamicBrokerConfig), or a custom config
    (Kafka lets plugins have their own); brokerd's own additions never are."""
    base = catalog.listener_base(name)
    if base is not None:
        return True  # listener.name.<l>.<config>: checked by its base config's rules
    spec = catalog.BROKER_SPECS.get(name) or catalog.DYNAMIC_ONLY_BROKER_SPECS.get(name)
    if spec is not None:
        return spec.dynamic
    return name not in BROKER_CONFIGS


DYNAMIC_BROKER_CONFIGS = frozenset(
    name for name in BROKER_CONFIGS if is_dynamic_broker_config(name)
)


def static_definition(name: str) -> ConfigDef | None:
    """The definition a server.properties name is checked against: its own, or for
    listener.name.<l>.<config> that of <config>; None for names Kafka does not know."""
    spec = catalog.DYNAMIC_ONLY_BROKER_SPECS.get(name)
    if spec is not None:
        return None  # Kafka takes these only dynamically
    definition = BROKER_CONFIGS.get(name)
    if definition is not None:
        return definition
    base = catalog.listener_base(name)
    return BROKER_CONFIGS.get(base) if base is not None else None


def parse_dynamic(name: str, raw: str | None) -> Any:
    """A dynamic value: typed when Kafka validates it (DynamicConfig.Broker: the dynamic
    configs, also under a listener prefix), else kept as given (custom configs)."""
    if raw is None:
        return None
    base = catalog.listener_base(name)
    definition = BROKER_CONFIGS.get(base if base is not None else name)
    if definition is None or not is_dynamic_broker_config(definition.name):
        return raw
    value = definition.parse(raw)
    return value if base is None else raw
