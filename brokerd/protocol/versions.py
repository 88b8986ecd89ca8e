"""What ApiVersions advertises: exactly the APIs and versions the broker implements.

Every range here must lie inside what kio has schemas for (checked at import) and have a
handler in the dispatcher (checked when the dispatcher is built). A request outside this table
makes the broker close the connection, as Kafka does; ApiVersions itself is the exception and
answers UNSUPPORTED_VERSION in the v0 shape so the client can retry lower.
"""

from __future__ import annotations

from dataclasses import dataclass

from kio.schema.index import api_key_map, schema_name_map

from . import interbroker


@dataclass(frozen=True)
class VersionRange:
    min_version: int
    max_version: int

    def __contains__(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


API_VERSIONS_KEY = 18

# api key -> supported versions. Grows as handlers land; never list an unimplemented API.
SUPPORTED: dict[int, VersionRange] = {
    0: VersionRange(0, 9),  # Produce (v0-v2 schemas in produce_legacy.py)
    1: VersionRange(4, 12),  # Fetch (v13+ addresses topics by id)
    2: VersionRange(1, 7),  # ListOffsets
    3: VersionRange(0, 12),  # Metadata
    4: VersionRange(4, 4),  # LeaderAndIsr (controller to broker; schema in interbroker.py)
    5: VersionRange(3, 3),  # StopReplica (controller to broker)
    6: VersionRange(6, 6),  # UpdateMetadata (controller to broker)
    7: VersionRange(3, 3),  # ControlledShutdown (broker to controller; interbroker.py)
    8: VersionRange(2, 9),  # OffsetCommit (v10 addresses topics by id)
    9: VersionRange(1, 9),  # OffsetFetch (v8+: several groups; v10 topics by id)
    10: VersionRange(0, 6),  # FindCoordinator (v4+: batched keys)
    11: VersionRange(0, 9),  # JoinGroup (v4+: MEMBER_ID_REQUIRED round trip)
    12: VersionRange(0, 4),  # Heartbeat
    13: VersionRange(0, 5),  # LeaveGroup (v3+: batched members)
    14: VersionRange(0, 5),  # SyncGroup
    15: VersionRange(0, 6),  # DescribeGroups
    16: VersionRange(0, 5),  # ListGroups
    17: VersionRange(0, 1),  # SaslHandshake (v0: raw SASL tokens follow)
    18: VersionRange(0, 4),  # ApiVersions
    19: VersionRange(2, 7),  # CreateTopics
    20: VersionRange(1, 6),  # DeleteTopics
    21: VersionRange(0, 2),  # DeleteRecords
    22: VersionRange(0, 4),  # InitProducerId
    23: VersionRange(2, 4),  # OffsetForLeaderEpoch
    24: VersionRange(0, 3),  # AddPartitionsToTxn (v4+: brokers' batches, KIP-890)
    25: VersionRange(0, 3),  # AddOffsetsToTxn
    26: VersionRange(0, 3),  # EndTxn (v5+: transaction version 2, KIP-890)
    28: VersionRange(0, 3),  # TxnOffsetCommit
    27: VersionRange(1, 2),  # WriteTxnMarkers (coordinator to leaders; v2: KIP-890's version)
    29: VersionRange(1, 3),  # DescribeAcls (SECURITY_DISABLED without an authorizer)
    30: VersionRange(1, 3),  # CreateAcls
    31: VersionRange(1, 3),  # DeleteAcls
    32: VersionRange(1, 4),  # DescribeConfigs
    33: VersionRange(0, 2),  # AlterConfigs
    34: VersionRange(1, 2),  # AlterReplicaLogDirs
    35: VersionRange(1, 4),  # DescribeLogDirs
    36: VersionRange(0, 2),  # SaslAuthenticate (v1+: session lifetime)
    37: VersionRange(0, 3),  # CreatePartitions
    42: VersionRange(0, 2),  # DeleteGroups
    43: VersionRange(0, 2),  # ElectLeaders (answered by the controller)
    44: VersionRange(0, 1),  # IncrementalAlterConfigs
    45: VersionRange(0, 1),  # AlterPartitionReassignments (answered by the controller)
    46: VersionRange(0, 0),  # ListPartitionReassignments (answered by the controller)
    47: VersionRange(0, 0),  # OffsetDelete
    50: VersionRange(0, 0),  # DescribeUserScramCredentials
    51: VersionRange(0, 0),  # AlterUserScramCredentials
    60: VersionRange(0, 1),  # DescribeCluster
    61: VersionRange(0, 0),  # DescribeProducers (KIP-664)
    65: VersionRange(0, 0),  # DescribeTransactions
    66: VersionRange(0, 1),  # ListTransactions (v1: duration filter)
    68: VersionRange(0, 1),  # ConsumerGroupHeartbeat (KIP-848; v1: member ids from clients)
    69: VersionRange(0, 1),  # ConsumerGroupDescribe (KIP-848)
    75: VersionRange(0, 0),  # DescribeTopicPartitions (KIP-966)
}


def api_name(api_key: int) -> str:
    return api_key_map.get(api_key) or interbroker.NAMES.get(api_key, f"api_{api_key}")


def is_supported(api_key: int, api_version: int) -> bool:
    supported = SUPPORTED.get(api_key)
    return supported is not None and api_version in supported


def _check_against_kio() -> None:
    """Each advertised version has a schema: our own (interbroker.SCHEMAS) or kio's."""
    for api_key, supported in SUPPORTED.items():
        ours = interbroker.SCHEMAS.get(api_key, {})
        name = api_key_map.get(api_key)
        known = schema_name_map.get(name, {}) if name is not None else {}
        for version in range(supported.min_version, supported.max_version + 1):
            if version not in ours and version not in known:
                raise RuntimeError(f"no schema for {api_name(api_key)} v{version}")


_check_against_kio()
