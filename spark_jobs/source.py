"""The `brokerd` Spark data source: topics as DataFrames, DataFrames into topics.

    from spark_jobs.source import register
    register(spark)
    df = (spark.read.format("brokerd")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "events")
          .option("startingOffsets", "earliest")
          .load())
    df.write.format("brokerd").mode("append").option("kafka.bootstrap.servers", ...)
          .option("topic", "copy").save()

Reading (reader.py, offsets.py) has the schema and options of Spark's own Kafka source;
writing (writer.py) takes key, value and optional headers, topic and partition columns.
Executors need `pyarrow` and `PYSPARK_PYTHON` pointing at an interpreter with this project.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from .reader import SPARK_SCHEMA, KafkaRangeReader
from .writer import KafkaWriter

NAME = "brokerd"


class BrokerdDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SPARK_SCHEMA

    def reader(self, schema: StructType) -> KafkaRangeReader:
        return KafkaRangeReader(self.options)

    def writer(self, schema: StructType, overwrite: bool) -> KafkaWriter:
        if overwrite:
            raise ValueError("topics are append-only: write with mode('append')")
        return KafkaWriter(self.options, {f.name: f.dataType.simpleString() for f in schema})


def register(spark: SparkSession) -> None:
    """Make `format("brokerd")` available in this session."""
    spark.dataSource.register(BrokerdDataSource)
