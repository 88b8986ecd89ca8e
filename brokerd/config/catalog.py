"""Kafka's own definition of every broker and topic config, and Kafka's rules around them.

`catalog_data` lists what Kafka 3.9 defines (name, type, default, valid values,
importance, dynamic update mode, documentation); this module turns the valid-values notation
into checks and holds the rules Kafka applies to dynamic broker configs (DynamicBrokerConfig:
which are read-only, per-broker or cluster-wide, listener prefixes, synonyms) and to
IncrementalAlterConfigs' APPEND and SUBTRACT. The rest of `brokerd.config` uses it for every name brokerd
does not define itself, so those are accepted, validated, stored and described like in Kafka
even where brokerd gives them no effect.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from brokerd.config import catalog_data as data

READ_ONLY = "read-only"
PER_BROKER = "per-broker"
CLUSTER_WIDE = "cluster-wide"
TOPIC_LEVEL = "topic"


@dataclass(frozen=True)
class KafkaConfigSpec:
    """One config as Kafka defines it."""

    name: str
    type: str  # Kafka's type name: boolean, string, int, short, long, double, list, class, password
    default: str | None  # as Kafka prints it; None is null
    valid: str  # Kafka's "Valid Values" notation, "" when any value of the type goes
    importance: str
    update_mode: str  # read-only, per-broker, cluster-wide (brokers); topic (topics)
    doc: str
    server_default: str | None = None  # topics: the broker config that supplies the default
    dynamic_only: bool = False  # brokers: settable only through AlterConfigs, never in a file

    @property
    def dynamic(self) -> bool:
        return self.update_mode in (PER_BROKER, CLUSTER_WIDE)


BROKER_SPECS: dict[str, KafkaConfigSpec] = {
    name: KafkaConfigSpec(name, type_, default, valid, importance, mode, doc)
    for name, type_, default, valid, importance, mode, doc in data.BROKER
}
DYNAMIC_ONLY_BROKER_SPECS: dict[str, KafkaConfigSpec] = {
    name: KafkaConfigSpec(
        name, type_, default, valid, importance, CLUSTER_WIDE, doc, dynamic_only=True
    )
    for name, type_, default, valid, importance, doc in data.DYNAMIC_ONLY_BROKER
}
TOPIC_SPECS: dict[str, KafkaConfigSpec] = {
    name: KafkaConfigSpec(name, type_, default, valid, importance, TOPIC_LEVEL, doc, synonym)
    for name, type_, default, valid, importance, synonym, doc in data.TOPIC
}

# DynamicBrokerConfig.AllDynamicConfigs: what DescribeConfigs reports as not read-only.
ALL_DYNAMIC_CONFIGS = frozenset(name for name, spec in BROKER_SPECS.items() if spec.dynamic)
PER_BROKER_CONFIGS = frozenset(
    name for name, spec in BROKER_SPECS.items() if spec.update_mode == PER_BROKER
)
# SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only with a listener prefix.
PER_LISTENER_ONLY_CONFIGS = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.certificates",
    }
)
# Listener configs that stay cluster-wide even under a listener prefix.
CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"}
)
# Given per listener and SASL mechanism: listener.name.<l>.<mechanism>.<config>.
LISTENER_MECHANISM_CONFIGS = (
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.server.callback.handler.class",
    "connections.max.reauth.ms",
)
# Thread pools a dynamic update may at most halve or double (DynamicThreadPool, SocketServer).
THREAD_POOL_CONFIGS = frozenset(
    {
        "num.io.threads",
        "num.replica.fetchers",
        "num.recovery.threads.per.data.dir",
        "background.threads",
        "num.network.threads",
    }
)
# Broker configs given in another unit than their primary name, in Kafka's precedence.
_SYNONYM_GROUPS = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)
_LISTENER_PREFIXED = re.compile(r"listener\.name\.[^.]*\.(.*)", re.S)


def listener_base(name: str) -> str | None:
    """`ssl.keystore.location` for `listener.name.external.ssl.keystore.location`."""
    match = _LISTENER_PREFIXED.fullmatch(name)
    return match.group(1) if match else None


def broker_synonyms(name: str, match_listener_override: bool = True) -> list[str]:
    """Kafka's DynamicBrokerConfig.brokerConfigSynonyms: the names that may set `name`."""
    for group in _SYNONYM_GROUPS:
        if name in group:
            return list(group)
    if name == "log.flush.interval.ms":  # log.flush.scheduler.interval.ms is its default
        return ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]
    base = listener_base(name) if match_listener_override else None
    if base is not None:
        mechanism = next((c for c in LISTENER_MECHANISM_CONFIGS if base.endswith(c)), None)
        return [name, mechanism or base]
    return [name]


