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
            return [_compare(log, reads)]
        finally:
            log.close()


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
