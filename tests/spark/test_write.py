"""The writer: DataFrames into topics, read back by real clients; retried tasks add nothing."""

from __future__ import annotations

from collections import Counter

import pytest

from spark_jobs.writer import MARK_HEADER

from .helpers import confluent_read_all


def test_dataframe_with_headers_and_partitions_read_back_by_confluent(
    spark, broker, client, make_topic
):
    topic = make_topic(3)
    rows = [
        (f"k{i}".encode(), f"v{i}".encode(), [(f"h{i % 3}", str(i).encode())], i % 3)
        for i in range(300)
    ]
    rows.append((None, b"keyless", [], 1))
    frame = spark.createDataFrame(
        rows,
        "key binary, value binary, headers array<struct<key string, value binary>>, partition int",
    )
    frame.write.format("brokerd").mode("append").option(
        "kafka.bootstrap.servers", broker.bootstrap
    ).option("topic", topic).save()

    high = client.admin.high_watermarks(topic)
    assert high == {0: 100, 1: 101, 2: 100}
    got = confluent_read_all(broker.bootstrap, topic, high)
    found = sorted(
        (
            m.key() or b"",
            m.value(),
            tuple(h for h in m.headers() if h[0] != MARK_HEADER),
            m.partition(),
        )
        for m in got
    )
    expected = sorted((k or b"", v, tuple(h), p) for k, v, h, p in rows)
    assert found == expected
    assert all(any(h[0] == MARK_HEADER for h in m.headers()) for m in got)


def test_string_key_and_value_with_a_topic_column(spark, broker, client, make_topic):
    first, second = make_topic(1, "-a"), make_topic(2, "-b")
    frame = spark.createDataFrame(
        [(f"k{i}", f"v{i}", first if i % 2 else second) for i in range(50)],
        "key string, value string, topic string",
    )
    frame.write.format("brokerd").mode("append").option(
        "kafka.bootstrap.servers", broker.bootstrap
    ).option("dedupe", "none").save()
    one = confluent_read_all(broker.bootstrap, first, client.admin.high_watermarks(first))
    two = confluent_read_all(broker.bootstrap, second, client.admin.high_watermarks(second))
    assert sorted(m.value() for m in one) == sorted(f"v{i}".encode() for i in range(1, 50, 2))
    assert sorted(m.value() for m in two) == sorted(f"v{i}".encode() for i in range(0, 50, 2))
    assert all(m.headers() is None for m in one + two)  # dedupe=none: no marker header


def test_bad_write_schema_is_refused(spark, broker):
    frame = spark.createDataFrame([(1,)], "value int")
    with pytest.raises(Exception, match="value must be binary or string"):
        frame.write.format("brokerd").mode("append").option(
            "kafka.bootstrap.servers", broker.bootstrap
        ).option("topic", "anything").save()


@pytest.mark.parametrize("mode", ["raise", "exit"])
def test_retried_write_task_writes_no_duplicates(spark, broker, client, make_topic, tmp_path, mode):
    topic = make_topic(3)
    # 20,000 rows in 4 Spark partitions; 2,000 rows are exact duplicates of others (equal
    # rows must still each be written once), 500 have no key.
    frame = spark.range(0, 20_000, numPartitions=4).selectExpr(
        "CASE WHEN id % 40 = 0 THEN NULL ELSE cast(cast(id % 18000 AS string) AS binary) END AS key",
        "cast(concat('value-', cast(id % 18000 AS string)) AS binary) AS value",
    )
    expected = Counter((r.key, r.value) for r in frame.collect())
    marker = tmp_path / "failed"
    failing = "1:3000" + (":exit" if mode == "exit" else "")
    frame.write.format("brokerd").mode("append").option(
        "kafka.bootstrap.servers", broker.bootstrap
    ).option("topic", topic).option("brokerd.test.failFirstAttemptAfter", failing).option(
        "brokerd.test.failureMarker", str(marker)
    ).save()
    assert marker.exists(), "the first attempt did not fail"

    high = client.admin.high_watermarks(topic)
    assert sum(high.values()) == 20_000
    got = confluent_read_all(broker.bootstrap, topic, high)
    assert Counter((m.key(), m.value()) for m in got) == expected
