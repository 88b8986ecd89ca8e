"""Load a topic into Parquet, partitioned by date, incrementally and without duplicates.

    spark-submit spark_jobs/load_topic.py --bootstrap-servers 127.0.0.1:9092 \
        --topic events --output /data/events [--load-id ID] [--from-timestamp T]

Each load reads, per partition, from where the last committed load ended (the earliest
offset the first time) up to the high watermark it sees when it starts; `--from-timestamp`
(ms since the epoch or ISO 8601) reloads from the first offset at or after that time,
replacing the rows already loaded from there. Output and offsets are committed together
(see load_log.py): rerunning a load id that committed does nothing, rerunning one that died
redoes it, and Spark's retried tasks never duplicate (its file commit protocol keeps one
attempt's files per task). Prints BROKERD_PROGRESS lines and one BROKERD_RESULT line.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_jobs.load_log import LoadLog
from spark_jobs.offsets import isolation_level
from spark_jobs.security import client_security, options_from_properties
from spark_jobs.session import RESULT, ProgressReporter, build_session, emit

READ_COMMITTED = 1

LOAD_ID = re.compile(r"^[A-Za-z0-9._-]{1,100}$")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="load_topic", description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--output", required=True, help="a directory (local or shared)")
    parser.add_argument("--load-id", help="names this load; rerunning an id is idempotent")
    parser.add_argument("--from-timestamp", help="reload from this time (ms or ISO 8601)")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    parser.add_argument(
        "--command-config",
        help="a Kafka client .properties for a secured cluster (security.protocol, sasl.*, "
        "ssl.* with PEM stores): passed to the data source as kafka.* options",
    )
    parser.add_argument("--max-records-per-partition", type=int)
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option for the brokerd reader (e.g. kafka.request.timeout.ms=60000)",
    )
    args = parser.parse_args(argv)
    args.load_id = args.load_id or (
        datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    )
    if not LOAD_ID.match(args.load_id):
        parser.error("--load-id may hold letters, digits, '.', '_' and '-' only")
    if args.from_timestamp is not None:
        args.from_timestamp = parse_timestamp(args.from_timestamp, parser)
    for item in args.option:
        if "=" not in item:
            parser.error(f"--option {item!r} is not KEY=VALUE")
    if args.command_config:
        try:
            args.option += options_from_properties(args.command_config)
        except OSError as exc:
            parser.error(f"--command-config {args.command_config}: {exc.strerror}")
    return args


def parse_timestamp(text: str, parser: argparse.ArgumentParser | None = None) -> int:
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        if parser is None:
            raise
        parser.error(f"--from-timestamp {text!r} is neither milliseconds nor ISO 8601")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def plan(args: argparse.Namespace, log: LoadLog) -> dict[int, dict[str, int]]:
    """Per partition, the [start, end) this load reads."""
    from brokerd.client import SyncClient

    options = dict(item.split("=", 1) for item in args.option)
    security = client_security(options)
    with SyncClient(
        args.bootstrap_servers, client_id="brokerd-load-topic", security=security
    ) as client:
        earliest = client.admin.earliest_offsets(args.topic)
        latest = client.admin.high_watermarks(args.topic)
        if isolation_level(options) == READ_COMMITTED:
            # Up to the last stable offset: an open transaction's records are read by the
            # next load, once decided (committed ones then, aborted ones never).
            stable = client.admin.list_offsets(
                {(args.topic, p): "latest" for p in latest}, isolation_level=READ_COMMITTED
            )
            latest = {p: found.offset for (_t, p), found in stable.items()}
        at_time = (
            client.admin.offsets_for_time(args.topic, args.from_timestamp)
            if args.from_timestamp is not None
            else {}
        )
    previous = log.next_offsets(args.topic)
    ranges = {}
    for p in sorted(latest):
        start = previous.get(p, earliest[p])
        if p in at_time:
            from_time = at_time[p] if at_time[p] >= 0 else latest[p]
            # A reload never starts later than the incremental load would (no gap); a first
            # load from a time skips what came before it.
            start = min(start, from_time) if p in previous else from_time
        if start > latest[p]:
            raise RuntimeError(
                f"{args.topic}-{p}: the last load ended at {start} but the high watermark "
                f"is {latest[p]} (was the topic recreated or truncated?)"
            )
        ranges[p] = {"start": start, "end": latest[p]}
    return ranges


def run(spark, args: argparse.Namespace) -> dict:
    """One load; returns its manifest (the committed one when the id already committed)."""
    log = LoadLog(Path(args.output))
    with log.locked():
        done = log.manifest(args.load_id)
        if done is not None:
            return {**done, "already_committed": True}
        log.recover()
        started = time.monotonic()
        ranges = plan(args, log)
        staging = log.staging(args.load_id)
        loaded: list[str] = []
        rewritten: list[str] = []
        replaced: list[str] = []
        if any(r["end"] > r["start"] for r in ranges.values()):
            _read_into(spark, args, ranges, staging)
            if args.from_timestamp is not None:
                replaced, rewritten = _supersede(log, args.load_id, ranges)
            loaded = _move_staged(log, staging, args.load_id)
        rows = _rows_per_partition(log.output, loaded)
        for p, r in ranges.items():
            r["rows"] = rows.get(p, 0)
        manifest = {
            "load_id": args.load_id,
            "sequence": max((m["sequence"] for m in log.manifests()), default=0) + 1,
            "topic": args.topic,
            "bootstrap_servers": args.bootstrap_servers,
            "from_timestamp": args.from_timestamp,
            "partitions": {str(p): r for p, r in ranges.items()},
            "files": loaded + rewritten,
            "replaced": replaced,
            "rows": sum(rows.values()),
            "bytes": sum((log.output / f).stat().st_size for f in loaded),
            "duration_s": round(time.monotonic() - started, 3),
            "committed_at": datetime.datetime.now(datetime.UTC).isoformat(),
        }
        log.commit(manifest)
        return manifest


def _read_into(spark, args: argparse.Namespace, ranges: dict, staging: Path) -> None:
    from pyspark.sql import functions as F

    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    reader = (
        spark.read.format("brokerd")
        .option("kafka.bootstrap.servers", args.bootstrap_servers)
        .option("subscribe", args.topic)
        .option(
            "startingOffsets",
            json.dumps({args.topic: {str(p): r["start"] for p, r in ranges.items()}}),
        )
        .option(
            "endingOffsets", json.dumps({args.topic: {str(p): r["end"] for p, r in ranges.items()}})
        )
    )
    if args.max_records_per_partition:
        reader = reader.option("maxRecordsPerPartition", str(args.max_records_per_partition))
    for item in args.option:
        key, value = item.split("=", 1)
        reader = reader.option(key, value)
    frame = reader.load().withColumn("date", F.to_date("timestamp"))
    with ProgressReporter(spark) as progress:
        frame.write.mode("overwrite").partitionBy("date").parquet(str(staging))
        progress.finish()


def _move_staged(log: LoadLog, staging: Path, load_id: str) -> list[str]:
    moved = []
    for number, source in enumerate(sorted(staging.rglob("*.parquet"))):
        relative_dir = source.parent.relative_to(staging)
        target_dir = log.output / relative_dir
        target_dir.mkdir(parents=True, exist_ok=True)
        target = target_dir / f"part-{load_id}-{number:05d}.parquet"
        os.replace(source, target)
        moved.append(str(target.relative_to(log.output)))
    return moved


def _supersede(log: LoadLog, load_id: str, ranges: dict) -> tuple[list[str], list[str]]:
    """Rewrite live files without the rows this reload reads again; (replaced, new files)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    replaced, rewritten = [], []
    for number, name in enumerate(log.live_files()):
        path = log.output / name
        table = pq.read_table(path, partitioning=None)
        reloaded = None
        for p, r in ranges.items():
            rows = pc.and_(
                pc.equal(table["partition"], p), pc.greater_equal(table["offset"], r["start"])
            )
            reloaded = rows if reloaded is None else pc.or_(reloaded, rows)
        if reloaded is None or not pc.any(reloaded).as_py():
            continue
        replaced.append(name)
        kept = table.filter(pc.invert(reloaded))
        if kept.num_rows:
            target = path.parent / f"part-{load_id}-r{number:05d}.parquet"
            pq.write_table(kept, target)
            rewritten.append(str(target.relative_to(log.output)))
    return replaced, rewritten


def _rows_per_partition(output: Path, files: list[str]) -> dict[int, int]:
    import pyarrow.parquet as pq

    counts: dict[int, int] = {}
    for name in files:
        column = pq.read_table(output / name, columns=["partition"])["partition"]
        for p, n in _value_counts(column):
            counts[p] = counts.get(p, 0) + n
    return counts


def _value_counts(column) -> list[tuple[int, int]]:
    counted = column.value_counts()
    return list(
        zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist(), strict=True)
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    spark = build_session(f"load_topic {args.topic}", args.master)
    try:
        emit(RESULT, run(spark, args))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
