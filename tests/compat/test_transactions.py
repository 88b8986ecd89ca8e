"""Kafka transactions (KIP-98) end to end with clients nobody here wrote: confluent-kafka
(librdkafka) and kafka-python transactional producers against one broker; read_committed
consumers see exactly the committed records; zombies are fenced; the coordinator aborts a
transaction past its timeout."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import new_broker

TIMEOUT = 30


@pytest.fixture(scope="module")
def txn_broker(zookeeper, tmp_path_factory):
    """One broker: __transaction_state and __consumer_offsets of one replica (so min ISR 1)
    and few partitions, so they are created quickly."""
    process = new_broker(
        zookeeper,
        tmp_path_factory,
        num_partitions="2",
        group_initial_rebalance_delay_ms="0",
        offsets_topic_num_partitions="3",
        offsets_topic_replication_factor="1",
        transaction_state_log_num_partitions="3",
        transaction_state_log_replication_factor="1",
        transaction_state_log_min_isr="1",
        transaction_abort_timed_out_transaction_cleanup_interval_ms="500",
    ).start()
    yield process
    process.kill()


def create_topics(bootstrap: str, *names: str, partitions: int = 2) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(n, partitions, 1) for n in names])
    for future in futures.values():
        future.result(TIMEOUT)


def transactional_producer(bootstrap: str, transactional_id: str, **extra) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "linger.ms": 5,
            **extra,
        }
    )
    producer.init_transactions(TIMEOUT)
    return producer


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[tuple]:
    """Every record of the topic (partition, offset, value), up to its end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    tps = [TopicPartition(topic, p, 0) for p in range(partitions)]
    consumer.assign(tps)
    ends = {}
    for tp in tps:
        _, high = consumer.get_watermark_offsets(tp, timeout=TIMEOUT)
        ends[tp.partition] = high
    out = []
    positions = dict.fromkeys(ends, 0)
    idle = 0
    while idle < 10 and any(positions[p] < ends[p] for p in ends):
        message = consumer.poll(0.5)
        if message is None:
            idle += 1
            continue
        if message.error():
            if message.error().code() == KafkaError._PARTITION_EOF:
                continue
            raise KafkaException(message.error())
        out.append((message.partition(), message.offset(), message.value()))
        positions[message.partition()] = message.offset() + 1
    consumer.close()
    return sorted(out)


def test_confluent_commit_and_abort_over_topics_and_partitions(txn_broker, topic_name):
    bootstrap = txn_broker.bootstrap
    other = f"{topic_name}-b"
    create_topics(bootstrap, topic_name, other)
    producer = transactional_producer(bootstrap, f"tx-{uuid.uuid4()}")

    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic_name, f"c{i}".encode(), partition=i % 2)
        producer.produce(other, f"c{i}".encode(), partition=i % 2)
    producer.commit_transaction(TIMEOUT)

    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic_name, f"a{i}".encode(), partition=i % 2)
        producer.produce(other, f"a{i}".encode(), partition=i % 2)
    producer.flush(TIMEOUT)
    producer.abort_transaction(TIMEOUT)

    producer.begin_transaction()
    producer.produce(topic_name, b"last", partition=0)
    producer.commit_transaction(TIMEOUT)

    committed = read_all(bootstrap, topic_name, 2, "read_committed")
    values = [v for _, _, v in committed]
    assert sorted(values) == sorted([f"c{i}".encode() for i in range(10)] + [b"last"])
    # in order within each partition
    p0 = [v for p, _, v in committed if p == 0]
    assert p0 == [b"c0", b"c2", b"c4", b"c6", b"c8", b"last"]
    assert sorted(v for _, _, v in read_all(bootstrap, other, 2, "read_committed")) == sorted(
        f"c{i}".encode() for i in range(10)
    )
    # read_uncommitted sees the aborted data too, and never a marker
    uncommitted = [v for _, _, v in read_all(bootstrap, topic_name, 2, "read_uncommitted")]
    assert sorted(uncommitted) == sorted(
        [f"c{i}".encode() for i in range(10)] + [f"a{i}".encode() for i in range(10)] + [b"last"]
    )


