"""What the AdminClient returns: plain dataclasses, no kio types."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from .errors import KafkaResponseError
from .metadata import BrokerInfo


class ResourceType(IntEnum):
    """Kafka's ConfigResource.Type ids."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8


class ConfigSource(IntEnum):
    """Kafka's DescribeConfigsResponse config sources."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class AlterConfigOp(IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


# Special ListOffsets timestamps.
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
OFFSET_SPECS = {"latest": LATEST, "earliest": EARLIEST, "max_timestamp": MAX_TIMESTAMP}


@dataclass(frozen=True, slots=True)
class ConfigResource:
    type: ResourceType
    name: str

    @classmethod
    def topic(cls, name: str) -> ConfigResource:
        return cls(ResourceType.TOPIC, name)

    @classmethod
    def broker(cls, broker_id: int | str = "") -> ConfigResource:
        return cls(ResourceType.BROKER, str(broker_id))


@dataclass(frozen=True, slots=True)
class NewTopic:
    name: str
    num_partitions: int = -1  # -1: the broker's num.partitions
    replication_factor: int = -1  # -1: the broker's default.replication.factor
    configs: dict[str, str] = field(default_factory=dict)
    assignments: dict[int, list[int]] | None = None  # partition -> replica broker ids


@dataclass(frozen=True, slots=True)
class CreatedTopic:
    name: str
    topic_id: object | None
    num_partitions: int
    replication_factor: int
    configs: dict[str, str | None]


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    is_sensitive: bool
    synonyms: tuple[ConfigSynonym, ...] = ()
    config_type: int = 0
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT_CONFIG


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerInfo, ...]


@dataclass(frozen=True, slots=True)
class ReplicaLogDirInfo:
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    path: str
    error_code: int
    replicas: dict[tuple[str, int], ReplicaLogDirInfo]
    total_bytes: int = -1
    usable_bytes: int = -1


@dataclass(frozen=True, slots=True)
class ListedOffset:
    offset: int
    timestamp: int
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str | None
    group_type: str = "classic"  # or "consumer" (KIP-848), from ListGroups v5


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[tuple[str, int], ...]  # decoded when the protocol type is "consumer"


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator: int
    group_type: str = "classic"  # or "consumer": a KIP-848 group (ConsumerGroupDescribe)


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int  # -1: nothing committed
    leader_epoch: int = -1
    metadata: str | None = ""


@dataclass(frozen=True, slots=True)
class PartitionLag:
    committed: int  # -1: nothing committed
    high_watermark: int
    lag: int | None  # high watermark - committed; None without a commit


@dataclass(frozen=True, slots=True)
class PartitionReassignment:
    """An ongoing reassignment (ListPartitionReassignments): `replicas` is the full set
    while it runs (target and original), `adding_replicas` the target replicas not in the
    original set, `removing_replicas` the original ones not in the target."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    @property
    def original_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding_replicas)


class AdminError(KafkaResponseError):
    """Some items of a batched admin call failed: `errors` per item, `results` for the rest."""

    def __init__(self, errors: dict, results: dict):
        first_key, first = next(iter(errors.items()))
        super().__init__(getattr(first, "error_code", -1))
        self.args = ("; ".join(f"{error}" for error in errors.values()),)
        self.message = self.args[0]
        self.errors = errors
        self.results = results
        self.first_item = first_key


def raise_for_errors(results: dict) -> dict:
    """The results if none is an exception, else AdminError."""
    errors = {k: v for k, v in results.items() if isinstance(v, BaseException)}
    if errors:
        raise AdminError(errors, {k: v for k, v in results.items() if k not in errors})
    return results
