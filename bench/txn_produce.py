"""Transactional produce vs idempotent produce through one broker, in the same run.

A real ZooKeeper and one broker (bench.broker_throughput.BrokerUnderTest), a one-partition
topic, confluent-kafka (librdkafka) producers sending N records of 100 bytes. The peer is an
idempotent producer (enable.idempotence, acks=all) sending the same N records then flushing;
the measured side is a transactional producer sending them in transactions of 100 or 1,000
records (begin, produce, commit: AddPartitionsToTxn, EndTxn, the markers and the
coordinator's acks=all writes are all inside the time). Ratio = transactional records/s /
idempotent records/s; aim >= 0.8 at 1,000 records per transaction (issue 16), none at 100.
Cases alternate, best of three rounds each.
"""

from __future__ import annotations

import time
import uuid

from . import Result, say, scratch_dir

VALUE = b"v" * 100
AIM_AT_1000 = 0.8


def _idempotent(bootstrap: str, topic: str, records: int) -> float:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
    )
    producer.produce(topic, b"warm-up")
    producer.flush(30)
    began = time.perf_counter()
    for _ in range(records):
        producer.produce(topic, VALUE)
    if producer.flush(60):
        raise RuntimeError("idempotent records left unsent")
    return records / (time.perf_counter() - began)


def _transactional(bootstrap: str, topic: str, records: int, per_txn: int) -> float:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"bench-{uuid.uuid4()}",
            "linger.ms": 5,
        }
    )
    producer.init_transactions(30)
    began = time.perf_counter()
    for start in range(0, records, per_txn):
        producer.begin_transaction()
        for _ in range(min(per_txn, records - start)):
            producer.produce(topic, VALUE)
        producer.commit_transaction(60)
    return records / (time.perf_counter() - began)


def run(quick: bool) -> list[Result]:
    from bench.broker_throughput import BrokerUnderTest

    records = 20_000 if quick else 100_000
    rounds = 1 if quick else 3
    with scratch_dir("txn-produce") as directory:
        broker = BrokerUnderTest(
            directory,
            transaction_state_log_num_partitions="1",
            transaction_state_log_replication_factor="1",
            transaction_state_log_min_isr="1",
        )
        try:
            broker.create_topic("txn-bench")
            results = []
            for per_txn in (100, 1000):
                idempotent, transactional = [], []
                for _ in range(rounds):
                    idempotent.append(_idempotent(broker.bootstrap, "txn-bench", records))
                    transactional.append(
                        _transactional(broker.bootstrap, "txn-bench", records, per_txn)
                    )
                best_idempotent, best_transactional = max(idempotent), max(transactional)
                say(
                    f"txn_produce: {per_txn}/txn {best_transactional:.0f} rec/s vs idempotent "
                    f"{best_idempotent:.0f} rec/s"
                )
                results.append(
                    Result(
                        benchmark="txn_produce",
                        case=f"transactions of {per_txn} records vs idempotent ({records} x 100 B)",
                        unit="records/s",
                        measured_label="transactional",
                        measured=best_transactional,
                        peer_label="idempotent",
                        peer=best_idempotent,
                        ratio=best_transactional / best_idempotent,
                        aim_at_least=AIM_AT_1000 if per_txn == 1000 else None,
                    )
                )
            return results
        finally:
            broker.stop()