def test_confluent_send_offsets_commits_with_the_transaction(txn_broker, topic_name):
    """Consume-transform-produce: the group's offsets commit with the output, and an aborted
    transaction leaves neither the output nor the offsets."""
    bootstrap = txn_broker.bootstrap
    output = f"{topic_name}-out"
    create_topics(bootstrap, topic_name, output)
    source = Producer({"bootstrap.servers": bootstrap})
    for i in range(6):
        source.produce(topic_name, f"in{i}".encode(), partition=0)
    source.flush(TIMEOUT)

    group = f"g-{uuid.uuid4()}"
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition(topic_name, 0, 0)])
    producer = transactional_producer(bootstrap, f"tx-{uuid.uuid4()}")

    def copy(count: int, commit: bool) -> None:
        producer.begin_transaction()
        taken = 0
        while taken < count:
            message = consumer.poll(1)
            if message is None or message.error():
                continue
            producer.produce(output, message.value().upper(), partition=0)
            taken += 1
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()),
            consumer.consumer_group_metadata(),
            TIMEOUT,
        )
        if commit:
            producer.commit_transaction(TIMEOUT)
        else:
            producer.abort_transaction(TIMEOUT)

    copy(3, commit=True)
    [committed] = consumer.committed([TopicPartition(topic_name, 0)], TIMEOUT)
    assert committed.offset == 3
    copy(3, commit=False)
    [committed] = consumer.committed([TopicPartition(topic_name, 0)], TIMEOUT)
    assert committed.offset == 3  # the aborted transaction's offsets never became visible
    consumer.close()

    values = [v for _, _, v in read_all(bootstrap, output, 2, "read_committed")]
    assert values == [b"IN0", b"IN1", b"IN2"]


def test_confluent_zombie_is_fenced(txn_broker, topic_name):
    bootstrap = txn_broker.bootstrap
    create_topics(bootstrap, topic_name)
    transactional_id = f"tx-{uuid.uuid4()}"
    zombie = transactional_producer(bootstrap, transactional_id)
    zombie.begin_transaction()
    zombie.produce(topic_name, b"zombie", partition=0)
    zombie.flush(TIMEOUT)

    # A new instance with the same id aborts the zombie's open transaction and fences it.
    successor = transactional_producer(bootstrap, transactional_id)
    with pytest.raises(KafkaException) as raised:
        zombie.produce(topic_name, b"zombie-2", partition=0)
        zombie.commit_transaction(TIMEOUT)
    error = raised.value.args[0]
    assert error.fatal() or error.code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    ), error

    successor.begin_transaction()
    successor.produce(topic_name, b"successor", partition=0)
    successor.commit_transaction(TIMEOUT)
    values = [v for _, _, v in read_all(bootstrap, topic_name, 2, "read_committed")]
    assert values == [b"successor"]


def test_kafka_python_transactions(txn_broker, topic_name):
    from kafka import KafkaProducer
    from kafka.errors import ProducerFencedError

    bootstrap = txn_broker.bootstrap
    create_topics(bootstrap, topic_name)
    transactional_id = f"tx-{uuid.uuid4()}"
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=transactional_id, max_block_ms=30000
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(4):
            producer.send(topic_name, f"k{i}".encode(), partition=i % 2)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic_name, b"dropped", partition=0)
        producer.flush()
        producer.abort_transaction()

        # another instance fences this one
        successor = KafkaProducer(
            bootstrap_servers=bootstrap, transactional_id=transactional_id, max_block_ms=30000
        )
        try:
            successor.init_transactions()
            with pytest.raises(ProducerFencedError):  # at the send or at the commit
                producer.begin_transaction()
                producer.send(topic_name, b"zombie", partition=0)
                producer.commit_transaction()
        finally:
            successor.close(timeout=5)
    finally:
        producer.close(timeout=5)
    values = sorted(v for _, _, v in read_all(bootstrap, topic_name, 2, "read_committed"))
    assert values == [b"k0", b"k1", b"k2", b"k3"]


