"""Controller-to-broker requests kio no longer ships: LeaderAndIsr (4), StopReplica (5),
UpdateMetadata (6) and ControlledShutdown (7, broker to controller), written in kio's schema
style so kio's reader and writer handle them.

Kafka 4 dropped these ZooKeeper-era APIs from its message definitions, and kio follows it.
The layouts are those of Kafka 2.4-3.x's JSON definitions at one flexible version each
(LeaderAndIsr v4, StopReplica v3, UpdateMetadata v6, ControlledShutdown v3), which is all
the controller and a stopping broker send.
No `from __future__ import annotations`: kio's native reader resolves the field types.
"""

from dataclasses import field

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i16, i32, i64

from . import produce_legacy
from .kio_style import Message, request, request_part, response, response_part

LEADER_AND_ISR = Message(4, 4, True, RequestHeader, ResponseHeader)
STOP_REPLICA = Message(5, 3, True, RequestHeader, ResponseHeader)
UPDATE_METADATA = Message(6, 6, True, RequestHeader, ResponseHeader)
CONTROLLED_SHUTDOWN = Message(7, 3, True, RequestHeader, ResponseHeader)


def _int32(default=None):
    if default is None:
        return field(metadata={"kafka_type": "int32"})
    return field(metadata={"kafka_type": "int32"}, default=default)


def _ids():
    return field(metadata={"kafka_type": "int32"}, default=())


# LeaderAndIsr v4 --------------------------------------------------------------------------


@request_part(LEADER_AND_ISR)
class LeaderAndIsrPartitionState:
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


@request_part(LEADER_AND_ISR)
class LeaderAndIsrTopicState:
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    partition_states: tuple[LeaderAndIsrPartitionState, ...]


@request_part(LEADER_AND_ISR)
class LeaderAndIsrLiveLeader:
    broker_id: BrokerId = _int32()
    host_name: str = field(metadata={"kafka_type": "string"})
    port: i32 = _int32()


@request(LEADER_AND_ISR)
class LeaderAndIsrRequest:
    controller_id: BrokerId = _int32()
    controller_epoch: i32 = _int32()
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    topic_states: tuple[LeaderAndIsrTopicState, ...]
    live_leaders: tuple[LeaderAndIsrLiveLeader, ...]


@response_part(LEADER_AND_ISR)
class LeaderAndIsrPartitionError:
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    partition_index: i32 = _int32()
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


@response(LEADER_AND_ISR)
class LeaderAndIsrResponse:
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    partition_errors: tuple[LeaderAndIsrPartitionError, ...]


# StopReplica v3 ---------------------------------------------------------------------------


@request_part(STOP_REPLICA)
class StopReplicaPartitionState:
    partition_index: i32 = _int32()
    leader_epoch: i32 = _int32(i32(-1))
    delete_partition: bool = field(metadata={"kafka_type": "bool"}, default=False)


@request_part(STOP_REPLICA)
class StopReplicaTopicState:
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    partition_states: tuple[StopReplicaPartitionState, ...]


@request(STOP_REPLICA)
class StopReplicaRequest:
    controller_id: BrokerId = _int32()
    controller_epoch: i32 = _int32()
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    topic_states: tuple[StopReplicaTopicState, ...]


@response_part(STOP_REPLICA)
class StopReplicaPartitionError:
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    partition_index: i32 = _int32()
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


@response(STOP_REPLICA)
class StopReplicaResponse:
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    partition_errors: tuple[StopReplicaPartitionError, ...]


# UpdateMetadata v6 ------------------------------------------------------------------------


@request_part(UPDATE_METADATA)
class UpdateMetadataPartitionState:
    partition_index: i32 = _int32()
    controller_epoch: i32 = _int32()
    leader: BrokerId = _int32()
    leader_epoch: i32 = _int32()
    isr: tuple[BrokerId, ...] = _ids()
    zk_version: i32 = _int32()
    replicas: tuple[BrokerId, ...] = _ids()
    offline_replicas: tuple[BrokerId, ...] = _ids()


@request_part(UPDATE_METADATA)
class UpdateMetadataTopicState:
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    partition_states: tuple[UpdateMetadataPartitionState, ...]


@request_part(UPDATE_METADATA)
class UpdateMetadataEndpoint:
    port: i32 = _int32()
    host: str = field(metadata={"kafka_type": "string"})
    listener: str = field(metadata={"kafka_type": "string"})
    security_protocol: i16 = field(metadata={"kafka_type": "int16"})


@request_part(UPDATE_METADATA)
class UpdateMetadataBroker:
    id: BrokerId = _int32()
    endpoints: tuple[UpdateMetadataEndpoint, ...]
    rack: str | None = field(metadata={"kafka_type": "string"}, default=None)


@request(UPDATE_METADATA)
class UpdateMetadataRequest:
    controller_id: BrokerId = _int32()
    controller_epoch: i32 = _int32()
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    topic_states: tuple[UpdateMetadataTopicState, ...]
    live_brokers: tuple[UpdateMetadataBroker, ...]


@response(UPDATE_METADATA)
class UpdateMetadataResponse:
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})


# ControlledShutdown v3 --------------------------------------------------------------------


@request(CONTROLLED_SHUTDOWN)
class ControlledShutdownRequest:
    broker_id: BrokerId = _int32()
    broker_epoch: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))


@response_part(CONTROLLED_SHUTDOWN)
class ControlledShutdownRemainingPartition:
    topic_name: TopicName = field(metadata={"kafka_type": "string"})
    partition_index: i32 = _int32()


@response(CONTROLLED_SHUTDOWN)
class ControlledShutdownResponse:
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    remaining_partitions: tuple[ControlledShutdownRemainingPartition, ...]


# api key -> name, and {version: (request, response)} ---------------------------------------
NAMES = {4: "leader_and_isr", 5: "stop_replica", 6: "update_metadata", 7: "controlled_shutdown"}
# api key -> version -> (request class, response class)
SCHEMAS: dict[int, dict[int, tuple[type, type]]] = {
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
