"""ingest: files into a topic, by spark-submit and in process; read back with kafka-python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from spark_jobs import ingest
from spark_jobs.session import RESULT

from .conftest import ROOT, spark_environment


def kafka_python_read(bootstrap: str, topic: str, count: int) -> list:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
    consumer.assign(partitions)
    consumer.seek_to_beginning()
    found = []
    try:
        for _ in range(100):
            for batch in consumer.poll(timeout_ms=500).values():
                found.extend(batch)
            if len(found) >= count:
                break
    finally:
        consumer.close()
    return found


def test_csv_by_spark_submit(broker, make_topic, tmp_path):
    topic = make_topic(3)
    source = tmp_path / "people.csv"
    source.write_text("id,name,city\n" + "".join(f"{i},name{i},city{i % 7}\n" for i in range(500)))
    environment = {**os.environ, **spark_environment(), "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "spark-submit"),
            "--master",
            "local[2]",
            str(ROOT / "spark_jobs" / "ingest.py"),
            "--bootstrap-servers",
            broker.bootstrap,
            "--topic",
            topic,
            "--input",
            str(source),
            "--key-column",
            "id",
            "--header-columns",
            "city",
        ],
        capture_output=True,
        text=True,
        env=environment,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    result = json.loads(lines[-1].split(" ", 1)[1])
    assert result["rows"] == 500
    assert sum(last - first + 1 for first, last in result["offsets"].values()) == 500

    got = kafka_python_read(broker.bootstrap, topic, 500)
    assert sorted(int(m.key) for m in got) == list(range(500))
    for message in got:
        i = int(message.key)
        assert json.loads(message.value) == {"id": str(i), "name": f"name{i}"}  # not city
        assert (b"city%d" % (i % 7)) in [v for k, v in message.headers if k == "city"]


def test_json_and_parquet_in_process(spark, broker, make_topic, tmp_path):
    topic = make_topic(2)
    (tmp_path / "rows.json").write_text(
        "".join(json.dumps({"user": f"u{i}", "payload": f"p{i}"}) + "\n" for i in range(40))
    )
    pq.write_table(
        pa.table(
            {"user": [f"q{i}" for i in range(60)], "payload": [b"bin%d" % i for i in range(60)]}
        ),
        tmp_path / "rows.parquet",
    )
    for name in ("rows.json", "rows.parquet"):
        args = ingest.parse_args(
            [
                "--bootstrap-servers",
                broker.bootstrap,
                "--topic",
                topic,
                "--input",
                str(tmp_path / name),
                "--key-column",
                "user",
                "--value-column",
                "payload",
            ]
        )
        ingest.run(spark, args)
    got = kafka_python_read(broker.bootstrap, topic, 100)
    values = {m.key: m.value for m in got}
    assert len(got) == 100
    assert values[b"u3"] == b"p3" and values[b"q7"] == b"bin7"