def test_a_transaction_past_its_timeout_is_aborted(txn_broker, topic_name):
    bootstrap = txn_broker.bootstrap
    create_topics(bootstrap, topic_name)
    producer = transactional_producer(
        bootstrap, f"tx-{uuid.uuid4()}", **{"transaction.timeout.ms": 1000}
    )
    producer.begin_transaction()
    producer.produce(topic_name, b"late", partition=0)
    producer.flush(TIMEOUT)
    # the coordinator aborts it (cleanup every 500 ms here); then the LSO moves past it
    deadline = time.monotonic() + TIMEOUT
    while True:
        uncommitted = read_all(bootstrap, topic_name, 2, "read_uncommitted")
        committed = read_all(bootstrap, topic_name, 2, "read_committed")
        if uncommitted and not committed:
            consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": f"lso-{uuid.uuid4()}",
                    "isolation.level": "read_committed",
                }
            )
            _, stable = consumer.get_watermark_offsets(
                TopicPartition(topic_name, 0), timeout=TIMEOUT
            )
            consumer.close()
            if stable == 2:  # the data and the ABORT marker
                break
        assert time.monotonic() < deadline, "the timed-out transaction was not aborted"
        time.sleep(0.3)
    with pytest.raises(KafkaException):
        producer.commit_transaction(TIMEOUT)


async def test_aiokafka_transactions_with_offsets(txn_broker, topic_name):
    from aiokafka import AIOKafkaProducer
    from aiokafka.structs import TopicPartition as AioTopicPartition

    bootstrap = txn_broker.bootstrap
    create_topics(bootstrap, topic_name)
    group = f"g-{uuid.uuid4()}"
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"tx-{uuid.uuid4()}")
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait(topic_name, b"one", partition=0)
            await producer.send_offsets_to_transaction(
                {AioTopicPartition(topic_name, 1): 42}, group
            )
        await producer.begin_transaction()
        await producer.send_and_wait(topic_name, b"two", partition=0)
        await producer.abort_transaction()
    finally:
        await producer.stop()
    assert [v for _, _, v in read_all(bootstrap, topic_name, 2, "read_committed")] == [b"one"]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    deadline = time.monotonic() + TIMEOUT
    while True:  # the marker on the group's partition follows the EndTxn answer
        [committed] = consumer.committed([TopicPartition(topic_name, 1)], TIMEOUT)
        if committed.offset == 42 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    consumer.close()
    assert committed.offset == 42


