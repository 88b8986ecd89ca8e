"""Run a job under spark-submit and follow it: log kept, progress parsed, cancel that kills.

Used by the Celery task (tasks/spark.py), usable from anything else. spark-submit runs in its
own session (process group): the JVM, its Python workers and the script all share it, so
cancelling signals the whole group (SIGTERM, then SIGKILL) and the Spark job really stops.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .session import PROGRESS, RESULT, ROOT

JOBS = {
    "load_topic": ROOT / "spark_jobs" / "load_topic.py",
    "ingest": ROOT / "spark_jobs" / "ingest.py",
}


@dataclass(frozen=True)
class Progress:
    """A job's BROKERD_PROGRESS line: Spark tasks and stages done of those seen so far."""

    tasks_done: int
    tasks_total: int
    stages_done: int = 0
    stages_total: int = 0

    @classmethod
    def parse(cls, line: str) -> Progress:
        found = json_after(PROGRESS, line)
        return cls(
            int(found["done"]),
            int(found["total"]),
            int(found.get("stages_done", 0)),
            int(found.get("stages_total", 0)),
        )


@dataclass
class Outcome:
    returncode: int | None
    result: dict | None
    cancelled: bool
    log_tail: list[str] = field(default_factory=list)
    pid: int | None = None

    @property
    def succeeded(self) -> bool:
        return self.returncode == 0 and self.result is not None and not self.cancelled


def json_after(marker: str, line: str) -> dict:
    """The JSON object after `marker` (PROGRESS, RESULT), wherever the marker sits in the
    line: the JVM writes to the same pipe (stderr is merged) and its output can share the
    line, before the marker or after the object (a console progress bar ends with a
    carriage return, not a newline)."""
    text = line[line.index(marker) + len(marker) :].lstrip()
    found, _end = json.JSONDecoder().raw_decode(text)
    return found


def spark_submit() -> str:
    """$SPARK_SUBMIT, else the spark-submit installed next to this interpreter (pyspark)."""
    return os.environ.get("SPARK_SUBMIT") or str(Path(sys.executable).parent / "spark-submit")


def command(
    job: str, arguments: list[str], *, master: str | None = None, conf: dict | None = None
) -> list[str]:
    parts = [spark_submit()]
    if master:
        parts += ["--master", master]
    for key, value in (conf or {}).items():
        parts += ["--conf", f"{key}={value}"]
    return [*parts, str(JOBS[job]), *arguments]


def job_environment() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
        "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else str(ROOT),
    }


def follow(
    argv: list[str],
    log_path: Path,
    *,
    on_progress: Callable[[Progress], None] = lambda progress: None,
    on_start: Callable[[int], None] = lambda pid: None,
    should_cancel: Callable[[], bool] = lambda: False,
    poll_interval: float = 0.5,
    kill_grace: float = 10.0,
) -> Outcome:
    """Run `argv`, appending its output to `log_path`, until it exits or is cancelled."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    lines: queue.Queue[str | None] = queue.Queue()
    tail: deque[str] = deque(maxlen=50)
    with open(log_path, "a", buffering=1) as log:
        process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            env=job_environment(),
            cwd=ROOT,
            start_new_session=True,
        )
        on_start(process.pid)

        def pump() -> None:
            for line in process.stdout:
                log.write(line)
                lines.put(line)
            lines.put(None)

        reader = threading.Thread(target=pump, name="spark-submit-output", daemon=True)
        reader.start()
        result: dict | None = None
        cancelled = False
        finished = False
        while not finished:
            try:
                line = lines.get(timeout=poll_interval)
            except queue.Empty:
                line = ""
            if line is None:
                finished = True
            elif line:
                tail.append(line.rstrip("\n"))
                if PROGRESS in line:
                    on_progress(Progress.parse(line))
                elif RESULT in line:
                    result = json_after(RESULT, line)
            if not cancelled and not finished and should_cancel():
                cancelled = True
                log.write("brokerd: cancelled, stopping the Spark job\n")
                stop_group(process.pid, kill_grace)
        process.wait()
        reader.join(5)
    return Outcome(process.returncode, result, cancelled, list(tail), process.pid)


def stop_group(pgid: int, grace: float = 10.0) -> None:
    """SIGTERM to a job's process group, SIGKILL to whatever is left after `grace`; returns
    once no process of the group runs (a killed process lingers a moment before it is gone),
    so a caller that reports the job stopped is right."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    _wait_group_gone(pgid, grace)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return
    _wait_group_gone(pgid, grace)


def _wait_group_gone(pgid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and group_alive(pgid):
        time.sleep(0.1)


def group_alive(pgid: int) -> bool:
    """Whether any process of this process group still runs (zombies do not count)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks since boot), None if there is no such process:
    with its pid, this names one process, whatever later reuses the pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else int(fields[19])
