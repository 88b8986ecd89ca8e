"""What both jobs share: a SparkSession for spark-submit or tests, and progress lines.

Jobs print machine-readable lines on stdout for whoever launched them (tasks/spark.py):
`BROKERD_PROGRESS {"done": .., "total": .., "stages_done": .., "stages_total": ..}` (Spark tasks
and stages) while Spark runs, and one `BROKERD_RESULT {...}` at the end.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
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
    """Polls Spark's status tracker while an action runs and prints its stages and tasks.

    The tracker (the driver's status store; no Spark UI or port needed, any master) lists
    every stage of a started job, pending ones included, so the totals are known as soon as
    a job starts. Stages of a finished job that never ran were skipped (their shuffle output
    was reused) and count nowhere, as in Spark's UI. Jobs that existed before the reporter
    started are someone else's.
    """

    SETTLE_S = 2.0  # how long finish() waits for the listener bus to report the jobs ended

    def __init__(self, spark, interval: float = 0.5):
        self.tracker = spark.sparkContext.statusTracker()
        self.interval = interval
        self._earlier_jobs = set(self._job_ids())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
        self._last: dict | None = None

    def __enter__(self) -> ProgressReporter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def _job_ids(self) -> list[int]:
        try:
            return list(self.tracker.getJobIdsForGroup(None))
        except Exception:  # the JVM going away at shutdown must not fail the job
            return []

    def stages(self) -> tuple[dict[int, tuple[int, int]], bool]:
        """{stage id: (tasks done, tasks)} of this reporter's jobs' stages that ran or will
        run, and whether all those jobs have ended."""
        found: dict[int, tuple[int, int]] = {}
        skipped: set[int] = set()
        all_ended = True
        try:
            for job_id in self._job_ids():
                job = None if job_id in self._earlier_jobs else self.tracker.getJobInfo(job_id)
                if job is None:
                    continue
                ended = job.status in ("SUCCEEDED", "FAILED")
                all_ended = all_ended and ended
                for stage_id in job.stageIds:
                    info = self.tracker.getStageInfo(stage_id)
                    if info is None:
                        continue
                    done = min(info.numCompletedTasks, info.numTasks)
                    if ended and done < info.numTasks and not info.numActiveTasks:
                        skipped.add(stage_id)
                    elif done >= found.get(stage_id, (-1, 0))[0]:
                        found[stage_id] = (done, info.numTasks)
        except Exception:
            return {}, False
        return {s: v for s, v in found.items() if s not in skipped or v[0] >= v[1]}, all_ended

    def poll(self) -> None:
        stages, _ = self.stages()
        self._emit(stages)

    def _emit(self, stages: dict[int, tuple[int, int]], force: bool = False) -> None:
        progress = {
            "done": sum(d for d, _ in stages.values()),
            "total": sum(t for _, t in stages.values()),
            "stages_done": sum(1 for d, t in stages.values() if d >= t),
            "stages_total": len(stages),
        }
        if progress["total"] and (force or progress != self._last):
            self._last = progress
            emit(PROGRESS, progress)

    def finish(self) -> None:
        """The action returned, so every stage that ran is complete; the status store hears
        of the last task and job ends a little later, so wait (bounded) for them first."""
        self._stop.set()
        self._thread.join(5)
        deadline = time.monotonic() + self.SETTLE_S
        stages, ended = self.stages()
        while not ended and time.monotonic() < deadline:
            time.sleep(0.1)
            stages, ended = self.stages()
        self._emit({s: (t, t) for s, (_, t) in stages.items()}, force=True)
