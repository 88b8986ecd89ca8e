"""BackgroundTasks: fire-and-forget tasks stay referenced until done, failures are logged,
and shutdown cancels what is still running."""

import asyncio
import gc
import logging
import weakref

import pytest

from brokerd.util.background import BackgroundTasks

log = logging.getLogger("tests.background")


async def _wait_forever() -> None:
    # The future is referenced only by this task: nothing else keeps the task alive.
    await asyncio.get_running_loop().create_future()


async def _fail() -> None:
    raise ValueError("boom")


async def _settle(task: asyncio.Future) -> None:
    await asyncio.wait({task})
    await asyncio.sleep(0)  # done callbacks run on the next loop turn


async def test_a_running_task_is_held_until_it_finishes():
    background = BackgroundTasks(log, "task failed")
    task = weakref.ref(background.spawn(_wait_forever()))
    await asyncio.sleep(0)
    gc.collect()
    assert task() is not None and not task().done()
    assert len(background) == 1
    background.cancel_all()
    await _settle(task())
    assert len(background) == 0


async def test_a_finished_task_is_released():
    background = BackgroundTasks(log, "task failed")
    task = background.spawn(asyncio.sleep(0, result="done"))
    await _settle(task)
    assert task.result() == "done"
    assert len(background) == 0


@pytest.mark.parametrize("level", [logging.ERROR, logging.WARNING])
async def test_the_exception_a_task_ends_with_is_logged(caplog, level):
    background = BackgroundTasks(log, "refresh failed", level)
    with caplog.at_level(logging.DEBUG, logger=log.name):
        await _settle(background.spawn(_fail()))
    [record] = caplog.records
    assert (record.name, record.levelno, record.getMessage()) == (log.name, level, "refresh failed")
    assert isinstance(record.exc_info[1], ValueError)
    assert len(background) == 0


async def test_cancel_all_cancels_the_running_tasks_without_logging(caplog):
    background = BackgroundTasks(log, "task failed")
    tasks = [background.spawn(_wait_forever()) for _ in range(3)]
    await asyncio.sleep(0)
    with caplog.at_level(logging.DEBUG, logger=log.name):
        background.cancel_all()
        await _settle(asyncio.gather(*tasks, return_exceptions=True))
    assert all(task.cancelled() for task in tasks)
    assert len(background) == 0
    assert caplog.records == []
