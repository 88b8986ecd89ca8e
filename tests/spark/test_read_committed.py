"""The data source reads read_committed by default (`kafka.isolation.level`, as Spark's Kafka
source names it): transactions a real client (confluent-kafka) committed, aborted and left
open; read_committed returns exactly the committed records and never markers, and stops at
the last stable offset; read_uncommitted returns every data record and no marker."""

from __future__ import annotations

import pytest

from tests.integration.test_client_read_committed import fill

TXN_PROPS = {
    "num_partitions": "1",
    "transaction_state_log_num_partitions": "3",
    "transaction_state_log_replication_factor": "1",
    "transaction_state_log_min_isr": "1",
}


def values(spark, broker, topic: str, **options) -> list[tuple[int, bytes]]:
    reader = (
        spark.read.format("brokerd")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return sorted((r.offset, bytes(r.value)) for r in reader.load().collect())


def test_read_committed_by_default_and_uncommitted_when_asked(spark, make_broker, topic_name):
    broker = make_broker(**TXN_PROPS).start()
    producer, _ = fill(broker.bootstrap, topic_name)  # o0 at offset 10 left open
    committed = [(0, b"c0"), (1, b"c1"), (4, b"x0"), (8, b"c2")]
    assert values(spark, broker, topic_name) == committed  # up to the LSO, 10
    uncommitted = values(spark, broker, topic_name, **{"kafka.isolation.level": "read_uncommitted"})
    assert uncommitted == [(0, b"c0"), (1, b"c1"), (3, b"a0"), (4, b"x0"), (5, b"a1"),
                           (8, b"c2"), (10, b"o0")]  # fmt: skip
    with pytest.raises(Exception, match="kafka.isolation.level must be read_committed"):
        values(spark, broker, topic_name, **{"kafka.isolation.level": "sometimes"})
    producer.abort_transaction(30)
