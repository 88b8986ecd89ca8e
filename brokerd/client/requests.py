"""Requests as version-free values, built into the kio class of the negotiated version.

kio has one dataclass per API version. The client describes a request once, as a superset of
the fields of every version it implements, with nested entities as `Nested(class name,
**values)`; `materialize` builds the classes of one version and drops the fields it lacks.
"""

from __future__ import annotations

from typing import Any

from kio.index import load_request_schema

from brokerd.protocol.messages import build, request_module
from brokerd.protocol.versions import VersionRange

from .errors import UnsupportedVersionError

# api key -> the versions this client implements (highest common version wins).
CLIENT_VERSIONS: dict[int, VersionRange] = {
    0: VersionRange(3, 9),  # Produce (v3: record batch v2)
    1: VersionRange(4, 12),  # Fetch (v13+ addresses topics by id)
    2: VersionRange(1, 7),  # ListOffsets
    3: VersionRange(1, 12),  # Metadata (v1: null means every topic)
    8: VersionRange(2, 8),  # OffsetCommit
    9: VersionRange(1, 8),  # OffsetFetch (v8+ batches groups)
    10: VersionRange(1, 4),  # FindCoordinator (v4+ batches keys)
    15: VersionRange(0, 5),  # DescribeGroups
    16: VersionRange(0, 5),  # ListGroups (v5: group types, KIP-848)
    18: VersionRange(0, 4),  # ApiVersions
    19: VersionRange(2, 7),  # CreateTopics
    20: VersionRange(1, 6),  # DeleteTopics
    21: VersionRange(0, 2),  # DeleteRecords
    22: VersionRange(0, 4),  # InitProducerId
    29: VersionRange(1, 3),  # DescribeAcls (v1: pattern types)
    30: VersionRange(1, 3),  # CreateAcls
    31: VersionRange(1, 3),  # DeleteAcls
    32: VersionRange(1, 4),  # DescribeConfigs
    33: VersionRange(0, 2),  # AlterConfigs
    35: VersionRange(1, 4),  # DescribeLogDirs
    37: VersionRange(0, 3),  # CreatePartitions
    42: VersionRange(0, 2),  # DeleteGroups
    43: VersionRange(0, 2),  # ElectLeaders
    44: VersionRange(0, 1),  # IncrementalAlterConfigs
    45: VersionRange(0, 1),  # AlterPartitionReassignments
    46: VersionRange(0, 0),  # ListPartitionReassignments
    47: VersionRange(0, 0),  # OffsetDelete
    50: VersionRange(0, 0),  # DescribeUserScramCredentials
    51: VersionRange(0, 0),  # AlterUserScramCredentials
    60: VersionRange(0, 1),  # DescribeCluster
    61: VersionRange(0, 0),  # DescribeProducers
    65: VersionRange(0, 0),  # DescribeTransactions
    66: VersionRange(0, 1),  # ListTransactions
    69: VersionRange(0, 1),  # ConsumerGroupDescribe (KIP-848 groups)
}

API_NAMES = {
    0: "Produce",
    1: "Fetch",
    2: "ListOffsets",
    3: "Metadata",
    8: "OffsetCommit",
    9: "OffsetFetch",
    10: "FindCoordinator",
    15: "DescribeGroups",
    16: "ListGroups",
    18: "ApiVersions",
    19: "CreateTopics",
    20: "DeleteTopics",
    21: "DeleteRecords",
    22: "InitProducerId",
    29: "DescribeAcls",
    30: "CreateAcls",
    31: "DeleteAcls",
    32: "DescribeConfigs",
    33: "AlterConfigs",
    35: "DescribeLogDirs",
    37: "CreatePartitions",
    42: "DeleteGroups",
    43: "ElectLeaders",
    44: "IncrementalAlterConfigs",
    45: "AlterPartitionReassignments",
    46: "ListPartitionReassignments",
    47: "OffsetDelete",
    50: "DescribeUserScramCredentials",
    51: "AlterUserScramCredentials",
    60: "DescribeCluster",
    61: "DescribeProducers",
    65: "DescribeTransactions",
    66: "ListTransactions",
    69: "ConsumerGroupDescribe",
}


class Nested:
    """A nested entity by its kio class name, built once the version is known."""

    __slots__ = ("class_name", "values")

    def __init__(self, class_name: str, **values: Any):
        self.class_name = class_name
        self.values = values

    def __repr__(self) -> str:
        return f"Nested({self.class_name!r}, {self.values!r})"


def materialize(api_key: int, version: int, values: dict[str, Any]) -> Any:
    """The kio request of `version` from version-free `values`."""
    module = request_module(api_key, version)
    return build(load_request_schema(api_key, version), **_resolve(module, values))


def _resolve(module: Any, values: dict[str, Any]) -> dict[str, Any]:
    return {name: _value(module, value) for name, value in values.items()}


def _value(module: Any, value: Any) -> Any:
    if isinstance(value, Nested):
        return build(getattr(module, value.class_name), **_resolve(module, value.values))
    if isinstance(value, list | tuple):
        return tuple(_value(module, item) for item in value)
    return value


def negotiate(api_key: int, broker: VersionRange | None) -> int:
    """The highest version both this client and the broker speak."""
    name = API_NAMES.get(api_key, f"api {api_key}")
    ours = CLIENT_VERSIONS[api_key]
    if broker is None:
        raise UnsupportedVersionError(f"the broker does not advertise {name}")
    high = min(ours.max_version, broker.max_version)
    low = max(ours.min_version, broker.min_version)
    if high < low:
        raise UnsupportedVersionError(
            f"{name}: the broker speaks v{broker.min_version}-{broker.max_version}, "
            f"this client v{ours.min_version}-{ours.max_version}"
        )
    return high
