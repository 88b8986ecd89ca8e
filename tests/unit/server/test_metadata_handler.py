"""Metadata (3) and DescribeCluster (60) from a metadata cache filled by hand: the listener
asked through decides the endpoints, dead leaders and missing states are reported as Kafka
reports them, and unknown or illegal names are refused without creating anything."""

from brokerd.coordination.metadata import TopicInfo
from brokerd.coordination.zk_data import PartitionState
from brokerd.protocol.errors import ErrorCode
from brokerd.server.handlers.metadata import handle_describe_cluster, handle_metadata
from tests.integration.wire import nested, request
from tests.unit.server.handler_context import (
    broker_config,
    broker_info,
    call,
    context,
    metadata_cache,
    on_listener,
)

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def _ctx(auto_create: bool = False):
    config = broker_config({"auto.create.topics.enable": str(auto_create).lower()})
    metadata = metadata_cache(config)
    metadata.cluster_id = "cluster-1"
    metadata.controller_id = 2
    metadata.brokers = {1: broker_info(1, "r1"), 2: broker_info(2, "r2")}
    metadata.topics["orders"] = TopicInfo(
        "orders",
        TOPIC_ID,
        {0: [1, 2], 1: [2, 3], 2: [1, 2]},
        # 1's leader (3) is not registered; 2 has no state yet.
        states={0: PartitionState(1, 4, [1, 2], 1), 1: PartitionState(3, 2, [3], 1)},
    )
    return context(config, metadata=metadata)


def _metadata(names, version=12, allow_auto_create=True):
    topics = None
    if names is not None:
        topics = tuple(
            nested(3, version, "MetadataRequestTopic", name=n, topic_id=None) for n in names
        )
    return request(
        3,
        version,
        topics=topics,
        allow_auto_topic_creation=allow_auto_create,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )


async def test_all_topics_with_the_endpoints_of_the_listener_asked_through():
    ctx = _ctx()
    with on_listener("PLAINTEXT"):
        response = await call(handle_metadata, ctx, _metadata(None))
    assert response.cluster_id == "cluster-1" and response.controller_id == 2
    assert [(b.node_id, b.host, b.port, b.rack) for b in response.brokers] == [
        (1, "client-1", 9092, "r1"),
        (2, "client-2", 9092, "r2"),
    ]
    with on_listener("INTERNAL"):
        response = await call(handle_metadata, ctx, _metadata(None))
    assert [b.host for b in response.brokers] == ["internal-1", "internal-2"]

    (topic,) = response.topics
    assert topic.name == "orders" and topic.error_code == ErrorCode.none
    led, orphaned, unstated = topic.partitions
    assert (led.error_code, led.leader_id, led.leader_epoch) == (ErrorCode.none, 1, 4)
    assert list(led.isr_nodes) == [1, 2] and list(led.offline_replicas) == []
    assert orphaned.error_code == ErrorCode.leader_not_available and orphaned.leader_id == -1
    assert list(orphaned.offline_replicas) == [3]
    assert unstated.error_code == ErrorCode.leader_not_available and unstated.leader_id == -1


async def test_unknown_and_illegal_names_are_refused_without_creating_anything():
    ctx = _ctx(auto_create=False)  # no controller or replica manager: creating would fail
    response = await call(handle_metadata, ctx, _metadata(["missing", "bad/name", "orders"]))
    codes = {t.name: t.error_code for t in response.topics}
    assert codes == {
        "missing": ErrorCode.unknown_topic_or_partition,
        "bad/name": ErrorCode.invalid_topic_exception,
        "orders": ErrorCode.none,
    }
    # Enabled on the broker but not asked for by the client: still no creation.
    ctx = _ctx(auto_create=True)
    response = await call(handle_metadata, ctx, _metadata(["missing"], allow_auto_create=False))
    assert response.topics[0].error_code == ErrorCode.unknown_topic_or_partition


async def test_v0_empty_list_means_every_topic_and_v1_empty_list_means_none():
    ctx = _ctx()
    assert [t.name for t in (await call(handle_metadata, ctx, _metadata([], 0))).topics] == [
        "orders"
    ]
    assert list((await call(handle_metadata, ctx, _metadata([], 1))).topics) == []


async def test_describe_cluster_lists_brokers_and_refuses_the_controllers_endpoint_type():
    ctx = _ctx()
    body = request(60, 1, include_cluster_authorized_operations=False, endpoint_type=1)
    with on_listener("INTERNAL"):
        response = await call(handle_describe_cluster, ctx, body)
    assert response.error_code == ErrorCode.none and response.controller_id == 2
    assert [(b.broker_id, b.host) for b in response.brokers] == [
        (1, "internal-1"),
        (2, "internal-2"),
    ]
    body = request(60, 1, include_cluster_authorized_operations=False, endpoint_type=2)
    response = await call(handle_describe_cluster, ctx, body)
    assert response.error_code == ErrorCode.unsupported_endpoint_type
    assert response.controller_id == -1 and list(response.brokers) == []
