"""When the leader next checks its ISR: Kafka's half-lag cadence, or as soon as the first ISR
follower's replica.lag.time.max.ms runs out, so a stopped follower leaves the ISR one lag
after it last caught up rather than up to half a lag later (issue 15's ISR shrink aim)."""

from __future__ import annotations

from brokerd.replication.partition import (
    ISR_CHECK_FLOOR_MS,
    Partition,
    isr_check_delay_ms,
    now_ms,
)
from tests.unit.log.helpers import open_log

LAG_MS = 3000


def _leader(tmp_path, isr: list[int]) -> Partition:
    partition = Partition("t", 0, open_log(tmp_path / "t-0"), local_id=1)
    partition.make_leader(0, isr=isr, replicas=[1, 2, 3], zk_version=0)
    return partition


def test_the_next_check_comes_when_the_first_follower_runs_out_of_lag(tmp_path):
    leader = _leader(tmp_path, [1, 2, 3])
    start = now_ms() + 10_000  # after make_leader's own clock reading
    leo = leader.log.log_end_offset
    leader.update_follower_fetch(2, leo, now=start + 100)  # then broker 2 stops
    leader.update_follower_fetch(3, leo, now=start + 1000)

    # Both lags far off: Kafka's cadence, half the lag.
    assert leader.next_isr_expiry_ms(start + 1000, LAG_MS) == start + 3100
    assert isr_check_delay_ms(start + 1000, LAG_MS, start + 3100) == LAG_MS // 2
    # Broker 2's lag runs out before the next half-lag check: woken just after it.
    assert isr_check_delay_ms(start + 2500, LAG_MS, start + 3100) == 601
    assert leader.out_of_sync_replicas(start + 3100, LAG_MS) == set()
    assert leader.out_of_sync_replicas(start + 3101, LAG_MS) == {2}
    # Once passed, that expiry is the check's to act on; the next to come is broker 3's.
    assert leader.next_isr_expiry_ms(start + 3101, LAG_MS) == start + 4000
    leader.update_follower_fetch(3, leo, now=start + 3500)
    assert leader.next_isr_expiry_ms(start + 3600, LAG_MS) == start + 6500


def test_no_follower_in_the_isr_keeps_the_cadence(tmp_path):
    leader = _leader(tmp_path, [1])
    assert leader.next_isr_expiry_ms(now_ms(), LAG_MS) is None
    assert isr_check_delay_ms(now_ms(), LAG_MS, None) == LAG_MS // 2


def test_the_check_never_spins(tmp_path):
    start = now_ms()
    # An expiry a few ms away, or a lag shorter than twice the floor: the floor holds.
    assert isr_check_delay_ms(start, LAG_MS, start + 3) == ISR_CHECK_FLOOR_MS
    assert isr_check_delay_ms(start, 60, None) == ISR_CHECK_FLOOR_MS
    assert isr_check_delay_ms(start, 60, start + 20) == ISR_CHECK_FLOOR_MS
