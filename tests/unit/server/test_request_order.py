"""RequestSequencer: a Produce whose turn has come runs at once, up to its first wait, in a
context of its own; anything else starts as a task (brokerd/server/request_order.py)."""

import asyncio
import contextvars

import pytest

from brokerd.server.request_order import PRODUCE, RequestSequencer, effect_taken

METADATA = 3
seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="outside")


async def test_a_produce_without_a_wait_is_answered_before_start_returns():
    steps = []

    async def produce():
        seen.set("inside")
        steps.append("appended")
        effect_taken()
        return "answer"

    sequencer = RequestSequencer()
    handling = sequencer.start(PRODUCE, produce())
    # No pass of the event loop in between: the appends and the answer are already there
    # (a task would not have started yet).
    assert steps == ["appended"] and handling.done() and handling.result() == "answer"
    assert seen.get() == "outside"  # its context is its own, as a task's
    await sequencer.wait_turn(PRODUCE)  # the next produce's turn has come at once


async def test_a_produce_that_waits_runs_to_its_wait_then_goes_on_as_a_task():
    steps = []
    released = asyncio.Event()

    async def produce():
        seen.set("inside")
        steps.append("appended")
        effect_taken()
        await released.wait()  # e.g. acks=all replication
        steps.append(f"replicated, seen={seen.get()}")
        return "answer"

    sequencer = RequestSequencer()
    handling = sequencer.start(PRODUCE, produce())
    assert steps == ["appended"] and not handling.done()
    await asyncio.wait_for(sequencer.wait_turn(PRODUCE), 5)  # took effect: next one may start
    released.set()
    assert await asyncio.wait_for(handling, 5) == "answer"
    assert steps == ["appended", "replicated, seen=inside"] and seen.get() == "outside"


async def test_a_waiting_produce_is_cancelled_inside_and_a_failure_is_kept():
    cleaned = []

    async def waits_forever():
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.append(True)

    async def fails():
        raise ValueError("bad batch")

    sequencer = RequestSequencer()
    waiting = sequencer.start(PRODUCE, waits_forever())
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert cleaned == [True]
    failed = sequencer.start(PRODUCE, fails())
    assert failed.done()
    with pytest.raises(ValueError, match="bad batch"):
        failed.result()


async def test_other_requests_still_start_as_tasks_after_the_produce_before_them():
    steps = []

    async def produce():
        steps.append("produce")

    async def metadata():
        steps.append("metadata")
        return "metadata answer"

    sequencer = RequestSequencer()
    sequencer.start(PRODUCE, produce())
    await sequencer.wait_turn(METADATA)
    handling = sequencer.start(METADATA, metadata())
    assert steps == ["produce"] and not handling.done()  # started by the loop, in turn
    assert await asyncio.wait_for(handling, 5) == "metadata answer"
    assert steps == ["produce", "metadata"]


async def test_a_connection_that_only_produces_keeps_only_its_unfinished_requests():
    """Only a non-Produce request's wait_turn pruned the finished ones: a producer's
    connection (Produce after Produce, for ever) kept every request and its answer
    (found by review: ~150 B a request, GBs an hour at a few thousand requests/s)."""

    async def produce():
        effect_taken()
        return b"answer"

    sequencer = RequestSequencer()
    for _ in range(1_000):
        await sequencer.wait_turn(PRODUCE)
        sequencer.start(PRODUCE, produce())
    assert len(sequencer._unfinished) <= 1