def broker_spec(name: str) -> KafkaConfigSpec | None:
    """Kafka's definition of a broker config name, listener-prefixed names included."""
    for candidate in broker_synonyms(name):
        spec = BROKER_SPECS.get(candidate) or DYNAMIC_ONLY_BROKER_SPECS.get(candidate)
        if spec is not None:
            return spec
    return None


def broker_type(name: str) -> str | None:
    """KafkaConfig.configType: the type of a name, through its synonyms; None if unknown."""
    spec = broker_spec(name)
    return spec.type if spec is not None else None


def broker_sensitive(name: str) -> bool:
    """KafkaConfig.maybeSensitive: passwords, and any name whose type is unknown."""
    return broker_type(name) in (None, "password")


def is_password_config(name: str) -> bool:
    """DynamicBrokerConfig.isPasswordConfig: a dynamic password, prefixed or not."""
    return any(
        name.endswith(dynamic)
        for dynamic in ALL_DYNAMIC_CONFIGS
        if BROKER_SPECS[dynamic].type == "password"
    )


# Valid values ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Constraints:
    """A valid-values notation as brokerd.config.ConfigDef's fields."""

    at_least: float | None = None
    at_most: float | None = None
    choices: tuple[str, ...] | None = None
    validator: Callable[[str, Any], None] | None = None


class InvalidValue(ValueError):
    """A value Kafka's validator refuses; the message says why, as Kafka's does."""


_RANGE = re.compile(r"\[(-?[\d.]+),\.\.\.(?:,(-?[\d.]+))?\]")


def _number(text: str) -> float:
    return float(text) if "." in text else int(text)


def constraints_of(valid: str) -> Constraints:
    """Kafka's "Valid Values" text ("[1,...]", "[0,...,1]", "[a, b]", ...) as checks."""
    valid = valid.strip()
    if not valid or valid in ("non-empty list", "non-null string"):
        return Constraints()  # nothing a parsed value could fail
    if valid == "non-empty string":
        return Constraints(validator=_non_empty_string)
    if valid == "metadata version":
        return Constraints(validator=_metadata_version)
    if valid == "throttled replicas":
        return Constraints(validator=_throttled_replicas)
    alternative = re.fullmatch(r"(\[.*\]) or (-?\d+)", valid)
    if alternative:
        inner, extra = constraints_of(alternative.group(1)), int(alternative.group(2))
        return Constraints(validator=_range_or(inner.at_least, inner.at_most, extra))
    bounds = _RANGE.fullmatch(valid)
    if bounds:
        low, high = bounds.groups()
        return Constraints(_number(low), _number(high) if high is not None else None)
    if valid.startswith("[") and valid.endswith("]"):
        return Constraints(choices=tuple(item.strip() for item in valid[1:-1].split(",")))
    raise ValueError(f"unknown valid-values notation {valid!r}")


def _non_empty_string(name: str, value: Any) -> None:
    if value is not None and value == "":
        raise InvalidValue(
            f"Invalid value {value} for configuration {name}: String must be non-empty"
        )


def _range_or(low: float | None, high: float | None, extra: int) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if value is None or value == extra:
            return
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"[{low:g},...,{high:g}]" if high is not None else f"[{low:g},...]"
            raise InvalidValue(
                f"Invalid value {value} for configuration {name}: Value must be {extra} or in {bounds}"
            )

    return check


def _metadata_version_keys() -> frozenset[str]:
    keys = set(data.METADATA_VERSIONS)
    latest = data.METADATA_VERSIONS.index(data.METADATA_VERSION_LATEST_PRODUCTION)
    for version in data.METADATA_VERSIONS[: latest + 1]:
        keys.add(version.split("-IV")[0])  # the release, e.g. "2.8" for 2.8-IV1
    return frozenset(keys)


_METADATA_VERSION_KEYS = _metadata_version_keys()


def metadata_version_valid(text: str) -> bool:
    """MetadataVersion.fromVersionString: a version, or a release with more parts cut off
    ("2.8.1" is 2.8, "0.10.2.1" is 0.10.2)."""
    segments = text.split(".")
    wanted = 3 if text.startswith("0.") else 2
    key = text if wanted >= len(segments) else ".".join(segments[:wanted])
    return key in _METADATA_VERSION_KEYS


def _metadata_version(name: str, value: Any) -> None:
    if value is not None and not metadata_version_valid(value):
        raise InvalidValue(
            f"Invalid value {value} for configuration {name}: Version {value} is not a valid version"
        )


