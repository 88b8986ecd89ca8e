"""The project's own Kafka-protocol client: asyncio, with a synchronous facade (`sync`).

Works against brokerd and any Kafka-compatible cluster: versions are negotiated through
ApiVersions, requests are kio schemas framed by brokerd.protocol, batches are built and
read by brokerd.records.

    async with Cluster("127.0.0.1:9092") as cluster:
        admin = AdminClient(cluster)
        async with Producer(cluster, idempotent=True) as producer:
            await producer.send_and_wait("events", b"value", b"key")
        records = await Consumer(cluster).fetch_range("events", 0, 0, 10)

    with SyncClient("127.0.0.1:9092") as client:   # from plain threads
        client.admin.list_topics()
"""

from .admin import AdminClient
from .cluster import Cluster
from .connection import BrokerConnection
from .consumer import Consumer, ConsumerRecord, OffsetOutOfRangeError, PartitionData
from .errors import (
    ErrorCode,
    KafkaClientError,
    KafkaConnectionError,
    KafkaResponseError,
    KafkaTimeoutError,
    UnsupportedVersionError,
)
from .metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
from .partitioner import DefaultPartitioner, murmur2, partition_for_key
from .producer import BatchResult, ProducedBatch, Producer, RecordMetadata
from .results import (
    AdminError,
    AlterConfigOp,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    PartitionReassignment,
    ResourceType,
)
from .sync import SyncClient

__all__ = [
    "AdminClient",
    "AdminError",
    "AlterConfigOp",
    "BatchResult",
    "BrokerConnection",
    "BrokerInfo",
    "Cluster",
    "ClusterMetadata",
    "ConfigEntry",
    "ConfigResource",
    "ConfigSource",
    "Consumer",
    "ConsumerRecord",
    "DefaultPartitioner",
    "ErrorCode",
    "KafkaClientError",
    "KafkaConnectionError",
    "KafkaResponseError",
    "KafkaTimeoutError",
    "NewTopic",
    "OffsetOutOfRangeError",
    "PartitionData",
    "PartitionInfo",
    "PartitionReassignment",
    "ProducedBatch",
    "Producer",
    "RecordMetadata",
    "ResourceType",
    "SyncClient",
    "TopicInfo",
    "UnsupportedVersionError",
    "murmur2",
    "partition_for_key",
]
