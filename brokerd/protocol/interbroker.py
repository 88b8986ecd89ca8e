"""Controller-to-broker requests kio no longer ships: LeaderAndIsr (4), StopReplica (5),
UpdateMetadata (6) and ControlledShutdown (7, broker to controller), written in kio's schema
style so kio's reader and writer handle them.

Kafka 4 dropped these ZooKeeper-era APIs from its message definitions, and kio follows it.
The layouts are those of Kafka 2.4-3.x's JSON definitions at one flexible version each
(LeaderAndIsr v4, StopReplica v3, UpdateMetadata v6, ControlledShutdown v3), which is all
the controller and a stopping broker send.
No `from __future__ import annotations`: kio's native reader resolves the field types.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import BrokerId, TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i64

from . import produce_legacy


def _int32(default=None):
    if default is None:
        return field(metadata={"kafka_type": "int32"})
    return field(metadata={"kafka_type": "int32"}, default=default)


def _ids():
    return field(metadata={"kafka_type": "int32"}, default=())


# LeaderAndIsr v4 --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrPartitionState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    partition_index: i32 = _int32()
    controller_epoch: i32 = _int32()
    leader: BrokerId = _int32()
    leader_epoch: i32 = _int32()
    isr: tuple[BrokerId, ...] = _ids()
    zk_version: i32 = _int32()
    replicas: tuple[BrokerId, ...] = _ids()
    adding_replicas: tuple[BrokerId, ...] = _ids()
    removing_replicas: tuple[BrokerId, ...] = _ids()
    is_new: bool = field(metadata={"kafka_type": "bool"}, default=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrTopicState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    partition_states: tuple[LeaderAndIsrPartitionState, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrLiveLeader:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    broker_id: BrokerId = _int32()
    host_name: str = field(metadata={"kafka_type": "string"})
    port: i32 = _int32()


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    controller_id: BrokerId = _int32()
    controller_epoch: i32 = _int32()
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    topic_states: tuple[LeaderAndIsrTopicState, ...]
    live_leaders: tuple[LeaderAndIsrLiveLeader, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrPartitionError:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    partition_index: i32 = _int32()
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(4)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(4)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    partition_errors: tuple[LeaderAndIsrPartitionError, ...]


# StopReplica v3 ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaPartitionState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(5)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    partition_index: i32 = _int32()
    leader_epoch: i32 = _int32(i32(-1))
    delete_partition: bool = field(metadata={"kafka_type": "bool"}, default=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaTopicState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(5)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    partition_states: tuple[StopReplicaPartitionState, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(5)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    controller_id: BrokerId = _int32()
    controller_epoch: i32 = _int32()
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    topic_states: tuple[StopReplicaTopicState, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaPartitionError:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(5)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    partition_index: i32 = _int32()
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(5)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    partition_errors: tuple[StopReplicaPartitionError, ...]


# UpdateMetadata v6 ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataPartitionState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(6)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(6)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    partition_index: i32 = _int32()
    controller_epoch: i32 = _int32()
    leader: BrokerId = _int32()
    leader_epoch: i32 = _int32()
    isr: tuple[BrokerId, ...] = _ids()
    zk_version: i32 = _int32()
    replicas: tuple[BrokerId, ...] = _ids()
    offline_replicas: tuple[BrokerId, ...] = _ids()


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataTopicState:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(6)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(6)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    partition_states: tuple[UpdateMetadataPartitionState, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataEndpoint:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(6)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(6)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    port: i32 = _int32()
    host: str = field(metadata={"kafka_type": "string"})
    listener: str = field(metadata={"kafka_type": "string"})
    security_protocol: i16 = field(metadata={"kafka_type": "int16"})


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataBroker:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(6)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(6)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    id: BrokerId = _int32()
    endpoints: tuple[UpdateMetadataEndpoint, ...]
    rack: str | None = field(metadata={"kafka_type": "string"}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(6)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(6)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    controller_id: BrokerId = _int32()
    controller_epoch: i32 = _int32()
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    topic_states: tuple[UpdateMetadataTopicState, ...]
    live_brokers: tuple[UpdateMetadataBroker, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(6)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(6)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


# ControlledShutdown v3 --------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(7)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    broker_id: BrokerId = _int32()
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownRemainingPartition:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(7)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    partition_index: i32 = _int32()


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledShutdownResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(7)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    remaining_partitions: tuple[ControlledShutdownRemainingPartition, ...]


# api key -> name, and {version: (request, response)} ---------------------------------------
NAMES = {4: "leader_and_isr", 5: "stop_replica", 6: "update_metadata", 7: "controlled_shutdown"}
SCHEMAS = {
    0: produce_legacy.SCHEMAS,  # Produce v0-v2 (v3+ from kio)
    4: {4: (LeaderAndIsrRequest, LeaderAndIsrResponse)},
    5: {3: (StopReplicaRequest, StopReplicaResponse)},
    6: {6: (UpdateMetadataRequest, UpdateMetadataResponse)},
    7: {3: (ControlledShutdownRequest, ControlledShutdownResponse)},
}


def request_schema(api_key: int, version: int) -> type | None:
    found = SCHEMAS.get(api_key, {}).get(version)
    return found[0] if found else None


def response_schema(api_key: int, version: int) -> type | None:
    found = SCHEMAS.get(api_key, {}).get(version)
    return found[1] if found else None