def test_brokerd_transactions_list_and_describe(txn_broker, topic_name):
    """`brokerd transactions` (kafka-transactions.sh's list and describe) shows an open
    transaction's state, producer and partitions from its coordinator."""
    import argparse
    import io

    from brokerd.tools import transactions as tool

    bootstrap = txn_broker.bootstrap
    create_topics(bootstrap, topic_name)
    transactional_id = f"tx-{uuid.uuid4()}"
    producer = transactional_producer(bootstrap, transactional_id)
    producer.begin_transaction()
    producer.produce(topic_name, b"open", partition=1)
    producer.flush(TIMEOUT)

    def run(*argv: str) -> list[list[str]]:
        parser = argparse.ArgumentParser()
        tool.add_arguments(parser)
        out = io.StringIO()
        assert tool.run(parser.parse_args(["--bootstrap-server", bootstrap, *argv]), out) == 0
        return [line.split("\t") for line in out.getvalue().splitlines()]

    listed = run("list")
    assert listed[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert [transactional_id, "1"] == [r[:2] for r in listed if r[0] == transactional_id][0]
    [header, row] = run("describe", "--transactional-id", transactional_id)
    described = dict(zip(header, row, strict=True))
    assert described["TransactionState"] == "Ongoing"
    assert described["TopicPartitions"] == f"{topic_name}-1"
    assert int(described["TransactionDurationMs"]) >= 0
    producer.commit_transaction(TIMEOUT)
    # An id with no transaction open (Empty after InitProducerId): Kafka answers its start
    # time as -1, which the tool shows as None (it failed to read the answer before).
    idle_id = f"tx-{uuid.uuid4()}"
    transactional_producer(bootstrap, idle_id)
    [header, row] = run("describe", "--transactional-id", idle_id)
    described = dict(zip(header, row, strict=True))
    assert described["TransactionState"] == "Empty"
    assert described["CurrentTransactionStartTimeMs"] == "None"
    assert described["TopicPartitions"] == ""


def _open_ghost_transaction(bootstrap: str, topic: str, partition: int) -> int:
    """Transactional records no coordinator knows of (a producer id from a plain
    InitProducerId, the transactional bit set): the partition's LSO is stuck at them until an
    operator aborts them. Returns their offset."""
    import datetime

    from brokerd.client.requests import Nested
    from brokerd.client.sync import SyncClient
    from brokerd.records.batch import SimpleRecord, build_batch

    client = SyncClient(bootstrap)

    async def ghost() -> int:
        cluster = client.cluster
        init = await cluster.call_any(
            22,
            {
                "transactional_id": None,
                "transaction_timeout": datetime.timedelta(minutes=1),
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        records = build_batch(
            [SimpleRecord(b"hanging", None, (), int(time.time() * 1000))],
            producer_id=int(init.producer_id),
            producer_epoch=int(init.producer_epoch),
            base_sequence=0,
            is_transactional=True,
        )
        connection = await cluster.connection(await cluster.leader_for(topic, partition))
        response = await connection.call(
            0,
            {
                "transactional_id": "ghost",
                "acks": -1,
                "timeout": datetime.timedelta(seconds=TIMEOUT),
                "topic_data": [
                    Nested(
                        "TopicProduceData",
                        name=topic,
                        partition_data=[
                            Nested("PartitionProduceData", index=partition, records=bytes(records))
                        ],
                    )
                ],
            },
        )
        part = response.responses[0].partition_responses[0]
        assert part.error_code == 0
        return int(part.base_offset)

    try:
        return client.run(ghost())
    finally:
        client.close()


def test_brokerd_transactions_find_hanging_and_abort(txn_broker, topic_name):
    """kafka-transactions.sh find-hanging and abort: a transaction left open on a partition
    with no coordinator knowing it holds the LSO back; find-hanging reports it (and not a
    live producer's open transaction); abort --start-offset writes its ABORT marker through
    the leader, refused off the brokers' listener (WriteTxnMarkers is inter-broker), after
    which read_committed consumers read past it."""
    import argparse
    import io

    from brokerd.tools import transactions as tool

    bootstrap = txn_broker.bootstrap
    create_topics(bootstrap, topic_name)
    start = _open_ghost_transaction(bootstrap, topic_name, 0)
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic_name, b"after", partition=0)
    assert plain.flush(TIMEOUT) == 0
    live = transactional_producer(bootstrap, f"tx-{uuid.uuid4()}")
    live.begin_transaction()
    live.produce(topic_name, b"live", partition=1)
    live.flush(TIMEOUT)
    assert read_all(bootstrap, topic_name, 2, "read_committed") == []

    def run(server: str, *argv: str) -> tuple[int, list[list[str]], str]:
        parser = argparse.ArgumentParser()
        tool.add_arguments(parser)
        out, err = io.StringIO(), io.StringIO()
        code = tool.run(parser.parse_args(["--bootstrap-server", server, *argv]), out, err)
        return code, [line.split("\t") for line in out.getvalue().splitlines()], err.getvalue()

    find = ("find-hanging", "--topic", topic_name, "--max-transaction-timeout", "0")
    deadline = time.monotonic() + TIMEOUT
    while True:  # open for longer than 0 minutes: as soon as a millisecond has passed
        code, rows, _ = run(bootstrap, *find)
        assert code == 0 and rows[0] == list(tool.HANGING_HEADER)
        if len(rows) > 1 or time.monotonic() > deadline:
            break
    [hanging] = [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]
    assert (hanging["Topic"], hanging["Partition"], hanging["StartOffset"]) == (
        topic_name,
        "0",
        str(start),
    )
    _, by_broker, _ = run(
        bootstrap, "find-hanging", "--broker-id", "1", "--max-transaction-timeout", "0"
    )
    assert [r[:3] for r in by_broker[1:]] == [[topic_name, "0", hanging["ProducerId"]]]
    # bad usage and a wrong offset are refused in words
    assert run(bootstrap, "abort", "--topic", topic_name)[0] == 1
    code, _, err = run(
        txn_broker.internal_bootstrap,
        *("abort", "--topic", topic_name, "--partition", "0", "--start-offset", str(start + 1)),
    )
    assert code == 1 and "Could not find any open transactions" in err

    abort = ("abort", "--topic", topic_name, "--partition", "0", "--start-offset", str(start))
    code, _, err = run(bootstrap, *abort)  # a client listener: not a broker's request
    assert code == 1 and "CLUSTER_AUTHORIZATION_FAILED" in err
    assert run(txn_broker.internal_bootstrap, *abort)[0] == 0

    assert read_all(bootstrap, topic_name, 2, "read_committed") == [(0, start + 1, b"after")]
    assert run(bootstrap, *find)[1][1:] == []
    live.commit_transaction(TIMEOUT)
    committed = read_all(bootstrap, topic_name, 2, "read_committed")
    assert [value for _, _, value in committed] == [b"after", b"live"]


def test_brokerd_transactions_force_terminate(txn_broker, topic_name):
    """kafka-transactions.sh force-terminate (Admin.fenceProducers): a live producer's open
    transaction is aborted under a new epoch, the producer is fenced at its commit, its
    records stay invisible to read_committed readers, and a new producer of the id works."""
    import argparse
    import io

    from brokerd.tools import transactions as tool

    bootstrap = txn_broker.bootstrap
    create_topics(bootstrap, topic_name)
    transactional_id = f"tx-{uuid.uuid4()}"
    producer = transactional_producer(bootstrap, transactional_id)
    producer.begin_transaction()
    producer.produce(topic_name, b"stuck", partition=0)
    producer.flush(TIMEOUT)

    def run(*argv: str) -> tuple[int, list[list[str]], str]:
        parser = argparse.ArgumentParser()
        tool.add_arguments(parser)
        out, err = io.StringIO(), io.StringIO()
        code = tool.run(parser.parse_args(["--bootstrap-server", bootstrap, *argv]), out, err)
        return code, [line.split("\t") for line in out.getvalue().splitlines()], err.getvalue()

    code, _, err = run("force-terminate")
    assert code == 1 and "needs --transactional-id" in err
    [header, row] = run("describe", "--transactional-id", transactional_id)[1]
    before = dict(zip(header, row, strict=True))
    assert before["TransactionState"] == "Ongoing"
    assert run("force-terminate", "--transactionalId", transactional_id)[0] == 0
    [header, row] = run("describe", "--transactional-id", transactional_id)[1]
    after = dict(zip(header, row, strict=True))
    assert after["TransactionState"] in ("PrepareAbort", "CompleteAbort", "Empty")
    assert after["ProducerId"] == before["ProducerId"]
    assert int(after["ProducerEpoch"]) > int(before["ProducerEpoch"])
    with pytest.raises(KafkaException) as fenced:
        producer.commit_transaction(TIMEOUT)
    assert fenced.value.args[0].code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    )
    successor = transactional_producer(bootstrap, transactional_id)
    successor.begin_transaction()
    successor.produce(topic_name, b"after", partition=0)
    successor.commit_transaction(TIMEOUT)
    committed = read_all(bootstrap, topic_name, 2, "read_committed")
    assert [value for _, _, value in committed] == [b"after"]
    uncommitted = read_all(bootstrap, topic_name, 2, "read_uncommitted")
    assert [value for _, _, value in uncommitted] == [b"stuck", b"after"]
    # An id nobody used: InitProducerId creates it, as Kafka's does.
    assert run("force-terminate", "--transactional-id", f"tx-{uuid.uuid4()}")[0] == 0
