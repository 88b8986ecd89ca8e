"""DescribeTopicPartitions (API 75, KIP-966): raw requests through kio for the paging and
its errors, and kafka-python's admin client paging through the cursor."""

from __future__ import annotations

import time
import uuid

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from brokerd.protocol.errors import ErrorCode
from tests.integration.wire import WireClient, nested, request

API = 75


def describe(client, names, limit=2000, cursor=None):
    return client.call(
        request(
            API,
            0,
            topics=tuple(nested(API, 0, "TopicRequest", name=n) for n in names),
            response_partition_limit=limit,
            cursor=None
            if cursor is None
            else nested(API, 0, "Cursor", topic_name=cursor[0], partition_index=cursor[1]),
        )
    )


def page(response):
    """[(topic, error, [partition indexes])], next cursor."""
    topics = [
        (t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in response.topics
    ]
    cursor = response.next_cursor
    return topics, None if cursor is None else (cursor.topic_name, cursor.partition_index)


@pytest.fixture(scope="module")
def two_topics(broker):
    prefix = f"dtp-{uuid.uuid4().hex[:8]}"
    a, b = f"{prefix}-a", f"{prefix}-b"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(a, 5, 1), NewTopic(b, 3, 1)])
        deadline = time.monotonic() + 30
        with WireClient(broker.bootstrap) as client:
            while True:
                topics = describe(client, [a, b]).topics
                if all(p.leader_id >= 0 for t in topics for p in t.partitions) and all(
                    t.error_code == 0 for t in topics
                ):
                    break
                assert time.monotonic() < deadline
                time.sleep(0.1)
        yield prefix, a, b
    finally:
        admin.close()


def test_pages_by_partition_limit_with_the_cursor(broker, two_topics):
    prefix, a, b = two_topics
    missing, illegal = f"{prefix}-c", f"{prefix}-d!"
    names = [b, illegal, a, missing]
    with WireClient(broker.bootstrap) as client:
        first = page(describe(client, names, limit=4))
        assert first == ([(a, 0, [0, 1, 2, 3])], (a, 4))
        second = page(describe(client, names, limit=4, cursor=(a, 4)))
        # The limit is met at the end of b: the next page starts at the next topic.
        assert second == ([(a, 0, [4]), (b, 0, [0, 1, 2])], (missing, 0))
        third = page(describe(client, names, limit=4, cursor=(missing, 0)))
        assert third == (
            [
                (missing, ErrorCode.unknown_topic_or_partition, []),
                (illegal, ErrorCode.invalid_topic_exception, []),
            ],
            None,
        )
        # A limit of 0 still answers one partition.
        assert page(describe(client, [a], limit=0)) == ([(a, 0, [0])], (a, 1))


def test_partition_fields_match_metadata(broker, two_topics):
    _, a, _ = two_topics
    with WireClient(broker.bootstrap) as client:
        (topic,) = describe(client, [a]).topics
        metadata = client.call(
            request(
                3,
                12,
                topics=(nested(3, 12, "MetadataRequestTopic", name=a, topic_id=uuid.UUID(int=0)),),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
    (expected,) = metadata.topics
    assert topic.topic_id == expected.topic_id
    assert topic.is_internal is False
    assert topic.topic_authorized_operations > 0
    by_index = {p.partition_index: p for p in expected.partitions}
    for p in topic.partitions:
        m = by_index[p.partition_index]
        assert (p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes) == (
            m.leader_id,
            m.leader_epoch,
            m.replica_nodes,
            m.isr_nodes,
        )
        assert p.eligible_leader_replicas == () and p.last_known_elr == ()
        assert p.offline_replicas == ()


def test_all_topics_and_invalid_cursors(broker, two_topics):
    prefix, a, b = two_topics
    with WireClient(broker.bootstrap) as client:
        # No topics named: every topic from the cursor's on, missing ones never listed.
        listed, cursor = page(describe(client, [], cursor=(a, 2)))
        assert cursor is None
        assert listed[0] == (a, 0, [2, 3, 4])
        assert (b, 0, [0, 1, 2]) in listed
        assert all(name >= a for name, _, _ in listed)
        # The cursor's topic must be one of those named; its partition not negative.
        bad = page(describe(client, [b], cursor=(a, 0)))
        assert bad == ([(b, ErrorCode.invalid_request, [])], None)
        bad = page(describe(client, [a], cursor=(a, -1)))
        assert bad == ([(a, ErrorCode.invalid_request, [])], None)


def test_kafka_python_pages_through_every_partition(broker, two_topics):
    _, a, b = two_topics
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        seen = []
        cursor = None
        for _ in range(10):
            answer = admin.describe_topic_partitions(
                [a, b], response_partition_limit=3, cursor=cursor
            )
            for topic in answer["topics"]:
                assert topic["error_code"] == 0
                seen += [(topic["name"], p["partition_index"]) for p in topic["partitions"]]
            cursor = answer["next_cursor"]
            if cursor is None:
                break
        assert seen == [(a, i) for i in range(5)] + [(b, i) for i in range(3)]
    finally:
        admin.close()
