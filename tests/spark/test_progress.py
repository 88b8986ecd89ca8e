"""The progress lines jobs print (spark_jobs/session.py ProgressReporter), from Spark's status
tracker on a real local Spark: a query of several stages reports them one after the other,
counts the stages Spark skipped nowhere, and ends with every stage and task done."""

from __future__ import annotations

import json

from spark_jobs.session import PROGRESS, ProgressReporter


def progress_lines(text: str) -> list[dict]:
    return [
        json.loads(line.split(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(PROGRESS + " ")
    ]


def test_a_shuffling_query_reports_its_stages_and_tasks(spark, tmp_path, capsys):
    from pyspark.sql import functions as F

    spark.range(10).count()  # an earlier job: not the reporter's
    tracker = spark.sparkContext.statusTracker()
    earlier_jobs = set(tracker.getJobIdsForGroup(None))
    capsys.readouterr()
    frame = spark.range(0, 200_000, numPartitions=4).withColumn("k", F.col("id") % 7)
    with ProgressReporter(spark, interval=0.05) as progress:
        frame.groupBy("k").agg(F.sum("id")).repartition(3).write.parquet(str(tmp_path / "out"))
        progress.finish()
    lines = progress_lines(capsys.readouterr().out)

    assert lines, "no progress was printed"
    last = lines[-1]
    # The aggregation's map stage (4 tasks) and the write after the exchange both ran.
    assert last["stages_done"] == last["stages_total"] >= 2
    assert last["done"] == last["total"] >= 4 + 1
    assert all(line["done"] <= line["total"] for line in lines)
    assert all(line["stages_done"] <= line["stages_total"] for line in lines)
    # Before the end it was inside an earlier stage than the last one.
    assert any(line["stages_done"] < last["stages_total"] for line in lines[:-1])
    # The stages that ran, as Spark's status store has them once all is over: skipped ones
    # (a later job reusing an earlier one's shuffle output) ran no task and count nowhere.
    ran, skipped = {}, set()
    for job in set(tracker.getJobIdsForGroup(None)) - earlier_jobs:
        for stage_id in tracker.getJobInfo(job).stageIds:
            info = tracker.getStageInfo(stage_id)
            if info.numCompletedTasks >= info.numTasks:
                ran[stage_id] = info.numTasks
            else:
                skipped.add(stage_id)
    assert skipped - set(ran), "this query was expected to skip a reused stage"
    assert (last["stages_total"], last["total"]) == (len(ran), sum(ran.values()))
