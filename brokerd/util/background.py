"""Fire-and-forget asyncio tasks, kept alive until they finish.

The event loop references tasks only weakly: a task nobody else holds can be
garbage-collected mid-flight. BackgroundTasks holds each task strongly until it ends,
logs the exception a task ends with (nobody awaits it to see it) and cancels what is
left on shutdown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any


class BackgroundTasks:
    def __init__(self, log: logging.Logger, failure_message: str, level: int = logging.ERROR):
        """A failed task is logged on `log` at `level` as `failure_message` with its traceback."""
        self._log = log
        self._failure_message = failure_message
        self._level = level
        self._tasks: set[asyncio.Task] = set()

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._log.log(self._level, self._failure_message, exc_info=task.exception())

    def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def __len__(self) -> int:
        """Tasks not yet finished."""
        return len(self._tasks)
