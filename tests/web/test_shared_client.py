"""One Kafka client per cluster per process: request handlers on many threads share it,
it follows a change of the cluster's bootstrap servers, and it is closed at shutdown."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from dashboard.core import kafka

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_clients():
    kafka.close_shared_clients()
    yield
    kafka.close_shared_clients()


def test_threads_share_one_client_and_see_new_topics(kafka_cluster, broker, topic_name):
    def topics_seen(_):
        metadata = kafka.with_cluster(kafka_cluster, lambda ops: ops.refresh())
        return kafka.shared_client(kafka_cluster), set(metadata.topics)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(topics_seen, range(16)))
    clients = {id(client) for client, _ in results}
    assert len(clients) == 1
    assert topic_name not in results[0][1]

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(topic_name, 2, 1)])
    admin.close()
    # The shared client's metadata is refreshed by each operation, not cached stale.
    _, topics = topics_seen(None)
    assert topic_name in topics
    offsets = kafka.with_cluster(
        kafka_cluster, lambda ops: ops.list_offsets(topic_name, [0, 1], kafka.LATEST)
    )
    assert offsets == {0: 0, 1: 0}


def test_a_changed_bootstrap_makes_a_new_client_and_closes_the_old(
    kafka_cluster, broker, make_broker
):
    first = kafka.shared_client(kafka_cluster)
    other = make_broker().start()
    kafka_cluster.bootstrap_servers = other.bootstrap
    kafka_cluster.save()
    second = kafka.shared_client(kafka_cluster)
    assert second is not first
    assert first._loop.loop.is_closed()  # closed, its connections with it
    metadata = kafka.with_cluster(kafka_cluster, lambda ops: ops.refresh([]))
    assert [b.address for b in metadata.brokers.values()] == [other.bootstrap]

    kafka.close_shared_clients()  # what runs at exit
    assert second._loop.loop.is_closed()
