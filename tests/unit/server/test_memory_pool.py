"""queued.max.request.bytes' pool: Kafka's non-strict SimpleMemoryPool semantics."""

import asyncio

import pytest

from brokerd.server.memory_pool import RequestMemoryPool


async def test_unbounded_pool_never_waits():
    pool = RequestMemoryPool(-1)
    held = [await pool.reserve(100 << 20) for _ in range(100)]
    assert not pool.out_of_memory
    for reservation in held:
        reservation.release()


async def test_a_request_is_admitted_whole_while_any_memory_is_free():
    pool = RequestMemoryPool(100)
    first = await pool.reserve(90)
    second = await pool.reserve(90)  # 10 were free: admitted, the pool goes below zero
    assert pool.available == -80 and pool.out_of_memory
    third = asyncio.create_task(pool.reserve(1))
    await asyncio.sleep(0.01)
    assert not third.done()  # nothing free: reading stops
    first.release()  # 10 free again
    assert (await third).size == 1
    second.release()


async def test_waiters_are_served_in_order_one_at_a_time():
    pool = RequestMemoryPool(10)
    hog = await pool.reserve(10)
    order = []

    async def want(name, size):
        reservation = await pool.reserve(size)
        order.append(name)
        return reservation

    tasks = [asyncio.create_task(want(n, s)) for n, s in (("a", 8), ("b", 8), ("c", 1))]
    await asyncio.sleep(0.01)
    hog.release()
    await asyncio.sleep(0.01)
    # a takes 8 (2 left), b is admitted non-strictly (-6), c waits for memory.
    assert order == ["a", "b"]
    (await tasks[0]).release()
    assert (await tasks[2]).size == 1
    assert order == ["a", "b", "c"]


async def test_a_cancelled_waiter_passes_its_turn_on():
    pool = RequestMemoryPool(10)
    hog = await pool.reserve(10)
    cancelled = asyncio.create_task(pool.reserve(5))
    after = asyncio.create_task(pool.reserve(5))
    await asyncio.sleep(0.01)
    hog.release()  # wakes `cancelled`...
    cancelled.cancel()  # ...which leaves before taking its share
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert (await after).size == 5
    assert pool.available == 5


async def test_release_is_idempotent():
    pool = RequestMemoryPool(10)
    reservation = await pool.reserve(4)
    reservation.release()
    reservation.release()
    assert pool.available == 10
