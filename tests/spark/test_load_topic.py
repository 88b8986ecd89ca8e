"""load_topic: topic -> Parquet by date, incremental, reload from a time, exact under retries."""

from __future__ import annotations

import datetime
import time

import pytest

from spark_jobs import load_topic
from spark_jobs.load_log import LoadLog

from .conftest import produce_confluent
from .helpers import parquet_records, topic_records


def load(broker, topic, output, *extra: str) -> dict:
    args = load_topic.parse_args(
        ["--bootstrap-servers", broker.bootstrap, "--topic", topic, "--output", str(output), *extra]
    )
    from pyspark.sql import SparkSession

    return load_topic.run(SparkSession.getActiveSession(), args)


def records(start: int, count: int):
    return [
        (f"key-{i}".encode(), f"value-{i}-{'x' * (i % 50)}".encode())
        for i in range(start, start + count)
    ]


def test_incremental_loads_and_reload_from_timestamp(spark, broker, client, make_topic, tmp_path):
    topic = make_topic(3)
    output = tmp_path / "out"
    produce_confluent(broker.bootstrap, topic, records(0, 100_000))

    first = load(broker, topic, output, "--load-id", "first")
    expected = topic_records(client, topic)
    assert len(expected) == 100_000
    assert parquet_records(output) == expected
    assert first["rows"] == 100_000
    assert sum(r["rows"] for r in first["partitions"].values()) == 100_000
    assert {
        int(p): r["end"] for p, r in first["partitions"].items()
    } == client.admin.high_watermarks(topic)
    assert all(name.startswith("date=") for name in first["files"])

    second = load(broker, topic, output, "--load-id", "second")
    assert second["rows"] == 0 and second["files"] == []
    assert parquet_records(output) == expected

    time.sleep(0.02)
    reload_from = int(time.time() * 1000)
    time.sleep(0.02)
    produce_confluent(broker.bootstrap, topic, records(100_000, 3_000))
    third = load(broker, topic, output, "--load-id", "third")
    assert third["rows"] == 3_000
    assert {p: r["start"] for p, r in third["partitions"].items()} == {
        p: r["end"] for p, r in first["partitions"].items()
    }
    everything = topic_records(client, topic)
    assert len(everything) == 103_000
    assert parquet_records(output) == everything

    reload = load(
        broker, topic, output, "--load-id", "reload", "--from-timestamp", str(reload_from)
    )
    assert reload["rows"] == 3_000  # exactly the records at or after the timestamp, again
    assert reload["partitions"] == third["partitions"]
    assert set(reload["replaced"]) == set(third["files"])  # superseded, not duplicated
    assert parquet_records(output) == everything

    # Rerunning a committed load id changes nothing.
    again = load(broker, topic, output, "--load-id", "third")
    assert again["already_committed"] and again["sequence"] == third["sequence"]
    assert parquet_records(output) == everything


@pytest.mark.parametrize("mode", ["raise", "exit"])
def test_task_failing_mid_range_is_retried_exactly(
    spark, broker, client, make_topic, tmp_path, mode
):
    topic = make_topic(3)
    produce_confluent(broker.bootstrap, topic, records(0, 12_000))
    marker = tmp_path / "failed"
    failing = f"{topic}:1:1000" + (":exit" if mode == "exit" else "")
    manifest = load(
        broker,
        topic,
        tmp_path / "out",
        "--max-records-per-partition",
        "2000",
        "--option",
        f"brokerd.test.failFirstAttemptAt={failing}",
        "--option",
        f"brokerd.test.failureMarker={marker}",
    )
    assert marker.exists(), "the first attempt did not fail"
    assert manifest["rows"] == 12_000
    assert parquet_records(tmp_path / "out") == topic_records(client, topic)


def test_load_dying_before_its_commit_is_redone_without_duplicates(
    spark, broker, client, make_topic, tmp_path, monkeypatch
):
    topic = make_topic(3)
    output = tmp_path / "out"
    produce_confluent(broker.bootstrap, topic, records(0, 5_000))
    load(broker, topic, output, "--load-id", "a")
    produce_confluent(broker.bootstrap, topic, records(5_000, 2_000))

    def die(self, manifest):
        raise SystemExit("killed between moving the files and writing the offsets")

    with monkeypatch.context() as patch:
        patch.setattr(LoadLog, "commit", die)
        with pytest.raises(SystemExit):
            load(broker, topic, output, "--load-id", "b")
    assert len(parquet_records(output)) > 5_000  # the dead load's files are there...
    assert LoadLog(output).manifest("b") is None  # ...but not committed

    redone = load(broker, topic, output, "--load-id", "b")
    assert redone["rows"] == 2_000
    assert parquet_records(output) == topic_records(client, topic)


def test_first_load_from_a_timestamp_skips_older_records(
    spark, broker, client, make_topic, tmp_path
):
    topic = make_topic(2)
    produce_confluent(broker.bootstrap, topic, records(0, 500))
    time.sleep(0.02)
    since = datetime.datetime.now(datetime.UTC)
    time.sleep(0.02)
    produce_confluent(broker.bootstrap, topic, records(500, 300))
    manifest = load(broker, topic, tmp_path / "out", "--from-timestamp", since.isoformat())
    assert manifest["rows"] == 300
    loaded = parquet_records(tmp_path / "out")
    assert sorted(key for _, _, key, _ in loaded) == sorted(k for k, _ in records(500, 300))
