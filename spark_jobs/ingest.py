"""Ingest CSV, JSON or Parquet files into a topic through the brokerd data source.

    spark-submit spark_jobs/ingest.py --bootstrap-servers 127.0.0.1:9092 --topic events \
        --input /data/events.csv --format csv [--key-column id] [--value-column payload]

The value is `--value-column` (strings and binary as they are, other types as text) or,
without it, the row as JSON (every column but the partition and header columns);
`--key-column`, `--partition-column` and `--header-columns a,b` are optional. Records are
produced idempotently with acks=all; a retried Spark task writes no duplicates (see
writer.py). Prints one BROKERD_RESULT line with the rows written and offsets per partition.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_jobs.security import options_from_properties
from spark_jobs.session import RESULT, ProgressReporter, build_session, emit

FORMATS = ("csv", "json", "parquet")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ingest", description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--input", required=True, action="append", help="file or directory")
    parser.add_argument("--format", choices=FORMATS, help="default: from the file suffix")
    parser.add_argument("--key-column")
    parser.add_argument("--value-column")
    parser.add_argument("--partition-column")
    parser.add_argument("--header-columns", default="", help="comma-separated")
    parser.add_argument("--no-csv-header", action="store_true", help="CSV without a header")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, or local[*])")
    parser.add_argument(
        "--command-config",
        help="a Kafka client .properties for a secured cluster (security.protocol, sasl.*, "
        "ssl.* with PEM stores): passed to the data source as kafka.* options",
    )
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    if args.format is None:
        suffix = Path(args.input[0]).suffix.lstrip(".").lower()
        if suffix not in FORMATS:
            parser.error("give --format (csv, json or parquet)")
        args.format = suffix
    for item in args.option:
        if "=" not in item:
            parser.error(f"--option {item!r} is not KEY=VALUE")
    if args.command_config:
        try:
            args.option += options_from_properties(args.command_config)
        except OSError as exc:
            parser.error(f"--command-config {args.command_config}: {exc.strerror}")
    return args


def records_frame(spark, args: argparse.Namespace):
    """The input as the writer's columns: key, value, headers, partition."""
    from pyspark.sql import functions as F

    reader = spark.read.format(args.format)
    if args.format == "csv":
        reader = reader.option("header", str(not args.no_csv_header).lower())
    frame = reader.load(args.input)
    header_columns = [c for c in args.header_columns.split(",") if c]
    missing = {args.key_column, args.value_column, args.partition_column, *header_columns}
    missing = sorted(c for c in missing - set(frame.columns) if c)
    if missing:
        raise SystemExit(f"no such columns in the input: {missing} (it has {frame.columns})")
    special = {args.partition_column, *header_columns}
    if args.value_column:
        value = _as_binary(frame, args.value_column)
    else:
        rest = [c for c in frame.columns if c not in special]
        value = F.to_json(F.struct(*rest)).cast("binary")
    columns = [value.alias("value")]
    if args.key_column:
        columns.append(_as_binary(frame, args.key_column).alias("key"))
    if args.partition_column:
        columns.append(F.col(args.partition_column).cast("int").alias("partition"))
    if header_columns:
        headers = [
            F.struct(F.lit(c).alias("key"), F.col(c).cast("string").cast("binary").alias("value"))
            for c in header_columns
        ]
        columns.append(F.array(*headers).alias("headers"))
    return frame.select(*columns)


def _as_binary(frame, name: str):
    from pyspark.sql import functions as F

    kind = dict(frame.dtypes)[name]
    column = F.col(name)
    return column if kind == "binary" else column.cast("string").cast("binary")


def run(spark, args: argparse.Namespace) -> dict:
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        writer = (
            records_frame(spark, args)
            .write.format("brokerd")
            .mode("append")
            .option("kafka.bootstrap.servers", args.bootstrap_servers)
            .option("topic", args.topic)
            .option("reportPath", str(report))
        )
        for item in args.option:
            key, value = item.split("=", 1)
            writer = writer.option(key, value)
        with ProgressReporter(spark) as progress:
            writer.save()
            progress.finish()
        summary = json.loads(report.read_text())
    return {
        "topic": args.topic,
        "inputs": args.input,
        "rows": summary["written"],
        **summary,
        "duration_s": round(time.monotonic() - started, 3),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    spark = build_session(f"ingest {args.topic}", args.master)
    try:
        emit(RESULT, run(spark, args))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
