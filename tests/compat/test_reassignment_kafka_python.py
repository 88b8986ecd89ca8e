"""Partition reassignment through kafka-python's KafkaAdminClient (3.x has
alter_partition_reassignments and list_partition_reassignments; confluent-kafka 2.16 and
aiokafka 0.14 have neither), on three brokers."""

from __future__ import annotations

import pytest
from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError

from tests.cluster.conftest import Cluster
from tests.cluster.test_reassignment import create_placed_topic, paused, wait_deleted, wait_placed


@pytest.fixture
def cluster(zookeeper, tmp_path_factory):
    made = Cluster(zookeeper, tmp_path_factory).start()
    yield made
    made.kill_all()


def test_kafka_python_reassigns_lists_and_cancels(cluster, topic_name):
    create_placed_topic(cluster, topic_name, [1, 2])
    tp = TopicPartition(topic_name, 0)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        with paused(cluster.brokers[3]):  # broker 3 cannot catch up while paused
            assert admin.alter_partition_reassignments({tp: [1, 3]}) == {tp: None}
            assert admin.list_partition_reassignments([tp]) == {
                tp: {"replicas": [1, 3, 2], "adding_replicas": [3], "removing_replicas": [2]}
            }
        wait_placed(cluster, topic_name, [1, 3])
        wait_deleted(cluster, 2, topic_name)
        assert admin.list_partition_reassignments() == {}
        # Per-partition errors come back as kafka-python's error classes.
        assert admin.alter_partition_reassignments({tp: None}) == {
            tp: NoReassignmentInProgressError
        }
        assert admin.alter_partition_reassignments({tp: [1, 99]}) == {
            tp: InvalidReplicationAssignmentError
        }
    finally:
        admin.close()
