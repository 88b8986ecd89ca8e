"""Produce and Fetch handlers over a real replica manager: a LogManager in a temporary
directory and partitions led or followed as the controller's LeaderAndIsr makes them
(tests/unit/replication's set-up, over the session's ZooKeeper)."""

from brokerd.protocol.errors import ErrorCode
from brokerd.records.batch import iter_batches
from brokerd.server.handlers.fetch import handle_fetch
from brokerd.server.handlers.produce import handle_produce
from tests.integration.wire_calls import batch
from tests.unit.replication.replica_setup import LOCAL, PEER, Setup
from tests.unit.server.handler_context import (
    broker_config,
    call,
    context,
    fetch_request,
    produce_request,
)


def _ctx(made: Setup):
    config = broker_config({"broker.id": str(LOCAL)})
    return context(
        config, metadata=made.metadata, replicas=made.replicas, log_manager=made.log_manager
    )


async def test_produce_then_fetch_reads_the_batch_back(replicas):
    state = await replicas.create_topic("t", [LOCAL], [LOCAL])
    await replicas.become("t", state, [LOCAL])
    ctx = _ctx(replicas)
    for acks, expected_offset in ((1, 0), (-1, 2)):
        body = produce_request(bytes(batch(b"a", b"b")), acks=acks)
        (answer,) = (await call(handle_produce, ctx, body)).responses[0].partition_responses
        assert (answer.error_code, answer.base_offset) == (ErrorCode.none, expected_offset)

    response = await call(handle_fetch, ctx, fetch_request(topics=["t"]))
    (partition,) = response.responses[0].partitions
    assert partition.error_code == ErrorCode.none and partition.high_watermark == 4
    batches = list(iter_batches(partition.records))
    assert [(b.base_offset, b.last_offset) for b in batches] == [(0, 1), (2, 3)]
    assert [r.value for b in batches for r in b.records()] == [b"a", b"b", b"a", b"b"]


async def test_produce_to_a_followed_or_unknown_partition_is_refused(replicas):
    state = await replicas.create_topic("f", [PEER, LOCAL], [PEER, LOCAL])
    await replicas.become("f", state, [PEER, LOCAL])
    ctx = _ctx(replicas)
    answers = {}
    for topic in ("f", "nowhere"):
        body = produce_request(bytes(batch(b"v")), topic=topic)
        (answer,) = (await call(handle_produce, ctx, body)).responses[0].partition_responses
        answers[topic] = answer.error_code
    assert answers == {
        "f": ErrorCode.not_leader_or_follower,
        "nowhere": ErrorCode.unknown_topic_or_partition,
    }


async def test_a_fetch_past_the_log_end_is_out_of_range(replicas):
    state = await replicas.create_topic("o", [LOCAL], [LOCAL])
    await replicas.become("o", state, [LOCAL])
    response = await call(handle_fetch, _ctx(replicas), fetch_request(topics=["o"], offset=5))
    (partition,) = response.responses[0].partitions
    assert partition.error_code == ErrorCode.offset_out_of_range
