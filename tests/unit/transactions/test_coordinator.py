"""The transaction coordinator's state machine over a real `__transaction_state` log:
Kafka's transitions and errors, fencing, markers before Complete, timeouts, reloads."""

from __future__ import annotations

import asyncio

import pytest

from brokerd.protocol.errors import ErrorCode as E
from brokerd.transactions.transaction_log import TxnState

from .local_state import LocalReplicas, RecordedMarkers, coordinator, settle, started

S = TxnState


@pytest.fixture
def replicas(tmp_path):
    replicas = LocalReplicas(tmp_path)
    replicas.lead(0, epoch=4)
    yield replicas
    replicas.close()


def state_of(c, transactional_id):
    error, held = c.manager.get(transactional_id)
    assert error == E.none
    return held.metadata


async def test_init_bumps_the_epoch_and_keeps_the_producer_id(replicas):
    c = await started(coordinator(replicas))
    first = await c.init_producer_id("tx", 60000)
    assert (first.error, first.producer_epoch) == (E.none, 0)
    again = await c.init_producer_id("tx", 60000)
    assert (again.error, again.producer_id, again.producer_epoch) == (
        E.none,
        first.producer_id,
        1,
    )
    assert state_of(c, "tx").state == S.EMPTY
    other = await c.init_producer_id("other", 60000)
    assert other.producer_id != first.producer_id


async def test_bad_init_requests(replicas):
    c = await started(coordinator(replicas, transaction_max_timeout_ms=1000))
    assert (await c.init_producer_id("tx", 1001)).error == E.invalid_transaction_timeout
    assert (await c.init_producer_id("tx", 0)).error == E.invalid_transaction_timeout
    assert (await c.init_producer_id("", 100)).error == E.invalid_request
    ok = await c.init_producer_id("tx", 1000)
    assert ok.error == E.none
    # KIP-360: a producer id this id never had is fenced
    fenced = await c.init_producer_id("tx", 1000, ok.producer_id + 99, 0)
    assert fenced.error == E.producer_fenced
    # the same producer bumping its own epoch is fine
    bumped = await c.init_producer_id("tx", 1000, ok.producer_id, ok.producer_epoch)
    assert (bumped.error, bumped.producer_epoch) == (E.none, ok.producer_epoch + 1)


async def test_commit_writes_prepare_then_markers_then_complete(replicas):
    markers = RecordedMarkers()
    c = await started(coordinator(replicas, markers))
    init = await c.init_producer_id("tx", 60000)
    pid, epoch = init.producer_id, init.producer_epoch
    assert await c.add_partitions("tx", pid, epoch, {("a", 0), ("b", 1)}) == E.none
    assert await c.add_offsets("tx", pid, epoch, "group") == E.none
    metadata = state_of(c, "tx")
    assert metadata.state == S.ONGOING
    assert metadata.partitions == {("a", 0), ("b", 1), ("__consumer_offsets", 7)}
    markers.hold = True
    c.completion_wait_seconds = 0.05  # how long a request meeting the markers is held
    assert await c.end_transaction("tx", pid, epoch, commit=True) == E.none
    await settle()
    assert metadata.state == S.PREPARE_COMMIT
    assert markers.sent == [
        (pid, epoch, True, 4, frozenset({("a", 0), ("b", 1), ("__consumer_offsets", 7)}))
    ]
    # while markers are out: a retry is CONCURRENT_TRANSACTIONS, as are new requests
    assert await c.end_transaction("tx", pid, epoch, commit=True) == E.concurrent_transactions
    assert await c.add_partitions("tx", pid, epoch, {("a", 0)}) == E.concurrent_transactions
    assert (await c.init_producer_id("tx", 60000)).error == E.concurrent_transactions
    markers.released.set()
    await settle()
    assert metadata.state == S.COMPLETE_COMMIT and not metadata.partitions
    # a retried EndTxn of the completed commit is answered NONE; an abort is refused
    assert await c.end_transaction("tx", pid, epoch, commit=True) == E.none
    assert await c.end_transaction("tx", pid, epoch, commit=False) == E.invalid_txn_state


