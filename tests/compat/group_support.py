"""Group members as subprocesses (tests/compat/group_member.py) and waiting on what they see."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable

from tests.harness import ROOT


class Member:
    """A member process: tests.compat.group_member, or another `module` with its interface
    (flags and JSON lines)."""

    def __init__(
        self,
        client: str,
        bootstrap: str,
        group: str,
        topic: str,
        module: str = "tests.compat.group_member",
        **options,
    ):
        command = [
            sys.executable,
            "-m",
            module,
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
        # The client's own log (its group coordinator at DEBUG), for a failure's report.
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the member
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self.log,
            start_new_session=True,
        )
        self.group = group
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

    def log_tail(self, lines: int = 30) -> list[str]:
        self.log.seek(0)
        return self.log.read().decode(errors="replace").splitlines()[-lines:]


def wait_for(
    condition: Callable[[], bool],
    timeout: float,
    what: str,
    explain: Callable[[], str] | None = None,
) -> None:
    """Poll `condition`; on timeout fail with `explain()` (what the members and the broker
    saw), so a rare failure in a loaded CI run can be read from its report."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            story = f"\n{explain()}" if explain else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{story}")
        time.sleep(0.05)


def group_story(members: list[Member], broker_output: str) -> str:
    """Each member's assignment history and liveness, and the broker's lines on its group."""
    lines = []
    for m in members:
        lines.append(
            f"member pid {m.process.pid} alive={m.alive()} ready={m.ready.is_set()} "
            f"assignments={m.assignments}; its client's last log lines:"
        )
        lines += [f"  {line}" for line in m.log_tail()]
    groups = {m.group for m in members}
    lines += [line for line in broker_output.splitlines() if any(g in line for g in groups)]
    return "\n".join(lines[-200:])


def balanced(members: list[Member], partitions: int) -> bool:
    """Every partition assigned to exactly one live member."""
    seen: list[int] = []
    for member in members:
        if member.assignment is None:
            return False
        seen += sorted(member.partitions)
    return sorted(seen) == list(range(partitions))
