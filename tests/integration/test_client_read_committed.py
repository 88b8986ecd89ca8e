"""brokerd.client's Consumer with isolation_level=1 (read_committed) against transactions a
real client wrote (confluent-kafka): only committed records, in order, up to the last stable
offset, with aborted transactions of one producer dropped while another producer's
interleaved committed transaction is kept; read_uncommitted sees all data and no markers.
Also the transaction admin calls (ListTransactions, DescribeTransactions, DescribeProducers)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import NewTopic

from brokerd.client import AdminClient, Cluster, Consumer, KafkaTimeoutError
from brokerd.client.errors import ErrorCode, KafkaResponseError
from brokerd.client.transactions import TransactionDescription
from tests.conftest import new_broker

TIMEOUT = 30


@pytest.fixture(scope="module")
def txn_broker(zookeeper, tmp_path_factory):
    process = new_broker(
        zookeeper,
        tmp_path_factory,
        num_partitions="1",
        transaction_state_log_num_partitions="3",
        transaction_state_log_replication_factor="1",
        transaction_state_log_min_isr="1",
    ).start()
    yield process
    process.kill()


def transactional(bootstrap: str, tid: str) -> ConfluentProducer:
    # A slow reader (a Spark job on a loaded machine) must not outlast the open transaction.
    producer = ConfluentProducer(
        {"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 600000}
    )
    producer.init_transactions(TIMEOUT)
    return producer


def send(producer: ConfluentProducer, topic: str, value: bytes) -> None:
    producer.produce(topic, value, partition=0)
    producer.flush(TIMEOUT)  # in the log now: the order below is the log's order


def fill(bootstrap: str, topic: str) -> tuple[ConfluentProducer, ConfluentProducer]:
    """One partition: c0 c1 [commit] | a0 (p1), x0 (p2), a1 (p1), [commit p2], [abort p1] |
    c2 [commit] | o0 left open. Offsets: c0 0, c1 1, marker 2, a0 3, x0 4, a1 5, markers 6
    and 7, c2 8, marker 9, o0 10; HW 11, LSO 10."""
    admin = ConfluentAdmin({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT)
    p1 = transactional(bootstrap, f"p1-{topic}")
    p2 = transactional(bootstrap, f"p2-{topic}")
    p1.begin_transaction()
    send(p1, topic, b"c0")
    send(p1, topic, b"c1")
    p1.commit_transaction(TIMEOUT)
    p1.begin_transaction()
    p2.begin_transaction()
    send(p1, topic, b"a0")
    send(p2, topic, b"x0")
    send(p1, topic, b"a1")
    p2.commit_transaction(TIMEOUT)
    p1.abort_transaction(TIMEOUT)
    p1.begin_transaction()
    send(p1, topic, b"c2")
    p1.commit_transaction(TIMEOUT)
    p1.begin_transaction()
    send(p1, topic, b"o0")
    return p1, p2


async def test_read_committed_reads_only_committed_records_up_to_the_lso(txn_broker):
    topic = f"rc-{uuid.uuid4().hex[:8]}"
    p1, _p2 = fill(txn_broker.bootstrap, topic)
    async with Cluster(txn_broker.bootstrap) as cluster:
        committed = Consumer(cluster, isolation_level=1)
        records = await committed.fetch_range(topic, 0, 0, 10)
        assert [(r.offset, r.value) for r in records] == [
            (0, b"c0"),
            (1, b"c1"),
            (4, b"x0"),
            (8, b"c2"),
        ]
        # Past the LSO nothing is read: an open transaction's record waits for its outcome.
        with pytest.raises(KafkaTimeoutError, match="last stable offset is 10"):
            await committed.fetch_range(topic, 0, 0, 11, timeout=1.5)
        everything = await Consumer(cluster).fetch_range(topic, 0, 0, 11)
        assert [r.value for r in everything] == [b"c0", b"c1", b"a0", b"x0", b"a1", b"c2", b"o0"]

        admin = AdminClient(cluster)
        stable = await admin.list_offsets({(topic, 0): "latest"}, isolation_level=1)
        high = await admin.list_offsets({(topic, 0): "latest"})
        assert (stable[(topic, 0)].offset, high[(topic, 0)].offset) == (10, 11)

        # The admin side: p1's open transaction, from its coordinator and the leader.
        listed = {t.transactional_id: t for t in await admin.list_transactions()}
        assert listed[f"p1-{topic}"].state == "Ongoing"
        ongoing = await admin.list_transactions(states=["Ongoing"])
        assert f"p2-{topic}" not in [t.transactional_id for t in ongoing]
        described = await admin.describe_transactions([f"p1-{topic}", f"p2-{topic}", "nobody"])
        p1_state = described[f"p1-{topic}"]
        assert isinstance(p1_state, TransactionDescription)
        assert p1_state.partitions == ((topic, 0),) and p1_state.start_time_ms is not None
        assert described[f"p2-{topic}"].state == "CompleteCommit"
        missing = described["nobody"]
        assert isinstance(missing, KafkaResponseError)
        assert missing.error_code == ErrorCode.transactional_id_not_found
        producers = (await admin.describe_producers([(topic, 0)]))[(topic, 0)]
        open_ones = [s for s in producers if s.current_txn_start_offset is not None]
        assert [(s.producer_id, s.current_txn_start_offset) for s in open_ones] == [
            (p1_state.producer_id, 10)
        ]

        # Aborted: o0 never shows, its marker is stepped over, the LSO reaches the HW.
        p1.abort_transaction(TIMEOUT)
        records = await committed.fetch_range(topic, 0, 0, 12)
        assert [r.value for r in records] == [b"c0", b"c1", b"x0", b"c2"]