async def test_the_next_transaction_waits_for_the_markers_instead_of_a_retry(replicas):
    """AddPartitionsToTxn for the next transaction, arriving while the last one's markers
    are still out, is held and answered NONE once CompleteCommit is written, rather than
    CONCURRENT_TRANSACTIONS (which librdkafka retries only after 20 ms)."""
    markers = RecordedMarkers()
    c = await started(coordinator(replicas, markers))
    init = await c.init_producer_id("tx", 60000)
    pid, epoch = init.producer_id, init.producer_epoch
    assert await c.add_partitions("tx", pid, epoch, {("a", 0)}) == E.none
    markers.hold = True
    assert await c.end_transaction("tx", pid, epoch, commit=True) == E.none
    next_add = asyncio.ensure_future(c.add_partitions("tx", pid, epoch, {("b", 0)}))
    await settle()
    assert not next_add.done() and state_of(c, "tx").state == S.PREPARE_COMMIT
    markers.released.set()
    assert await asyncio.wait_for(next_add, 30) == E.none
    metadata = state_of(c, "tx")
    assert (metadata.state, metadata.partitions) == (S.ONGOING, {("b", 0)})
    # the same for a new producer's InitProducerId meeting an abort's markers
    markers.hold, markers.released = True, asyncio.Event()
    assert await c.end_transaction("tx", pid, epoch, commit=False) == E.none
    init_again = asyncio.ensure_future(c.init_producer_id("tx", 60000))
    await settle()
    assert not init_again.done()
    markers.released.set()
    again = await asyncio.wait_for(init_again, 30)
    assert (again.error, again.producer_epoch) == (E.none, epoch + 1)


async def test_markers_that_stay_out_are_answered_concurrent_transactions(replicas):
    markers = RecordedMarkers()
    c = await started(coordinator(replicas, markers))
    c.completion_wait_seconds = 0.05
    init = await c.init_producer_id("tx", 60000)
    pid, epoch = init.producer_id, init.producer_epoch
    assert await c.add_partitions("tx", pid, epoch, {("a", 0)}) == E.none
    markers.hold = True
    assert await c.end_transaction("tx", pid, epoch, commit=True) == E.none
    assert await c.add_partitions("tx", pid, epoch, {("b", 0)}) == E.concurrent_transactions
    markers.released.set()
    await settle()
    assert await c.add_partitions("tx", pid, epoch, {("b", 0)}) == E.none


async def test_out_of_order_and_unknown_requests(replicas):
    c = await started(coordinator(replicas))
    assert await c.add_partitions("nope", 1, 0, {("a", 0)}) == E.invalid_producer_id_mapping
    assert await c.end_transaction("nope", 1, 0, True) == E.invalid_producer_id_mapping
    init = await c.init_producer_id("tx", 60000)
    pid, epoch = init.producer_id, init.producer_epoch
    assert await c.end_transaction("tx", pid, epoch, True) == E.invalid_txn_state  # Empty
    assert await c.add_partitions("tx", pid + 1, epoch, {("a", 0)}) == (
        E.invalid_producer_id_mapping
    )
    assert await c.add_partitions("tx", pid, epoch + 1, {("a", 0)}) == E.producer_fenced
    assert c.describe("nope").error == E.transactional_id_not_found


