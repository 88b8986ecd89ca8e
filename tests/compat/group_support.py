"""Group members as subprocesses (tests/compat/group_member.py) and waiting on what they see."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from tests.harness import ROOT


class Member:
    def __init__(self, client: str, bootstrap: str, group: str, topic: str, **options):
        command = [
            sys.executable,
            "-m",
            "tests.compat.group_member",
            "--client",
            client,
            "--bootstrap",
            bootstrap,
            "--group",
            group,
            "--topic",
            topic,
        ]
        for key, value in options.items():
            flag = "--" + key.replace("_", "-")
            command += [flag] if value is True else [flag, str(value)]
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.assignment: list[tuple[str, int]] | None = None
        self.assignments: list[list[tuple[str, int]]] = []
        self.records: list[tuple[int, int, str]] = []
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if "assigned" in event:
                self.assignment = [tuple(tp) for tp in event["assigned"]]
                self.assignments.append(self.assignment)
            elif "record" in event:
                self.records.append(tuple(event["record"]))
            elif "ready" in event:
                self.ready.set()

    @property
    def partitions(self) -> set[int]:
        return {p for _, p in self.assignment or []}

    def terminate(self, timeout: float = 20) -> None:
        """SIGTERM: the member closes its consumer (and leaves the group unless static)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout)
        self._reader.join(5)

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        self._reader.join(5)

    def alive(self) -> bool:
        return self.process.poll() is None


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def balanced(members: list[Member], partitions: int) -> bool:
    """Every partition assigned to exactly one live member."""
    seen: list[int] = []
    for member in members:
        if member.assignment is None:
            return False
        seen += sorted(member.partitions)
    return sorted(seen) == list(range(partitions))
