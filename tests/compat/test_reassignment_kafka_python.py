"""Partition reassignment through kafka-python's KafkaAdminClient (3.x has
alter_partition_reassignments and list_partition_reassignments; confluent-kafka 2.16 and
aiokafka 0.14 have neither), on three brokers."""

from __future__ import annotations

import pytest
from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError

from tests.cluster.conftest import Cluster
from tests.cluster.test_reassignment import place_beside_the_controller, wait_deleted, wait_placed


@pytest.fixture
def cluster(zookeeper, tmp_path_factory):
    made = Cluster(zookeeper, tmp_path_factory).start()
    yield made
    made.kill_all()


def test_kafka_python_reassigns_lists_and_cancels(cluster, topic_name):
    controller, other, adding = place_beside_the_controller(cluster, topic_name)
    tp = TopicPartition(topic_name, 0)
    admin = KafkaAdminClient(
        bootstrap_servers=cluster.brokers[controller].bootstrap, request_timeout_ms=30000
    )
    try:
        assert admin.list_partition_reassignments() == {}  # connected to the controller
        # The adding broker dies (its ZooKeeper session outlives it for a moment, so it may
        # still be chosen): the reassignment waits for it to come back and catch up.
        cluster.brokers[adding].kill()
        assert admin.alter_partition_reassignments({tp: [controller, adding]}) == {tp: None}
        assert admin.list_partition_reassignments([tp]) == {
            tp: {
                "replicas": [controller, adding, other],
                "adding_replicas": [adding],
                "removing_replicas": [other],
            }
        }
        cluster.brokers[adding].start()
        wait_placed(cluster, topic_name, [controller, adding])
        wait_deleted(cluster, other, topic_name)
        assert admin.list_partition_reassignments() == {}
        # Per-partition errors come back as kafka-python's error classes.
        assert admin.alter_partition_reassignments({tp: None}) == {
            tp: NoReassignmentInProgressError
        }
        assert admin.alter_partition_reassignments({tp: [controller, 99]}) == {
            tp: InvalidReplicationAssignmentError
        }
    finally:
        admin.close()
