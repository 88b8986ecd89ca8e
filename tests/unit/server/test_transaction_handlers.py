"""The transaction APIs' handlers over a real coordinator (a `__transaction_state` log on
disk): each version's request and answer through the wire encoding, Kafka's version mapping
of PRODUCER_FENCED, and unknown partitions refused before anything is added."""

from __future__ import annotations

import datetime

import pytest

from brokerd.coordination.metadata import TopicInfo
from brokerd.protocol.errors import ErrorCode as E
from brokerd.server.handlers import producer_ids, transactions
from tests.integration.wire import nested, request
from tests.unit.transactions.local_state import LocalReplicas, coordinator, settle, started

from .handler_context import broker_config, call, context, metadata_cache


@pytest.fixture
def replicas(tmp_path):
    replicas = LocalReplicas(tmp_path)
    replicas.lead(0, epoch=1)
    yield replicas
    replicas.close()


@pytest.fixture
async def ctx(replicas):
    config = broker_config()
    metadata = metadata_cache(config)
    metadata.topics["t"] = TopicInfo("t", "AAAAAAAAAAAAAAAAAAAAAQ", {0: [1], 1: [1]})
    return context(config, metadata=metadata, transactions=await started(coordinator(replicas)))


async def init(ctx, version: int = 4, transactional_id: str = "tx", **extra):
    body = request(
        22,
        version,
        transactional_id=transactional_id,
        transaction_timeout=datetime.timedelta(seconds=60),
        producer_id=-1,
        producer_epoch=-1,
        **extra,
    )
    return await call(producer_ids.handle_init_producer_id, ctx, body)


def add_partitions(version: int, producer_id: int, epoch: int, partitions):
    topics = tuple(
        nested(24, version, "AddPartitionsToTxnTopic", name=topic, partitions=tuple(ps))
        for topic, ps in partitions.items()
    )
    return request(
        24,
        version,
        v3_and_below_transactional_id="tx",
        v3_and_below_producer_id=producer_id,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=topics,
    )


def errors_of(response) -> dict:
    return {
        (t.name, r.partition_index): r.partition_error_code
        for t in response.results_by_topic_v3_and_below
        for r in t.results_by_partition
    }


async def test_init_add_and_end_through_every_version(ctx):
    first = await init(ctx, version=0)
    assert (first.error_code, first.producer_epoch) == (E.none, 0)
    current = await init(ctx, version=4)
    pid, epoch = current.producer_id, current.producer_epoch
    assert (pid, epoch) == (first.producer_id, 1)
    for version in range(4):
        response = await call(
            transactions.handle_add_partitions_to_txn,
            ctx,
            add_partitions(version, pid, epoch, {"t": [0, 1]}),
        )
        assert errors_of(response) == {("t", 0): E.none, ("t", 1): E.none}
    response = await call(
        transactions.handle_end_txn,
        ctx,
        request(
            26, 3, transactional_id="tx", producer_id=pid, producer_epoch=epoch, committed=True
        ),
    )
    assert response.error_code == E.none
    await settle()
    described = await call(
        transactions.handle_describe_transactions, ctx, request(65, 0, transactional_ids=("tx",))
    )
    [state] = described.transaction_states
    assert (state.error_code, state.transaction_state) == (E.none, "CompleteCommit")
    listed = await call(
        transactions.handle_list_transactions,
        ctx,
        request(66, 1, state_filters=("Ongoing", "Nonsense"), producer_id_filters=()),
    )
    assert listed.unknown_state_filters == ("Nonsense",)
    assert listed.transaction_states == ()


async def test_fenced_producers_get_the_error_their_version_knows(ctx):
    old = await init(ctx)
    new = await init(ctx)
    assert new.producer_epoch == old.producer_epoch + 1
    for version, expected in ((1, E.invalid_producer_epoch), (2, E.producer_fenced)):
        response = await call(
            transactions.handle_add_partitions_to_txn,
            ctx,
            add_partitions(version, old.producer_id, old.producer_epoch, {"t": [0]}),
        )
        assert errors_of(response) == {("t", 0): expected}
        response = await call(
            transactions.handle_end_txn,
            ctx,
            request(
                26,
                version,
                transactional_id="tx",
                producer_id=old.producer_id,
                producer_epoch=old.producer_epoch,
                committed=False,
            ),
        )
        assert response.error_code == expected


async def test_unknown_partitions_add_nothing(ctx):
    current = await init(ctx)
    response = await call(
        transactions.handle_add_partitions_to_txn,
        ctx,
        add_partitions(3, current.producer_id, current.producer_epoch, {"t": [0, 9], "x": [0]}),
    )
    assert errors_of(response) == {
        ("t", 0): E.operation_not_attempted,
        ("t", 9): E.unknown_topic_or_partition,
        ("x", 0): E.unknown_topic_or_partition,
    }
    described = ctx.transactions.describe("tx")
    assert (described.state, described.partitions) == ("Empty", ())


async def test_bad_timeouts_and_empty_ids(ctx):
    response = await call(
        producer_ids.handle_init_producer_id,
        ctx,
        request(
            22,
            4,
            transactional_id="tx",
            transaction_timeout=datetime.timedelta(milliseconds=900001),
            producer_id=-1,
            producer_epoch=-1,
        ),
    )
    assert response.error_code == E.invalid_transaction_timeout
    assert (await init(ctx, transactional_id="")).error_code == E.invalid_request
