"""What a config definition is: Kafka's types, how values parse, check and print.

Each subsystem module (server, socket_server, zookeeper, replication, server_log, cleaner,
group_coordinator, admin, topic) lists the `ConfigDef`s brokerd applies, as Kafka's
`*Configs` classes do; `registry` joins them with the rest of Kafka's catalog.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from brokerd.config import catalog

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647


class ConfigError(ValueError):
    """An invalid config value; the message names the key."""


# Config sources as DescribeConfigs reports them.
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_DYNAMIC_BROKER = 2
SOURCE_DYNAMIC_DEFAULT_BROKER = 3
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(f"expected true or false, got {text!r}")


def _parse_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _parse_double(text: str) -> float:
    if "_" in text:  # Python reads 1_0 as 10, Java's parseDouble refuses it
        raise ValueError(f"Not a number of type DOUBLE: {text!r}")
    return float(text.strip())


PARSERS: dict[str, Callable[[str], Any]] = {
    "int": lambda s: catalog.parse_integer(s, "int"),
    "long": lambda s: catalog.parse_integer(s, "long"),
    "short": lambda s: catalog.parse_integer(s, "short"),
    "double": _parse_double,
    "boolean": _parse_bool,
    "string": lambda s: s.strip(),
    "list": _parse_list,
    "class": catalog.parse_class_name,
    "password": lambda s: s,
}

# Kafka's DescribeConfigs config types (KIP-569).
TYPE_IDS = {
    "boolean": 1,
    "string": 2,
    "int": 3,
    "short": 4,
    "long": 5,
    "double": 6,
    "list": 7,
    "class": 8,
    "password": 9,
}


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: str
    default: Any
    doc: str = ""
    at_least: float | None = None
    at_most: float | None = None
    choices: tuple[str, ...] | None = None
    broker_synonyms: tuple[str, ...] = ()  # highest precedence first
    read_only: bool = False
    sensitive: bool = False
    validator: Callable[[str, Any], None] | None = None  # Kafka's checks beyond a range

    def parse(self, raw: Any) -> Any:
        if raw is None:
            return None
        if isinstance(raw, str):
            try:
                value = PARSERS[self.type](raw)
            except ValueError as exc:
                raise ConfigError(f"{self.name}: invalid {self.type} value {raw!r}") from exc
        else:
            value = raw
        self.check(value)
        return value

    def check(self, value: Any) -> None:
        if value is None:
            return
        if self.type in ("int", "long", "short", "double"):
            if self.type != "double" and isinstance(value, float):
                raise ConfigError(f"{self.name}: expected an integer, got {value!r}")
            if self.at_least is not None and value < self.at_least:
                raise ConfigError(f"{self.name}: {value} is below the minimum {self.at_least:g}")
            if self.at_most is not None and value > self.at_most:
                raise ConfigError(f"{self.name}: {value} is above the maximum {self.at_most:g}")
        if self.choices is not None:
            items = value if isinstance(value, list) else [value]
            for item in items:
                if item not in self.choices:
                    raise ConfigError(
                        f"{self.name}: {item!r} is not one of {', '.join(self.choices)}"
                    )
        if self.validator is not None:
            try:
                self.validator(self.name, value)
            except catalog.InvalidValue as exc:  # its message names the config
                raise ConfigError(str(exc)) from exc

    def render(self, value: Any) -> str | None:
        """A value as Kafka prints it in DescribeConfigs."""
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return ",".join(value)
        if isinstance(value, float):
            return catalog.java_double(value)
        return str(value)


def kafka_defined(spec: catalog.KafkaConfigSpec) -> ConfigDef:
    """A ConfigDef from Kafka's own definition (brokerd.config.catalog)."""
    limits = catalog.constraints_of(spec.valid)
    return ConfigDef(
        spec.name,
        spec.type,
        None if spec.default is None else PARSERS[spec.type](spec.default),
        spec.doc,
        at_least=limits.at_least,
        at_most=limits.at_most,
        choices=limits.choices,
        broker_synonyms=(spec.server_default,) if spec.server_default else (),
        read_only=spec.update_mode == catalog.READ_ONLY,
        sensitive=spec.type == "password",
        validator=limits.validator,
    )


def by_name(definitions: list[ConfigDef]) -> dict[str, ConfigDef]:
    return {definition.name: definition for definition in definitions}


# Typed views ---------------------------------------------------------------------------------

View = TypeVar("View")


def config_name(field_name: str) -> str:
    """The config a view field holds: its name with dots (`replica_lag_time_max_ms` is
    `replica.lag.time.max.ms`); no Kafka config name has an underscore."""
    return field_name.replace("_", ".")


def resolve_view(view: type[View], get: Callable[[str], Any]) -> View:
    """A frozen view whose every field is the config of the same name, read once through
    `get`; lists become tuples so the view holds no mutable value."""
    values = {}
    for field in dataclasses.fields(view):  # type: ignore[arg-type]
        value = get(config_name(field.name))
        values[field.name] = tuple(value) if isinstance(value, list) else value
    return view(**values)
