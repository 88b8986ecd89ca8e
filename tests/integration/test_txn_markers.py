"""Transactions on the partition side over the wire (KIP-98): transactional batches, the
coordinator's WriteTxnMarkers (27) to the leader, the last stable offset, and consumers
nobody here wrote reading read_committed (only committed data, in order, no markers) and
read_uncommitted (all data, no markers). The coordinator itself is stood in for by raw
WriteTxnMarkers requests on the inter-broker listener, as a coordinator sends them."""

from __future__ import annotations

import asyncio
import datetime

import pytest
from confluent_kafka import Consumer, TopicPartition

from brokerd.protocol.errors import ErrorCode
from brokerd.records.batch import SimpleRecord, build_batch
from tests.integration.test_admin_api import admin_for
from tests.integration.wire import WireClient, nested, request
from tests.integration.wire_calls import SECOND, create

pytestmark = pytest.mark.timeout(120)

READ_COMMITTED = 1


def init_producer_id(client) -> int:
    response = client.call(
        request(
            22,
            4,
            transactional_id=None,
            transaction_timeout=datetime.timedelta(seconds=60),
            producer_id=-1,
            producer_epoch=-1,
        )
    )
    assert response.error_code == ErrorCode.none
    return response.producer_id


def txn_produce(
    client, topic, pid, sequence, *values, epoch=0, transactional=True, transactional_id=""
):
    records = build_batch(
        [SimpleRecord(v, b"k") for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=transactional,
    )
    data = nested(0, 9, "PartitionProduceData", index=0, records=bytes(records))
    body = request(
        0,
        9,
        transactional_id=(f"txn-{pid}" if transactional else None)
        if transactional_id == ""
        else transactional_id,
        acks=-1,
        timeout=SECOND * 10,
        topic_data=(nested(0, 9, "TopicProduceData", name=topic, partition_data=(data,)),),
    )
    answer = client.call(body).responses[0].partition_responses[0]
    return answer.error_code, answer.base_offset


def write_markers(client, markers, version=1):
    """markers: [(producer id, epoch, commit, coordinator epoch, [(topic, [partitions])])];
    the error per (producer id, topic, partition)."""
    body = request(
        27,
        version,
        markers=tuple(
            nested(
                27,
                version,
                "WritableTxnMarker",
                producer_id=pid,
                producer_epoch=epoch,
                transaction_result=commit,
                coordinator_epoch=coordinator_epoch,
                topics=tuple(
                    nested(
                        27,
                        version,
                        "WritableTxnMarkerTopic",
                        name=topic,
                        partition_indexes=tuple(partitions),
                    )
                    for topic, partitions in topics
                ),
            )
            for pid, epoch, commit, coordinator_epoch, topics in markers
        ),
    )
    response = client.call(body)
    return {
        (int(m.producer_id), str(t.name), int(p.partition_index)): p.error_code
        for m in response.markers
        for t in m.topics
        for p in t.partitions
    }


def fetch(client, topic, offset, isolation, version=12):
    partition = nested(
        1,
        version,
        "FetchPartition",
        partition=0,
        fetch_offset=offset,
        partition_max_bytes=1 << 20,
        current_leader_epoch=-1,
        log_start_offset=-1,
        last_fetched_epoch=-1,
    )
    body = request(
        1,
        version,
        replica_id=-1,
        max_wait=datetime.timedelta(0),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=isolation,
        session_id=0,
        session_epoch=-1,
        topics=(nested(1, version, "FetchTopic", topic=topic, partitions=(partition,)),),
        forgotten_topics_data=(),
        rack_id="",
    )
    return client.call(body).responses[0].partitions[0]


def latest_offset(client, topic, isolation):
    listed = nested(
        2,
        7,
        "ListOffsetsTopic",
        name=topic,
        partitions=(
            nested(
                2,
                7,
                "ListOffsetsPartition",
                partition_index=0,
                current_leader_epoch=-1,
                timestamp=-1,
            ),
        ),
    )
    body = request(2, 7, replica_id=-1, isolation_level=isolation, topics=(listed,))
    return client.call(body).topics[0].partitions[0].offset


def describe_producers(client, topic, partitions=(0,)):
    body = request(
        61,
        0,
        topics=(nested(61, 0, "TopicRequest", name=topic, partition_indexes=tuple(partitions)),),
    )
    return {
        int(p.partition_index): (
            p.error_code,
            {
                int(s.producer_id): (
                    s.producer_epoch,
                    s.last_sequence,
                    s.coordinator_epoch,
                    s.current_txn_start_offset,
                )
                for s in p.active_producers
            },
        )
        for p in client.call(body).topics[0].partitions
    }


def consume_all(bootstrap, topic, isolation, expected):
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}-{isolation}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values = []
    try:
        for _ in range(60):
            message = consumer.poll(1)
            if message is None:
                continue
            if message.error():
                if len(values) >= expected:
                    break
                continue
            values.append(message.value())
    finally:
        consumer.close()
    return values


