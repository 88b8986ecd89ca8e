"""A broker's configuration: explicit properties over Kafka's defaults, validated, with
typed views per subsystem resolved whenever the configs change."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from brokerd.config import catalog
from brokerd.config.admin import AdminConfig
from brokerd.config.cleaner import CleanerConfig
from brokerd.config.definitions import (
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    SOURCE_STATIC_BROKER,
    ConfigError,
    resolve_view,
)
from brokerd.config.failure_probes import parse_probe
from brokerd.config.group_coordinator import GroupCoordinatorConfig
from brokerd.config.properties import parse_properties
from brokerd.config.registry import (
    BROKER_CONFIGS,
    is_dynamic_broker_config,
    parse_dynamic,
    static_definition,
)
from brokerd.config.replication import ReplicationConfig
from brokerd.config.security import SecurityConfig
from brokerd.config.server import ServerConfig
from brokerd.config.server_log import ServerLogConfig
from brokerd.config.socket_server import (
    SUPPORTED_SECURITY_PROTOCOLS,
    Endpoint,
    SocketServerConfig,
    parse_endpoint,
    parse_host_port,
)
from brokerd.config.topic import LogConfig
from brokerd.config.transaction import TransactionConfig
from brokerd.config.zookeeper import ZooKeeperConfig

logger = logging.getLogger(__name__)


class BrokerConfig:
    """A broker's configuration: explicit properties over Kafka's defaults, validated.

    `explicit` holds only what the operator set (static) and what AlterConfigs set
    (dynamic); topic configs resolve against those, so an unset `log.*` reports the
    topic default's source as DEFAULT, exactly as Kafka does.

    The typed views (`server`, `socket`, `replication`, `zookeeper`, `server_log`,
    `cleaner`, `groups`, `transactions`, `admin`, `security`, and `log` for the topic defaults) are rebuilt whenever a
    dynamic update is applied, so a reader of a dynamic config reads it through
    `config.<view>` when it acts rather than keeping the view. `get` remains for names
    computed at run time (listener-prefixed security configs) and configs brokerd only
    stores and describes.
    """

    server: ServerConfig
    socket: SocketServerConfig
    replication: ReplicationConfig
    zookeeper: ZooKeeperConfig
    server_log: ServerLogConfig
    cleaner: CleanerConfig
    groups: GroupCoordinatorConfig
    transactions: TransactionConfig
    admin: AdminConfig
    security: SecurityConfig
    log: LogConfig

    def __init__(self, props: Mapping[str, str] | None = None):
        self.raw = dict(props or {})
        self.static: dict[str, Any] = {}
        # Dynamic configs from ZooKeeper: the cluster-wide default entity, then this broker's.
        self.dynamic_default: dict[str, Any] = {}
        self.dynamic_broker: dict[str, Any] = {}
        self.unknown: dict[str, str] = {}
        for name, raw in self.raw.items():
            definition = static_definition(name)
            if definition is None:
                self.unknown[name] = raw  # Kafka logs "not a known config" and goes on
                continue
            self.static[name] = definition.parse(raw) if definition.name == name else raw
            if definition.name != name:
                definition.parse(raw)  # listener.name.<l>.<config>: checked as <config>
        self._merge()
        self._validate()

    @classmethod
    def from_file(cls, path, overrides: Mapping[str, str] | None = None) -> BrokerConfig:
        with open(path, encoding="utf-8") as handle:
            props = parse_properties(handle.read())
        props.update(overrides or {})
        return cls(props)

    # Values ------------------------------------------------------------------------------
    def _merge(self) -> None:
        """Layer static, dynamic default and dynamic per-broker configs as Kafka does: a
        layer's config also hides its synonyms below it (a dynamic log.retention.hours beats
        a static log.retention.ms)."""
        merged: dict[str, Any] = {}
        sources: dict[str, int] = {}
        for layer, source in (
            (self.static, SOURCE_STATIC_BROKER),
            (self.dynamic_default, SOURCE_DYNAMIC_DEFAULT_BROKER),
            (self.dynamic_broker, SOURCE_DYNAMIC_BROKER),
        ):
            for name, value in layer.items():
                if source != SOURCE_STATIC_BROKER:
                    for synonym in catalog.broker_synonyms(name, False):
                        merged.pop(synonym, None)
                        sources.pop(synonym, None)
                merged[name] = value
                sources[name] = source
        self._explicit = merged
        self._sources = sources
        self._resolve_views()

    def _resolve_views(self) -> None:
        get = self.get
        self.server = resolve_view(ServerConfig, get)
        self.socket = resolve_view(SocketServerConfig, get)
        self.replication = resolve_view(ReplicationConfig, get)
        self.zookeeper = ZooKeeperConfig.resolve(get)
        self.server_log = resolve_view(ServerLogConfig, get)
        self.cleaner = resolve_view(CleanerConfig, get)
        self.groups = resolve_view(GroupCoordinatorConfig, get)
        self.transactions = resolve_view(TransactionConfig, get)
        self.admin = resolve_view(AdminConfig, get)
        self.security = resolve_view(SecurityConfig, get)
        self.log = LogConfig.resolve(None, self._explicit)

    def get(self, name: str) -> Any:
        if name in self._explicit:
            return self._explicit[name]
        return BROKER_CONFIGS[name].default

    def source(self, name: str) -> int:
        return self._sources.get(name, SOURCE_DEFAULT)

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    @property
    def explicit(self) -> dict[str, Any]:
        """Typed values the operator or AlterConfigs set: what LogConfig.resolve reads."""
        return dict(self._explicit)

    @property
    def dynamic(self) -> dict[str, Any]:
        """Both dynamic layers, this broker's over the cluster-wide default."""
        return {**self.dynamic_default, **self.dynamic_broker}

    @property
    def broker_id(self) -> int:
        return self.server.broker_id

    @property
    def log_dirs(self) -> list[str]:
        return self.server_log.dirs

    @property
    def protocol_map(self) -> dict[str, str]:
        mapping = {}
        for item in self.get("listener.security.protocol.map"):
            name, sep, protocol = item.partition(":")
            if not sep:
                raise ConfigError(f"listener.security.protocol.map: {item!r} is not NAME:PROTOCOL")
            mapping[name.strip().upper()] = protocol.strip().upper()
        return mapping

    @property
    def listeners(self) -> list[Endpoint]:
        return [parse_endpoint(u, self.protocol_map, "listeners") for u in self.get("listeners")]

    @property
    def advertised_listeners(self) -> list[Endpoint]:
        uris = self.get("advertised.listeners")
        if not uris:
            return self.listeners
        return [parse_endpoint(u, self.protocol_map, "advertised.listeners") for u in uris]

    @property
    def inter_broker_listener_name(self) -> str:
        """inter.broker.listener.name, else the listener named after
        security.inter.broker.protocol, as Kafka resolves it."""
        name = self.get("inter.broker.listener.name")
        return (name or self.get("security.inter.broker.protocol")).strip().upper()

    @property
    def control_plane_listener_name(self) -> str | None:
        name = self.get("control.plane.listener.name")
        return name.strip().upper() if name else None

    def log_config(self, overrides: Mapping[str, Any] | None = None) -> LogConfig:
        return LogConfig.resolve(overrides, self.explicit)

    # Dynamic updates ---------------------------------------------------------------------
    def validate_dynamic(
        self, updates: Mapping[str, str | None], per_broker: bool = True
    ) -> dict[str, Any]:
        """Typed values of a dynamic update of this broker's (or, not `per_broker`, the
        cluster-wide default) configs, as Kafka's DynamicBrokerConfig.validate checks them;
        None deletes. `updates` is the entity's whole new set; refusals raise ConfigError."""
        problem = catalog.dynamic_update_errors(
            updates, per_broker, lambda name: not is_dynamic_broker_config(name)
        )
        if problem:
            raise ConfigError(problem)
        parsed = {name: parse_dynamic(name, raw) for name, raw in updates.items()}
        candidate = self._with_layer({k: v for k, v in parsed.items() if v is not None}, per_broker)
        for name in catalog.THREAD_POOL_CONFIGS:
            error = catalog.thread_pool_error(name, self.get(name), candidate.get(name))
            if error:
                raise ConfigError(error)
        candidate._validate()  # the whole configuration must still hold together
        return parsed

    def validate_dynamic_lenient(
        self, updates: Mapping[str, str], per_broker: bool = True
    ) -> dict[str, Any]:
        """Dynamic values read back from ZooKeeper: bad ones are skipped, as Kafka skips
        them, so one bad write cannot keep the broker from starting."""
        parsed: dict[str, Any] = {}
        for name, raw in updates.items():
            problem = catalog.dynamic_update_errors(
                [name], per_broker, lambda n: not is_dynamic_broker_config(n)
            )
            try:
                if problem:
                    raise ConfigError(problem)
                parsed[name] = parse_dynamic(name, raw)
            except ConfigError as exc:
                logger.warning("ignoring dynamic broker config: %s", exc)
        return parsed

    def set_dynamic(self, values: Mapping[str, Any]) -> None:
        """Replace this broker's dynamic layer (as read back from ZooKeeper)."""
        self.set_dynamic_layers(self.dynamic_default, values)

    def set_dynamic_layers(self, default: Mapping[str, Any], per_broker: Mapping[str, Any]) -> None:
        """Replace both dynamic layers; a combination that does not hold together is not
        applied (Kafka logs it and keeps the configs it had)."""
        candidate = self._with_layer({k: v for k, v in default.items() if v is not None}, False)
        candidate = candidate._with_layer(
            {k: v for k, v in per_broker.items() if v is not None}, True
        )
        try:
            candidate._validate()
        except ConfigError as exc:
            logger.error("dynamic broker configs not applied: %s", exc)
            return
        self.dynamic_default = candidate.dynamic_default
        self.dynamic_broker = candidate.dynamic_broker
        self._merge()

    def _with_layer(self, values: Mapping[str, Any], per_broker: bool) -> BrokerConfig:
        """A copy with one dynamic layer replaced, for validating before applying."""
        copy = object.__new__(BrokerConfig)
        copy.__dict__.update(self.__dict__)
        if per_broker:
            copy.dynamic_broker = dict(values)
        else:
            copy.dynamic_default = dict(values)
        copy._merge()
        return copy

    # Validation --------------------------------------------------------------------------
    def _validate_inter_broker_listeners(self, advertised: set[str]) -> None:
        """Kafka's rules: one of the two inter-broker keys; both listeners advertised (peers
        find them in the registration) and distinct."""
        if "inter.broker.listener.name" in self.static:
            if "security.inter.broker.protocol" in self.static:
                raise ConfigError(
                    "inter.broker.listener.name: only one of inter.broker.listener.name and "
                    "security.inter.broker.protocol should be set"
                )
        elif self.get("security.inter.broker.protocol") not in SUPPORTED_SECURITY_PROTOCOLS:
            protocol = self.get("security.inter.broker.protocol")
            raise ConfigError(
                f"security.inter.broker.protocol: security protocol {protocol} is not supported yet"
            )
        inter = self.inter_broker_listener_name
        if inter not in advertised:
            raise ConfigError(
                f"inter.broker.listener.name: {inter} must be a listener name defined in "
                f"advertised.listeners (valid: {','.join(sorted(advertised))})"
            )
        control = self.control_plane_listener_name
        if control is not None:
            if control not in advertised:
                raise ConfigError(
                    f"control.plane.listener.name: {control} must be a listener name defined "
                    f"in advertised.listeners (valid: {','.join(sorted(advertised))})"
                )
            if control == inter:
                raise ConfigError(
                    "control.plane.listener.name: must differ from the inter-broker listener "
                    f"name (both are {control})"
                )

    def _validate(self) -> None:
        if self.broker_id < 0:
            raise ConfigError("broker.id: must be set to a non-negative id")
        if not self.get("zookeeper.connect"):
            raise ConfigError("zookeeper.connect: is required")
        if not self.log_dirs:
            raise ConfigError("log.dirs: at least one log directory is required")
        listeners = self.listeners
        if not listeners:
            raise ConfigError("listeners: at least one listener is required")
        names = [endpoint.listener_name for endpoint in listeners]
        if len(set(names)) != len(names):
            raise ConfigError("listeners: each listener name may appear once")
        advertised = {endpoint.listener_name for endpoint in self.advertised_listeners}
        if not advertised <= set(names):
            raise ConfigError("advertised.listeners: names a listener that is not in listeners")
        self._validate_inter_broker_listeners(advertised)
        if self.get("message.max.bytes") > self.get("socket.request.max.bytes"):
            raise ConfigError("message.max.bytes: exceeds socket.request.max.bytes")
        queued_bytes = self.get("queued.max.request.bytes")
        if 0 < queued_bytes < self.get("socket.request.max.bytes"):
            raise ConfigError(
                "queued.max.request.bytes: must be larger or equal to socket.request.max.bytes"
            )
        if self.socket.max_connections_per_ip == 0 and not self.socket.connection_overrides:
            raise ConfigError(
                "max.connections.per.ip: can be set to zero only if "
                "max.connections.per.ip.overrides property is set"
            )
        self.log_config()  # the topic defaults must resolve
        parse_host_port(self.admin.admin_listener, "admin.listener")
        for spec in self.admin.failure_probes:
            parse_probe(spec)