async def test_a_new_producer_aborts_the_open_transaction_and_fences_the_old(replicas):
    markers = RecordedMarkers()
    c = await started(coordinator(replicas, markers))
    old = await c.init_producer_id("tx", 60000)
    assert await c.add_partitions("tx", old.producer_id, old.producer_epoch, {("a", 0)}) == 0
    retry = await c.init_producer_id("tx", 60000)
    assert retry.error == E.concurrent_transactions
    await settle()
    # aborted under the bumped epoch, so the markers fence the old producer's writes
    assert markers.sent == [
        (old.producer_id, old.producer_epoch + 1, False, 4, frozenset({("a", 0)}))
    ]
    assert state_of(c, "tx").state == S.COMPLETE_ABORT
    new = await c.init_producer_id("tx", 60000)
    assert (new.error, new.producer_epoch) == (E.none, old.producer_epoch + 2)
    # the zombie is fenced everywhere
    assert await c.end_transaction("tx", old.producer_id, old.producer_epoch, True) == (
        E.producer_fenced
    )
    assert await c.add_partitions("tx", old.producer_id, old.producer_epoch, {("a", 0)}) == (
        E.producer_fenced
    )


async def test_timed_out_transactions_are_aborted_with_a_bumped_epoch(replicas):
    markers = RecordedMarkers()
    c = await started(coordinator(replicas, markers))
    init = await c.init_producer_id("tx", 1000)
    pid, epoch = init.producer_id, init.producer_epoch
    assert await c.add_partitions("tx", pid, epoch, {("a", 0)}) == E.none
    start = state_of(c, "tx").start_timestamp_ms
    assert c.abort_timed_out_transactions(now=start + 1000) == 0  # not past it yet
    assert c.abort_timed_out_transactions(now=start + 1001) == 1
    await settle()
    assert markers.sent == [(pid, epoch + 1, False, 4, frozenset({("a", 0)}))]
    assert state_of(c, "tx").state == S.COMPLETE_ABORT
    assert await c.end_transaction("tx", pid, epoch, True) == E.producer_fenced


async def test_reload_restores_state_and_finishes_a_prepared_commit(replicas):
    markers = RecordedMarkers()
    c = await started(coordinator(replicas, markers))
    init = await c.init_producer_id("tx", 60000)
    pid, epoch = init.producer_id, init.producer_epoch
    assert await c.add_partitions("tx", pid, epoch, {("a", 0)}) == E.none
    markers.hold = True
    assert await c.end_transaction("tx", pid, epoch, True) == E.none
    await settle()
    # the coordinator moves before the markers are written
    c.on_leadership_change((), [("__transaction_state", 0)])
    assert c.manager.get("tx") == (E.not_coordinator, None)
    replicas.leaders[("__transaction_state", 0)].leader_epoch = 5
    fresh_markers = RecordedMarkers()
    fresh = await started(coordinator(replicas, fresh_markers))
    await settle()
    assert fresh_markers.sent == [(pid, epoch, True, 5, frozenset({("a", 0)}))]
    assert state_of(fresh, "tx").state == S.COMPLETE_COMMIT
    assert fresh.describe("tx").state == "CompleteCommit"
    listed = fresh.list_transactions(set(), set())
    assert listed[0] == E.none and [t.transactional_id for t in listed[1]] == ["tx"]
    assert fresh.list_transactions({"Ongoing"}, set())[1] == []


async def test_expired_ids_are_tombstoned_and_forgotten(replicas):
    c = await started(coordinator(replicas, transactional_id_expiration_ms=1000))
    init = await c.init_producer_id("tx", 500)
    assert init.error == E.none
    updated = state_of(c, "tx").last_update_timestamp_ms
    assert await c.remove_expired_transactional_ids(now=updated + 999) == 0
    assert await c.remove_expired_transactional_ids(now=updated + 1000) == 1
    assert c.manager.get("tx") == (E.none, None)
    fresh = await started(coordinator(replicas))
    assert fresh.manager.get("tx") == (E.none, None)


async def test_write_failures_map_to_coordinator_errors(replicas):
    c = await started(coordinator(replicas))
    replicas.replication_error = E.not_enough_replicas_after_append
    assert (await c.init_producer_id("tx", 1000)).error == E.coordinator_not_available
    replicas.replication_error = E.none
    # the failed transition was dropped: the id can be initialised now
    assert (await c.init_producer_id("tx", 1000)).error == E.none
