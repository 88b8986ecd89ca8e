"""Idempotent producers at the protocol level: a retried batch gets its original offset, a
sequence gap and a fenced epoch get their errors, and the state survives restarts."""

import datetime

import pytest

from brokerd.protocol.errors import ErrorCode
from brokerd.records.batch import SimpleRecord, build_batch
from tests.integration.wire import WireClient, request
from tests.integration.wire_calls import create, fetch, produce


def init_producer_id(client) -> tuple[int, int]:
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
    return response.producer_id, response.producer_epoch


def idempotent_batch(producer_id, epoch, sequence, *values):
    return build_batch(
        [SimpleRecord(v, b"k") for v in values],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
    )


def answer(result):
    return result.error_code, result.base_offset


def test_retried_batch_gets_its_original_offset(broker, topic_name):
    create(broker, topic_name)
    with WireClient(broker.bootstrap) as client:
        pid, epoch = init_producer_id(client)
        first = idempotent_batch(pid, epoch, 0, b"a", b"b", b"c")
        assert answer(produce(client, topic_name, first)) == (ErrorCode.none, 0)
        assert answer(produce(client, topic_name, first)) == (ErrorCode.none, 0)
        batches = [idempotent_batch(pid, epoch, 3 + i, b"v%d" % i) for i in range(5)]
        for i, batch in enumerate(batches):
            assert answer(produce(client, topic_name, batch)) == (ErrorCode.none, 3 + i)
        # Any of the last five batches is a duplicate; the one before them is too old.
        assert answer(produce(client, topic_name, batches[0])) == (ErrorCode.none, 3)
        assert (
            produce(client, topic_name, first).error_code == ErrorCode.out_of_order_sequence_number
        )
        # Nothing was written twice.
        records = fetch(client, topic_name, 0).responses[0].partitions[0]
        assert records.high_watermark == 8


def test_sequence_gap_and_fenced_epoch(broker, topic_name):
    create(broker, topic_name)
    with WireClient(broker.bootstrap) as client:
        pid, epoch = init_producer_id(client)
        assert produce(client, topic_name, idempotent_batch(pid, epoch, 0, b"a")).error_code == 0
        gap = produce(client, topic_name, idempotent_batch(pid, epoch, 2, b"c"))
        assert gap.error_code == ErrorCode.out_of_order_sequence_number
        assert answer(produce(client, topic_name, idempotent_batch(pid, epoch, 1, b"b"))) == (
            ErrorCode.none,
            1,
        )
        # A bumped epoch starts again at sequence 0; the old epoch is then fenced.
        bumped = produce(client, topic_name, idempotent_batch(pid, epoch + 1, 0, b"d"))
        assert answer(bumped) == (ErrorCode.none, 2)
        fenced = produce(client, topic_name, idempotent_batch(pid, epoch, 2, b"e"))
        assert fenced.error_code == ErrorCode.invalid_producer_epoch
        bad_start = produce(client, topic_name, idempotent_batch(pid, epoch + 2, 5, b"f"))
        assert bad_start.error_code == ErrorCode.out_of_order_sequence_number
        # A producer the partition has never seen must start at sequence 0.
        other, other_epoch = init_producer_id(client)
        unknown = produce(client, topic_name, idempotent_batch(other, other_epoch, 7, b"g"))
        assert unknown.error_code == ErrorCode.unknown_producer_id
        assert fetch(client, topic_name, 0).responses[0].partitions[0].high_watermark == 3


@pytest.mark.parametrize("stop", ["sigterm", "kill-9"])
def test_idempotent_state_survives_restart(make_broker, topic_name, stop):
    # Roll often so the state lives partly in snapshots and partly in the log's tail.
    process = make_broker(log_segment_bytes="2000").start()
    create(process, topic_name)
    with WireClient(process.bootstrap) as client:
        pid, epoch = init_producer_id(client)
        batches = [idempotent_batch(pid, epoch, i, b"x" * 300) for i in range(12)]
        for i, batch in enumerate(batches):
            assert answer(produce(client, topic_name, batch)) == (ErrorCode.none, i)
    if stop == "sigterm":
        assert process.terminate() == 0
    else:
        process.kill()
    process.start()
    with WireClient(process.bootstrap) as client:
        # The retry of the last acknowledged batch (its ack lost with the broker). As in
        # Kafka, a snapshot keeps only each producer's last batch, so that is the one a
        # restart is sure to deduplicate.
        assert answer(produce(client, topic_name, batches[11])) == (ErrorCode.none, 11)
        gap = produce(client, topic_name, idempotent_batch(pid, epoch, 13, b"late"))
        assert gap.error_code == ErrorCode.out_of_order_sequence_number
        following = produce(client, topic_name, idempotent_batch(pid, epoch, 12, b"next"))
        assert answer(following) == (ErrorCode.none, 12)
        assert fetch(client, topic_name, 0).responses[0].partitions[0].high_watermark == 13
