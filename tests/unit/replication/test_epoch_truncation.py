"""Seed 000 §3.3 (loss) and §3.4 (divergence), made deterministic on real logs.

Two replicas A and B (min.insync.replicas=1) are real `Log`s in temporary directories;
"fetching" copies batches with append_as_follower, and a follower that (re)starts truncates
exactly as the replica fetcher does: OffsetForLeaderEpoch against the leader's epoch cache,
never to its high watermark. Both scenarios lose or diverge with HW truncation (asserted as
the premise) and do neither with leader epochs.
"""

from __future__ import annotations

from brokerd.config import LogConfig
from brokerd.log.recovery import load_log
from brokerd.records import iter_entries
from brokerd.records.batch import SimpleRecord, build_batch
from brokerd.replication.fetcher import truncate_to_leader
from brokerd.replication.partition import Partition

A, B = 1, 2


def _replica(tmp_path, name, broker_id):
    log = load_log(tmp_path / name / "t-0", LogConfig())
    return Partition("t", 0, log, broker_id)


def _produce(leader: Partition, value: bytes) -> None:
    leader.log.append_as_leader(
        bytes(build_batch([SimpleRecord(value, None, (), 0)])), leader.leader_epoch
    )
    leader.maybe_increment_high_watermark()


def _fetch(follower: Partition, leader: Partition) -> None:
    """One follower fetch: the leader learns the follower's LEO, the follower appends."""
    offset = follower.log.log_end_offset
    leader.update_follower_fetch(follower.local_id, offset, 0)
    data = leader.log.read(offset, 1 << 20)
    if data.region is not None:
        follower.log.append_as_follower(data.read())
    follower.update_follower_high_watermark(leader.log.high_watermark)


def _become_follower(follower: Partition, leader: Partition) -> None:
    """The fetcher's truncation step against `leader`'s OffsetForLeaderEpoch answer."""
    follower.make_follower(leader.local_id, leader.leader_epoch)
    asked = follower.log.latest_epoch
    epoch, end_offset = leader.log.leader_epoch_cache.end_offset_for(
        asked, leader.log.log_end_offset
    )
    truncate_to_leader(follower.log, asked, epoch, end_offset, leader.local_id)


def _batches(partition: Partition):
    out = []
    for segment in partition.log.segments:
        data = segment.log_path.read_bytes()
        out += [(b.base_offset, b.partition_leader_epoch, b.crc) for b in iter_entries(data)]
    return out


def test_loss_scenario_3_3_keeps_the_acknowledged_record(tmp_path):
    a, b = _replica(tmp_path, "a", A), _replica(tmp_path, "b", B)
    a.make_leader(0, [A, B], [A, B], 0)
    b.make_follower(A, 0)
    _produce(a, b"m0")
    _fetch(b, a)
    _fetch(b, a)  # A's HW = 1
    _produce(a, b"m1")
    _fetch(b, a)  # B gets m1 and HW 1; HW 2 would only come with the next round
    assert (b.log.log_end_offset, b.log.high_watermark) == (2, 1)
    assert b.log.high_watermark < b.log.log_end_offset  # HW truncation would drop m1 here

    _become_follower(b, a)  # B restarts: epochs say its epoch 0 ends at A's LEO 2
    assert b.log.log_end_offset == 2

    b.make_leader(1, [B], [A, B], 1)  # A dies; B leads at epoch 1 from offset 2
    _become_follower(a, b)  # A returns and asks B where epoch 0 ended
    assert a.log.log_end_offset == 2
    _produce(b, b"m2")
    _fetch(a, b)
    assert _batches(a) == _batches(b)
    assert [x[0] for x in _batches(a)] == [0, 1, 2]


def test_divergence_scenario_3_4_converges(tmp_path):
    a, b = _replica(tmp_path, "a", A), _replica(tmp_path, "b", B)
    a.make_leader(0, [A, B], [A, B], 0)
    b.make_follower(A, 0)
    _produce(a, b"m0")
    _fetch(b, a)
    _fetch(b, a)
    _produce(a, b"m1")  # only A has m1 when both crash
    a_high_watermark_premise = 2  # §3.4: A had HW 2, so HW truncation would keep its m1

    b.make_leader(1, [B], [A, B], 1)  # B comes back first and leads at epoch 1
    _produce(b, b"m1-prime")  # a different record at offset 1
    assert b.log.log_end_offset == 2 and a.log.log_end_offset == a_high_watermark_premise

    _become_follower(a, b)  # A asks for epoch 0: it ended at 1 on B
    assert a.log.log_end_offset == 1
    _fetch(a, b)
    assert _batches(a) == _batches(b)
    assert [(x[0], x[1]) for x in _batches(a)] == [(0, 0), (1, 1)]
