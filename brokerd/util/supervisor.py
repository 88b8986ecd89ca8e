"""Keep a set of child processes running: the process supervisor of `make run`.

platform/launch.py starts ZooKeeper, Redis, the brokers, daphne and Celery through one
Supervisor. A child that dies is started again after a backoff (1 s doubling to 30 s, back
to 1 s once a run lasted `stable_after_s`), while the others keep running: a broker killed
with -9 is a failover to watch, not a reason to stop the platform. Every exit and restart is
logged with its exit code or signal, and the state of every child is written atomically to a
JSON status file that the dashboard's cluster overview shows. `stop()` ends the children in
reverse start order.

It lives here rather than in platform/ because platform/ is not a Python package and the
tests drive this class on real processes.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

# The states a child is reported in.
STARTING = "starting"  # first start, not ready yet
RUNNING = "running"
BACKING_OFF = "backing-off"  # died; waiting before the next start
RESTARTING = "restarting"  # started again, not ready yet
STOPPED = "stopped"

STATUS_VERSION = 1


class StartFailed(RuntimeError):
    """A child died or did not become ready during its first start."""


class StopRequested(RuntimeError):
    """request_stop() was called while a first start was waiting for readiness."""


@dataclass
class Program:
    """What to run and how to tell it is up.

    `ready` answers whether the process serves (e.g. its port accepts connections); None
    means as soon as it is started. A restarted child that is not ready within
    `ready_timeout_s` is killed and counted as another failure.
    """

    name: str
    command: Sequence[str]
    log_path: Path
    cwd: Path | None = None
    env: Mapping[str, str] | None = None
    ready: Callable[[], bool] | None = None
    ready_timeout_s: float = 60.0


@dataclass
class _Child:
    program: Program
    process: subprocess.Popen | None = None
    log_file: IO[bytes] | None = None
    state: str = STARTING
    restarts: int = 0
    started_at: float = 0.0  # monotonic
    started_wall: str | None = None
    next_delay_s: float = 0.0
    restart_at: float = 0.0  # monotonic, while backing off
    last_exit: str | None = None
    last_exit_code: int | None = None
    last_exit_wall: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None


def describe_exit(returncode: int) -> str:
    """'exit code 1' or 'signal SIGKILL (9)', as Popen reports a child's end."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "signal"
        return f"signal {name} ({-returncode})"
    return f"exit code {returncode}"


def _now_iso() -> str:
    return _iso_in(0.0)


def _iso_in(seconds: float) -> str:
    moment = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=seconds)
    return moment.isoformat(timespec="seconds")


