"""Broker and topic configs with Kafka's names, types, defaults and validation.

Definitions are split per subsystem as Kafka splits them (server, socket_server,
zookeeper, replication, server_log, cleaner, group_coordinator, transaction, topic; admin for brokerd's
own), on top of Kafka's catalog (brokerd.config.catalog). `BrokerConfig` layers static and
dynamic values and resolves a typed, frozen view per subsystem (`config.replication`,
`config.groups`, `config.log`, ...). This module is the package's interface.
"""

from brokerd.config.admin import AdminConfig
from brokerd.config.broker import BrokerConfig
from brokerd.config.cleaner import CleanerConfig
from brokerd.config.definitions import (
    INT_MAX,
    LONG_MAX,
    PARSERS,
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    SOURCE_DYNAMIC_TOPIC,
    SOURCE_STATIC_BROKER,
    TYPE_IDS,
    ConfigDef,
    ConfigError,
)
from brokerd.config.failure_probes import parse_probe
from brokerd.config.group_coordinator import GroupCoordinatorConfig
from brokerd.config.properties import parse_properties
from brokerd.config.registry import (
    APPLIED_BROKER_CONFIGS,
    BROKER_CONFIGS,
    DYNAMIC_BROKER_CONFIGS,
    is_dynamic_broker_config,
)
from brokerd.config.replication import ReplicationConfig
from brokerd.config.security import SecurityConfig
from brokerd.config.server import ServerConfig
from brokerd.config.server_log import ServerLogConfig
from brokerd.config.socket_server import (
    SUPPORTED_SECURITY_PROTOCOLS,
    Endpoint,
    SocketServerConfig,
    parse_connection_overrides,
    parse_endpoint,
    parse_host_port,
)
from brokerd.config.topic import (
    ALL_TOPIC_CONFIGS,
    TOPIC_CONFIGS,
    UNAPPLIED_TOPIC_CONFIGS,
    LogConfig,
    resolve_topic_config,
    validate_topic_overrides,
)
from brokerd.config.transaction import TransactionConfig
from brokerd.config.zookeeper import ZooKeeperConfig

__all__ = [
    "ALL_TOPIC_CONFIGS",
    "APPLIED_BROKER_CONFIGS",
    "BROKER_CONFIGS",
    "DYNAMIC_BROKER_CONFIGS",
    "INT_MAX",
    "LONG_MAX",
    "PARSERS",
    "SOURCE_DEFAULT",
    "SOURCE_DYNAMIC_BROKER",
    "SOURCE_DYNAMIC_DEFAULT_BROKER",
    "SOURCE_DYNAMIC_TOPIC",
    "SOURCE_STATIC_BROKER",
    "SUPPORTED_SECURITY_PROTOCOLS",
    "TOPIC_CONFIGS",
    "TYPE_IDS",
    "UNAPPLIED_TOPIC_CONFIGS",
    "AdminConfig",
    "BrokerConfig",
    "CleanerConfig",
    "ConfigDef",
    "ConfigError",
    "Endpoint",
    "GroupCoordinatorConfig",
    "LogConfig",
    "ReplicationConfig",
    "SecurityConfig",
    "ServerConfig",
    "ServerLogConfig",
    "SocketServerConfig",
    "TransactionConfig",
    "ZooKeeperConfig",
    "is_dynamic_broker_config",
    "parse_connection_overrides",
    "parse_endpoint",
    "parse_host_port",
    "parse_probe",
    "parse_properties",
    "resolve_topic_config",
    "validate_topic_overrides",
]