def test_markers_lso_and_read_committed_consumers(broker, topic_name):
    create(broker, topic_name)
    with WireClient(broker.bootstrap) as client, WireClient(broker.internal_bootstrap) as peer:
        committer, aborter = init_producer_id(client), init_producer_id(client)
        # Transactional records need the request's transactional id, as in Kafka.
        anonymous = txn_produce(client, topic_name, committer, 0, b"c1", transactional_id=None)
        assert anonymous == (ErrorCode.transactional_id_authorization_failed, -1)
        assert txn_produce(client, topic_name, committer, 0, b"c1", b"c2") == (0, 0)
        assert txn_produce(client, topic_name, aborter, 0, b"a1") == (0, 2)
        assert txn_produce(client, topic_name, committer, 2, b"c3") == (0, 3)
        assert txn_produce(client, topic_name, aborter, 1, b"a2", b"a3") == (0, 4)
        # A non-transactional batch of a producer inside its transaction: INVALID_TXN_STATE.
        refused = txn_produce(client, topic_name, committer, 3, b"x", transactional=False)
        assert refused[0] == ErrorCode.invalid_txn_state

        # DescribeProducers shows both open transactions (KIP-664).
        assert describe_producers(client, topic_name, (0, 9)) == {
            0: (0, {committer: (0, 2, -1, 0), aborter: (0, 2, -1, 2)}),
            9: (ErrorCode.unknown_topic_or_partition, {}),
        }
        # Both transactions open: read_committed stops at the first one's start.
        assert fetch(client, topic_name, 0, READ_COMMITTED).last_stable_offset == 0
        assert latest_offset(client, topic_name, READ_COMMITTED) == 0
        assert latest_offset(client, topic_name, 0) == 6
        admin = admin_for(broker)
        p0 = admin.ok("GET", f"/v1/partitions/{topic_name}/0")
        assert (p0["last_stable_offset"], p0["high_watermark"]) == (0, 6)
        metrics = admin.get("/metrics", token=None)[1]
        assert (
            f'brokerd_partition_last_stable_offset{{partition="0",topic="{topic_name}"}} 0.0'
            in metrics
        )

        # Only brokers may write markers: a client gets CLUSTER_AUTHORIZATION_FAILED.
        intruder = write_markers(client, [(committer, 0, True, 0, [(topic_name, [0])])])
        assert intruder == {(committer, topic_name, 0): ErrorCode.cluster_authorization_failed}
        assert fetch(client, topic_name, 0, 0).high_watermark == 6  # nothing written

        errors = write_markers(
            peer,
            [
                (committer, 0, True, 3, [(topic_name, [0])]),
                (aborter, 0, False, 3, [(topic_name, [0, 7]), ("no-such-topic", [0])]),
            ],
        )
        assert errors == {
            (committer, topic_name, 0): ErrorCode.none,
            (aborter, topic_name, 0): ErrorCode.none,
            (aborter, topic_name, 7): ErrorCode.unknown_topic_or_partition,
            (aborter, "no-such-topic", 0): ErrorCode.unknown_topic_or_partition,
        }
        # A zombie coordinator (older epoch) and an older producer epoch are fenced.
        fenced = write_markers(peer, [(committer, 0, True, 2, [(topic_name, [0])])], version=2)
        assert fenced == {(committer, topic_name, 0): ErrorCode.transaction_coordinator_fenced}
        assert txn_produce(client, topic_name, committer, 0, b"c4", epoch=1) == (0, 8)
        stale = write_markers(peer, [(committer, 0, False, 3, [(topic_name, [0])])])
        assert stale == {(committer, topic_name, 0): ErrorCode.invalid_producer_epoch}
        assert write_markers(peer, [(committer, 1, True, 3, [(topic_name, [0])])]) == {
            (committer, topic_name, 0): ErrorCode.none
        }
        assert txn_produce(client, topic_name, aborter, 3, b"plain", transactional=False) == (
            0,
            10,
        )

        assert describe_producers(client, topic_name) == {
            0: (0, {committer: (1, 0, 3, -1), aborter: (0, 3, 3, -1)})
        }
        committed = fetch(client, topic_name, 0, READ_COMMITTED)
        assert committed.high_watermark == committed.last_stable_offset == 11
        assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [
            (aborter, 2)
        ]
        for version in (4, 11):  # the non-flexible encodings
            older = fetch(client, topic_name, 0, READ_COMMITTED, version=version)
            assert older.last_stable_offset == 11
            assert [(t.producer_id, t.first_offset) for t in older.aborted_transactions] == [
                (aborter, 2)
            ]
        assert fetch(client, topic_name, 0, 0).aborted_transactions is None
        assert latest_offset(client, topic_name, READ_COMMITTED) == 11

    assert consume_all(broker.bootstrap, topic_name, "read_committed", 5) == [
        b"c1",
        b"c2",
        b"c3",
        b"c4",
        b"plain",
    ]
    assert consume_all(broker.bootstrap, topic_name, "read_uncommitted", 7) == [
        b"c1",
        b"c2",
        b"a1",
        b"c3",
        b"a2",
        b"a3",
        b"c4",
        b"plain",
    ]


