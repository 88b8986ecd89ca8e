"""What both jobs share: a SparkSession for spark-submit or tests, and progress lines.

Jobs print machine-readable lines on stdout for whoever launched them (tasks/spark.py):
`BROKERD_PROGRESS {"done": .., "total": .., "stages": ..}` while Spark runs tasks, and one
`BROKERD_RESULT {...}` at the end.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

PROGRESS = "BROKERD_PROGRESS"
RESULT = "BROKERD_RESULT"
ROOT = Path(__file__).resolve().parents[1]


def emit(kind: str, payload: dict) -> None:
    print(f"{kind} {json.dumps(payload, sort_keys=True)}", flush=True)


def python_environment() -> None:
    """Python workers run this interpreter with the project importable (local masters);
    on a cluster, spark-submit's --py-files and spark.pyspark.python say otherwise."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    path = os.environ.get("PYTHONPATH", "")
    if str(ROOT) not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = f"{ROOT}{os.pathsep}{path}" if path else str(ROOT)


def build_session(app_name: str, master: str | None = None):
    """The session spark-submit configured; `local[*]` when no master was given anywhere."""
    python_environment()
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    from .source import register

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif not SparkConf().contains("spark.master"):
        builder = builder.master("local[*]")
    spark = (
        builder.config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    register(spark)
    return spark


class ProgressReporter:
    """Polls Spark's status tracker and prints task progress while a job runs."""

    def __init__(self, spark, interval: float = 0.5):
        self.tracker = spark.sparkContext.statusTracker()
        self.interval = interval
        self.stages: dict[int, tuple[int, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
        self._last: tuple[int, int] | None = None

    def __enter__(self) -> ProgressReporter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.poll()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def poll(self) -> None:
        try:
            for stage_id in self.tracker.getActiveStageIds():
                info = self.tracker.getStageInfo(stage_id)
                if info is not None:
                    self.stages[stage_id] = (info.numCompletedTasks, info.numTasks)
        except Exception:  # the JVM going away at shutdown must not fail the job
            return
        done = sum(d for d, _ in self.stages.values())
        total = sum(t for _, t in self.stages.values())
        if total and (done, total) != self._last:
            self._last = (done, total)
            emit(PROGRESS, {"done": done, "total": total, "stages": len(self.stages)})

    def finish(self) -> None:
        """Every stage seen is complete (the tracker forgets finished stages)."""
        self.stages = {s: (t, t) for s, (_, t) in self.stages.items()}
        total = sum(t for _, t in self.stages.values())
        emit(PROGRESS, {"done": total, "total": total, "stages": len(self.stages)})