def _throttled_replicas(name: str, value: Any) -> None:
    """ThrottledReplicaListValidator: "*" alone, or partition:broker pairs of integers."""
    items = value or []
    if items == ["*"] or all(re.fullmatch(r"\d+:\d+", item.strip()) for item in items):
        return
    raise InvalidValue(
        f"Invalid value {','.join(items)} for configuration {name}: "
        "must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )


# Values as Kafka parses and prints them ---------------------------------------------------------

_INTEGER = re.compile(r"[+-]?[0-9]+")
_INTEGER_BITS = {"short": 16, "int": 32, "long": 64}
_CLASS_NAME = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*")


def parse_integer(text: str, type_: str) -> int:
    """Java's Short/Integer/Long.parseInt of the trimmed text: ASCII digits, within the type."""
    text = text.strip()
    if not _INTEGER.fullmatch(text):
        raise ValueError(f"Not a number of type {type_.upper()}")
    value = int(text)
    bits = _INTEGER_BITS[type_]
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ValueError(f"Not a number of type {type_.upper()}")
    return value


def parse_class_name(text: str) -> str:
    """A Java class name. Kafka loads the class; brokerd, which runs no Java plugins, only
    checks that the name could be one."""
    text = text.strip()
    if text and not _CLASS_NAME.fullmatch(text):
        raise ValueError("Class could not be found")
    return text


def java_double(value: float) -> str:
    """Double.toString: 0.5, 1.0E7, 1.7976931348623157E308."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))  # Python prints this range in decimal, as Java does
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)  # only NaN and infinities have a letter: returned above
    mantissa = f"{digits[0]}.{''.join(map(str, digits[1:])) or '0'}"
    return f"{'-' if sign else ''}{mantissa}E{exponent + len(digits) - 1}"


# IncrementalAlterConfigs ----------------------------------------------------------------------


def apply_list_operation(
    operation: str, current: str | None, default: str | None, value: str
) -> str:
    """APPEND or SUBTRACT on a list config, as ConfigAdminManager.prepareIncrementalConfigs:
    from the resource's own value, else from the config's default (never from a broker-level
    value); APPEND keeps the order and adds only what is missing."""
    base = current if current is not None else default
    values = value.split(",")
    if operation == "APPEND":
        old = base.split(",") if base else []
        return ",".join(old + [v for v in values if v not in old])
    old = (base or "").split(",")
    remaining = list(old)
    for item in values:  # Scala's List.diff: each given item removes one occurrence
        if item in remaining:
            remaining.remove(item)
    return ",".join(remaining)


# Dynamic broker updates -------------------------------------------------------------------------


def kafka_set(names: Iterable[str]) -> str:
    """A set of names as Kafka's messages print them: Set(a, b)."""
    return f"Set({', '.join(sorted(names))})"


def dynamic_update_errors(
    names: Iterable[str], per_broker: bool, brokerd_read_only: Callable[[str], bool]
) -> str | None:
    """DynamicBrokerConfig.validateConfigs: why these names cannot be set dynamically, or None.

    Names Kafka does not define are custom configs (for plugins) and go, as in Kafka;
    `brokerd_read_only` answers for configs only brokerd defines.
    """
    names = set(names)
    fixed = {
        n
        for n in names
        if (n in BROKER_SPECS and not BROKER_SPECS[n].dynamic)
        or (n not in BROKER_SPECS and n not in DYNAMIC_ONLY_BROKER_SPECS and brokerd_read_only(n))
    }
    if fixed:
        return f"Cannot update these configs dynamically: {kafka_set(fixed)}"
    unprefixed = names & PER_LISTENER_ONLY_CONFIGS
    if unprefixed:
        return (
            "These security configs can be dynamically updated only per-listener using the "
            f"listener prefix: {kafka_set(unprefixed)}"
        )
    if not per_broker:
        broker_only = {n for n in names if n in PER_BROKER_CONFIGS}
        broker_only |= {
            n
            for n in names
            if (base := listener_base(n)) is not None and base not in CLUSTER_LEVEL_LISTENER_CONFIGS
        }
        if broker_only:
            return (
                "Cannot update these configs at default cluster level, broker id must be "
                f"specified: {kafka_set(broker_only)}"
            )
    return None


def thread_pool_error(name: str, old: int, new: int) -> str | None:
    """DynamicThreadPool.validateReconfiguration: at most half or double the current size."""
    if new == old:
        return None
    message = f"Dynamic thread count update validation failed for {name}={new}"
    if new <= 0:
        return f"{message}, value should be at least 1"
    if new < old / 2:
        return f"{message}, value should be at least half the current value {old}"
    if new > old * 2:
        return f"{message}, value should not be greater than double the current value {old}"
    return None
