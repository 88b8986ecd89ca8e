"""read_committed vs read_uncommitted reads of the same transactional log (the broker's side
of a Fetch: what the fetch handler asks the log for, per partition).

One log of transactions of 100 records (two producers interleaving, one transaction in ten
aborted), 1 KiB records in batches of 10, segments of 16 MiB so the aborted-transaction
index spans many segments. A read_uncommitted read is `Log.read(offset, 1 MiB,
max_offset=HW)` and the region's bytes read out of the page cache (what the fetch's
sendfile then moves); a read_committed one is the same with max_offset=LSO, plus
`Log.aborted_transactions_for_read` (the `.txnindex` search of Kafka's
collectAbortedTransactions). Both at the same random offsets, alternating in blocks. Ratio =
median uncommitted time / median committed time; aim >= 0.9.

A second case measures the whole path with a client: a real ZooKeeper and broker, one
partition filled by a confluent-kafka transactional producer (transactions of 100 records of
1 KiB, one in ten aborted), read from the start to its end by a confluent-kafka consumer
with isolation.level read_committed and by one with read_uncommitted after a warm-up read,
alternating, best of three each (five in a full run). Ratio = uncommitted time / committed time over the same log; aim >= 0.9.
"""

from __future__ import annotations

import random
import time

from brokerd.config import LogConfig
from brokerd.log.log import Log
from brokerd.log.recovery import load_log
from brokerd.records.batch import SimpleRecord, build_batch

from . import MIB, Result, median, say, scratch_dir

RECORD = b"x" * 1024
RECORDS_PER_BATCH = 10
BATCHES_PER_TXN = 10  # transactions of 100 records
ABORT_EVERY = 10
SEGMENT_BYTES = 16 * MIB
READ_BYTES = MIB
BLOCK = 25
AIM_AT_LEAST = 0.9


def run(quick: bool) -> list[Result]:
    transactions = 200 if quick else 1000
    reads = 1000 if quick else 4000
    config = LogConfig().with_overrides(segment_bytes=SEGMENT_BYTES)
    with scratch_dir("txn-read") as directory:
        log = load_log(directory / "txn-0", config, had_clean_shutdown=True)
        try:
            _fill(log, transactions)
            say(
                f"txn_read: {transactions} transactions, {log.log_end_offset} offsets, "
                f"{len(log.segments)} segments"
            )
            results = [_compare(log, reads)]
        finally:
            log.close()
    results.append(_through_a_broker(transactions, rounds=3 if quick else 5))
    return results


def _through_a_broker(transactions: int, rounds: int) -> Result:
    from confluent_kafka import Producer

    from bench.broker_throughput import BrokerUnderTest

    with scratch_dir("txn-read-broker") as directory:
        broker = BrokerUnderTest(
            directory,
            transaction_state_log_num_partitions="1",
            transaction_state_log_replication_factor="1",
            transaction_state_log_min_isr="1",
        )
        try:
            broker.create_topic("txn-read")
            producer = Producer(
                {"bootstrap.servers": broker.bootstrap, "transactional.id": "txn-read-fill"}
            )
            producer.init_transactions(30)
            records_per_txn = RECORDS_PER_BATCH * BATCHES_PER_TXN
            committed = 0
            for number in range(transactions):
                producer.begin_transaction()
                for _ in range(records_per_txn):
                    producer.produce("txn-read", RECORD, partition=0)
                if number % ABORT_EVERY == ABORT_EVERY - 1:
                    producer.flush(60)  # in the log: abort would drop records still queued
                    producer.abort_transaction(60)
                else:
                    producer.commit_transaction(60)
                    committed += records_per_txn
            total = transactions * records_per_txn
            times: dict[str, list[float]] = {"read_committed": [], "read_uncommitted": []}
            sides = (("read_uncommitted", total), ("read_committed", committed))
            _consume(broker.bootstrap, "read_uncommitted", total)  # warm-up: page cache, index
            for number in range(rounds):
                for isolation, count in sides if number % 2 == 0 else sides[::-1]:
                    times[isolation].append(_consume(broker.bootstrap, isolation, count))
            uncommitted, committed_s = min(times["read_uncommitted"]), min(times["read_committed"])
            say(
                f"txn_read (broker): {total} records, read_uncommitted {uncommitted:.2f} s, "
                f"read_committed {committed_s:.2f} s"
            )
            return Result(
                benchmark="txn_read",
                case=f"confluent-kafka consumer, the whole log ({total} x 1 KiB, 1 txn in "
                f"{ABORT_EVERY} aborted): read_committed vs read_uncommitted",
                unit="s per read of the log",
                measured_label="read_committed",
                measured=committed_s,
                peer_label="read_uncommitted",
                peer=uncommitted,
                ratio=uncommitted / committed_s,
                aim_at_least=AIM_AT_LEAST,
            )
        finally:
            broker.stop()