async def _aiokafka_read(bootstrap, topic, isolation):
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as AioTopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level=isolation,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        partition = AioTopicPartition(topic, 0)
        consumer.assign([partition])
        await consumer.seek_to_beginning(partition)
        values = []
        for _ in range(5):
            batches = await consumer.getmany(timeout_ms=1000)
            values.extend(m.value for messages in batches.values() for m in messages)
        return values
    finally:
        await consumer.stop()


def test_kafka_python_and_aiokafka_read_committed_skip_aborted_data(broker, topic_name):
    kafka = pytest.importorskip("kafka")
    create(broker, topic_name)
    with WireClient(broker.bootstrap) as client, WireClient(broker.internal_bootstrap) as peer:
        pid = init_producer_id(client)
        other = init_producer_id(client)
        assert txn_produce(client, topic_name, pid, 0, b"gone1", b"gone2")[0] == 0
        assert txn_produce(client, topic_name, other, 0, b"kept1")[0] == 0
        assert write_markers(peer, [(pid, 0, False, 0, [(topic_name, [0])])]) == {
            (pid, topic_name, 0): 0
        }
        assert txn_produce(client, topic_name, other, 1, b"kept2")[0] == 0
        # `other` is still open: read_committed sees nothing past its first offset (2).
        assert latest_offset(client, topic_name, READ_COMMITTED) == 2
        assert write_markers(peer, [(other, 0, True, 0, [(topic_name, [0])])]) == {
            (other, topic_name, 0): 0
        }

    def read(isolation):
        consumer = kafka.KafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            isolation_level=isolation,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            consumer_timeout_ms=3000,
        )
        consumer.assign([kafka.TopicPartition(topic_name, 0)])
        consumer.seek_to_beginning()
        try:
            return [m.value for m in consumer]
        finally:
            consumer.close()

    assert read("read_committed") == [b"kept1", b"kept2"]
    assert read("read_uncommitted") == [b"gone1", b"gone2", b"kept1", b"kept2"]
    committed = asyncio.run(_aiokafka_read(broker.bootstrap, topic_name, "read_committed"))
    assert committed == [b"kept1", b"kept2"]
    everything = asyncio.run(_aiokafka_read(broker.bootstrap, topic_name, "read_uncommitted"))
    assert everything == [b"gone1", b"gone2", b"kept1", b"kept2"]