class Supervisor:
    def __init__(
        self,
        status_path: Path | None = None,
        status_extra: Mapping[str, Any] | None = None,
        *,
        backoff_initial_s: float = 1.0,
        backoff_max_s: float = 30.0,
        stable_after_s: float = 60.0,
        stop_timeout_s: float = 30.0,
    ):
        """`status_extra` goes into the status file as is (the launcher names its cluster)."""
        self.status_path = status_path
        self.status_extra = dict(status_extra or {})
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.stable_after_s = stable_after_s
        self.stop_timeout_s = stop_timeout_s
        self.children: list[_Child] = []  # in start order
        self.stop_requested = False

    # Starting ----------------------------------------------------------------------------
    def start(self, program: Program) -> int:
        """Start `program` and wait until it is ready, supervising the children started
        before meanwhile. Returns its pid; raises StartFailed if it dies or is not ready in
        time (a child that cannot start once is a set-up problem, not a crash to retry)."""
        if any(child.program.name == program.name for child in self.children):
            raise ValueError(f"{program.name} is already supervised")
        child = _Child(program, next_delay_s=self.backoff_initial_s)
        self.children.append(child)
        process = self._spawn(child, STARTING)
        deadline = time.monotonic() + program.ready_timeout_s
        while True:
            if self.stop_requested:
                raise StopRequested(program.name)
            if process.poll() is not None:
                code = process.returncode
                self._close_log(child)
                child.state = STOPPED
                self._record_exit(child, code)
                self.write_status()
                raise StartFailed(f"{program.name} exited with {describe_exit(code)}")
            if program.ready is None or program.ready():
                child.state = RUNNING
                self.write_status()
                log.info("%s started (pid %d)", program.name, child.pid)
                return process.pid
            if time.monotonic() > deadline:
                raise StartFailed(
                    f"{program.name} was not ready within {program.ready_timeout_s:.0f}s"
                )
            self.poll()
            time.sleep(0.1)

    def _spawn(self, child: _Child, state: str) -> subprocess.Popen:
        program = child.program
        program.log_path.parent.mkdir(parents=True, exist_ok=True)
        child.log_file = open(program.log_path, "ab")  # noqa: SIM115 - lives with the process
        child.process = subprocess.Popen(
            list(program.command),
            cwd=program.cwd,
            env=dict(program.env) if program.env is not None else None,
            stdout=child.log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: stray descendants can be killed
        )
        child.state = state
        child.started_at = time.monotonic()
        child.started_wall = _now_iso()
        self.write_status()
        return child.process

    # Supervising -------------------------------------------------------------------------
    def poll(self) -> None:
        """One round: notice exits, start again whoever's backoff is over, promote restarted
        children that became ready."""
        changed = False
        now = time.monotonic()
        for child in self.children:
            if child.state in (STARTING, STOPPED):
                continue  # a first start is watched by start(); stopped is final
            if child.state == BACKING_OFF:
                if now >= child.restart_at and not self.stop_requested:
                    child.restarts += 1
                    self._spawn(child, RESTARTING)
                    log.warning(
                        "%s started again (pid %d, restart %d)",
                        child.program.name,
                        child.pid,
                        child.restarts,
                    )
                    changed = True
                continue
            process = child.process
            if process is None:
                continue  # never spawned
            code = process.poll()
            if code is not None:
                self._on_exit(child, code, now)
                changed = True
            elif child.state == RESTARTING:
                program = child.program
                if program.ready is None or program.ready():
                    child.state = RUNNING
                    log.warning("%s is up again (pid %d)", program.name, child.pid)
                    changed = True
                elif now - child.started_at > program.ready_timeout_s:
                    log.warning(
                        "%s (pid %d) not ready within %.0fs; killing it",
                        program.name,
                        child.pid,
                        program.ready_timeout_s,
                    )
                    self._kill_group(child)
                    process.wait()
                    self._on_exit(child, process.returncode, now)
                    changed = True
        if changed:
            self.write_status()

    def _on_exit(self, child: _Child, returncode: int, now: float) -> None:
        self._close_log(child)
        self._kill_group(child)  # descendants it left behind (e.g. a Celery worker's pool)
        uptime = now - child.started_at
        if uptime >= self.stable_after_s:
            child.next_delay_s = self.backoff_initial_s  # it ran long enough: start afresh
        delay = child.next_delay_s
        child.next_delay_s = min(delay * 2, self.backoff_max_s)
        child.restart_at = now + delay
        child.state = BACKING_OFF
        self._record_exit(child, returncode)
        log.warning(
            "%s (pid %d) exited with %s after %.1fs; restart %d in %gs",
            child.program.name,
            child.pid,
            child.last_exit,
            uptime,
            child.restarts + 1,
            delay,
        )

    def _record_exit(self, child: _Child, returncode: int) -> None:
        child.last_exit = describe_exit(returncode)
        child.last_exit_code = returncode
        child.last_exit_wall = _now_iso()

    def run(self, interval_s: float = 0.2) -> None:
        """Supervise until request_stop() (e.g. from a signal handler)."""
        while not self.stop_requested:
            self.poll()
            time.sleep(interval_s)

    def request_stop(self) -> None:
        """Safe from a signal handler: only sets a flag the loops look at."""
        self.stop_requested = True

    # Stopping ----------------------------------------------------------------------------
    def stop(self) -> None:
        """SIGTERM each child in reverse start order and wait for it (SIGKILL to its process
        group after `stop_timeout_s`), then remove the status file: nothing runs any more."""
        self.stop_requested = True
        for child in reversed(self.children):
            process = child.process
            if process is not None and child.state != BACKING_OFF:
                if process.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        process.send_signal(signal.SIGTERM)
                try:
                    process.wait(self.stop_timeout_s)
                except subprocess.TimeoutExpired:
                    log.warning("%s did not stop within %.0fs; killing it",
                                child.program.name, self.stop_timeout_s)  # fmt: skip
                    self._kill_group(child)
                    process.wait()
                self._kill_group(child)
            self._close_log(child)
            child.state = STOPPED
            self.write_status()
        if self.status_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.status_path.unlink()

    @staticmethod
    def _kill_group(child: _Child) -> None:
        # The group id is the child's pid (start_new_session). Linux keeps a pid taken while
        # a process group of that id has members; an empty group is simply not found.
        if child.process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.process.pid, signal.SIGKILL)

    @staticmethod
    def _close_log(child: _Child) -> None:
        if child.log_file is not None:
            child.log_file.close()
            child.log_file = None

    # Status ------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """`status_extra` plus version, supervisor_pid, updated_at and, per child in start
        order: name, pid (None while backing off), state, restarts, started_at, last_exit
        ('signal SIGKILL (9)'), last_exit_code (Popen's), last_exit_at and, while backing
        off, restart_at. Times are ISO 8601 UTC."""
        now = time.monotonic()
        processes = []
        for child in self.children:
            entry = {
                "name": child.program.name,
                "pid": child.pid if child.state != BACKING_OFF else None,
                "state": child.state,
                "restarts": child.restarts,
                "started_at": child.started_wall,
                "last_exit": child.last_exit,
                "last_exit_code": child.last_exit_code,
                "last_exit_at": child.last_exit_wall,
            }
            if child.state == BACKING_OFF:  # wall-clock: the file is not rewritten per second
                entry["restart_at"] = _iso_in(max(0.0, child.restart_at - now))
            processes.append(entry)
        return {
            **self.status_extra,
            "version": STATUS_VERSION,
            "supervisor_pid": os.getpid(),
            "updated_at": _now_iso(),
            "processes": processes,
        }

    def write_status(self) -> None:
        """Replace the status file atomically: readers see the old or the new one, whole."""
        if self.status_path is None:
            return
        self.status_path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.status_path.with_name(f".{self.status_path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(self.status(), indent=1))
        os.replace(temporary, self.status_path)
