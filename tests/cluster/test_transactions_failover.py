"""The transaction coordinator fails over with its `__transaction_state` partition.

A confluent-kafka transactional producer has records in an open transaction when the broker
leading its transactional id's partition is killed with SIGKILL. The new leader of that
partition rebuilds the id's state from the log (the Ongoing transaction and its partitions,
written with acks=all), so the producer's commit goes through the new coordinator, whose
markers reach the partitions' (possibly new) leaders; later transactions commit and abort
as before, and a read_committed consumer reads exactly the committed records, in order.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from brokerd.transactions.transaction_log import TOPIC as TXN_TOPIC
from brokerd.transactions.transaction_log import partition_for

from .checker import create_topic
from .conftest import Cluster

pytestmark = pytest.mark.timeout(240)
TXN_PARTITIONS = 3


@pytest.fixture
def txn_cluster(zookeeper, tmp_path_factory):
    made = Cluster(
        zookeeper,
        tmp_path_factory,
        transaction_state_log_num_partitions=str(TXN_PARTITIONS),
        transaction_abort_timed_out_transaction_cleanup_interval_ms="1000",
    ).start()
    yield made
    made.kill_all()


def read_committed(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4()}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    idle = 0
    while idle < (6 if len(values) >= expected else 60):  # bounded: 30 s without records
        message = consumer.poll(0.5)
        if message is None:
            idle += 1
            continue
        idle = 0
        if message.error():
            continue
        values.append(message.value())
    consumer.close()
    return values


def test_commit_goes_through_the_new_coordinator_after_a_kill(txn_cluster, topic_name):
    create_topic(txn_cluster, topic_name)
    transactional_id = f"tx-{uuid.uuid4()}"
    producer = Producer(
        {
            "bootstrap.servers": txn_cluster.bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 60000,
        }
    )
    producer.init_transactions(60)
    txn_cluster.wait_full_isr(TXN_TOPIC, TXN_PARTITIONS)

    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic_name, f"before-{i}".encode(), partition=0)
    assert producer.flush(30) == 0

    coordinator = txn_cluster.leader_of(TXN_TOPIC, partition_for(transactional_id, TXN_PARTITIONS))
    txn_cluster.brokers[coordinator].kill()

    producer.commit_transaction(90)

    producer.begin_transaction()
    producer.produce(topic_name, b"aborted", partition=0)
    assert producer.flush(30) == 0
    producer.abort_transaction(60)

    producer.begin_transaction()
    producer.produce(topic_name, b"after", partition=0)
    producer.commit_transaction(60)

    values = read_committed(txn_cluster.bootstrap, topic_name, 6)
    assert values == [f"before-{i}".encode() for i in range(5)] + [b"after"]