def _consume(bootstrap: str, isolation: str, expected: int) -> float:
    """Seconds for a fresh consumer to receive `expected` records from offset 0."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"txn-read-{isolation}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition("txn-read", 0, 0)])
        received = 0
        began = time.perf_counter()
        deadline = began + 120
        while received < expected:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{isolation}: {received} of {expected} records")
            for message in consumer.consume(1000, timeout=1):
                if message.error() is None:
                    received += 1
        return time.perf_counter() - began
    finally:
        consumer.close()


def _fill(log: Log, transactions: int) -> None:
    now = int(time.time() * 1000)
    records = [SimpleRecord(RECORD, None, (), now)] * RECORDS_PER_BATCH
    sequences = {1: 0, 2: 0}
    for number in range(transactions):
        pid = 1 + number % 2
        for _ in range(BATCHES_PER_TXN):
            batch = build_batch(
                records,
                producer_id=pid,
                producer_epoch=0,
                base_sequence=sequences[pid],
                is_transactional=True,
            )
            log.append_as_leader(batch, 0)
            sequences[pid] += RECORDS_PER_BATCH
        log.append_end_txn_marker(pid, 0, 0, commit=number % ABORT_EVERY != 0, leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    if log.last_stable_offset != log.high_watermark:
        raise AssertionError("every transaction ended, so the LSO must be the HW")


def _uncommitted(log: Log, offset: int) -> None:
    log.read(offset, READ_BYTES, max_offset=log.high_watermark).read()


def _committed(log: Log, offset: int) -> None:
    data = log.read(offset, READ_BYTES, max_offset=log.last_stable_offset)
    log.aborted_transactions_for_read(data)
    data.read()


def _compare(log: Log, reads: int) -> Result:
    generator = random.Random(7)
    offsets = [generator.randrange(log.log_end_offset) for _ in range(reads)]
    for offset in offsets[:BLOCK]:  # warm-up
        _uncommitted(log, offset)
        _committed(log, offset)
    times: dict[str, list[float]] = {"uncommitted": [], "committed": []}
    clock = time.perf_counter
    sides = (("uncommitted", _uncommitted), ("committed", _committed))
    for block_number, start in enumerate(range(0, reads, BLOCK)):
        block = offsets[start : start + BLOCK]
        for name, read in sides if block_number % 2 == 0 else sides[::-1]:
            for offset in block:
                began = clock()
                read(log, offset)
                times[name].append(clock() - began)
    uncommitted = median(times["uncommitted"]) * 1e6
    committed = median(times["committed"]) * 1e6
    return Result(
        benchmark="txn_read",
        case="read_committed vs read_uncommitted (1 MiB: Log.read + its bytes)",
        unit="µs per read",
        measured_label="read_committed",
        measured=committed,
        peer_label="read_uncommitted",
        peer=uncommitted,
        ratio=uncommitted / committed,
        aim_at_least=AIM_AT_LEAST,
    )
