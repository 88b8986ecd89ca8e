"""One local replica of a partition: leader or follower, with the leader's view of the ISR.

As leader it tracks each follower's log end offset (from the offsets followers fetch at) and
when each last caught up; the high watermark is the smallest LEO in the ISR and never moves
back. As follower it keeps its HW at min(own LEO, the leader's HW). Which role it has, and at
which leader epoch, is the controller's word (LeaderAndIsr); ISR changes are the leader's,
written to ZooKeeper by the replica manager.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from brokerd.log.log import Log

NO_LEADER = -1


def now_ms() -> int:
    return int(time.time() * 1000)


ISR_CHECK_FLOOR_MS = 50  # the shortest wait between two ISR checks


def isr_check_delay_ms(now: int, max_lag_ms: int, next_expiry: int | None) -> int:
    """Milliseconds until the leader's next ISR check: Kafka's cadence (half of
    replica.lag.time.max.ms), or sooner when an ISR follower's lag runs out before that
    (`next_expiry`, from Partition.next_isr_expiry_ms), so a follower that stopped is
    dropped one lag after it last caught up instead of up to half a lag later. Never under
    ISR_CHECK_FLOOR_MS, so an expiry about to pass cannot make the check spin."""
    period = max(max_lag_ms // 2, ISR_CHECK_FLOOR_MS)
    if next_expiry is None:
        return period
    # Checked just after the expiry: out of sync means more than the lag behind.
    return max(min(period, next_expiry - now + 1), ISR_CHECK_FLOOR_MS)


@dataclass
class ReplicaState:
    """The leader's view of one follower (field names are the admin API's contract)."""

    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = -1
    last_fetch_ms: int = 0

    def reset(self, caught_up_ms: int) -> None:
        self.log_end_offset = -1
        self.last_caught_up_ms = caught_up_ms
        self.last_fetch_leader_leo = -1
        self.last_fetch_ms = 0


class Partition:
    def __init__(self, topic: str, partition: int, log: Log, local_id: int):
        self.topic = topic
        self.partition = partition
        self.log = log
        self.local_id = local_id
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.isr: list[int] = []
        self.replicas: list[int] = []
        self.zk_version = -1
        self.controller_epoch = -1
        self.replica_states: dict[int, ReplicaState] = {}
        self.isr_change_pending = False  # a ZooKeeper write of the ISR is in flight

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_id

    @property
    def last_stable_offset(self) -> int:
        """Kafka's LSO of this replica (the log keeps it from its producer state and HW): on
        the leader where read_committed reads stop; a follower's follows the markers it
        replicates and the leader's HW."""
        return self.log.last_stable_offset

    def __repr__(self) -> str:
        role = "leader" if self.is_leader else f"follower of {self.leader_id}"
        return (
            f"Partition({self.topic}-{self.partition}, {role}, epoch {self.leader_epoch}, "
            f"isr {self.isr}, hw {self.log.high_watermark}, lso {self.log.last_stable_offset}, "
            f"leo {self.log.log_end_offset})"
        )

    # Role changes ---------------------------------------------------------------------
    def make_leader(
        self,
        leader_epoch: int,
        isr: list[int],
        replicas: list[int],
        zk_version: int,
        controller_epoch: int = -1,
    ) -> None:
        """Lead from the current LEO: the new epoch starts there (KIP-101), so a follower
        asking where an older epoch ends learns it ends here."""
        now = now_ms()
        self.leader_id = self.local_id
        self.leader_epoch = leader_epoch
        self.isr = list(isr)
        self.replicas = list(replicas)
        self.zk_version = zk_version
        self.controller_epoch = controller_epoch
        self.isr_change_pending = False
        self.replica_states = {}
        for replica in replicas:
            if replica != self.local_id:
                state = ReplicaState()
                # ISR members get a full lag period to show up before they can be dropped.
                state.reset(now if replica in isr else 0)
                self.replica_states[replica] = state
        # Normally recorded already on a worker thread (ReplicaManager); this catches an
        # append at the old epoch that came in between, which moves the start.
        self.log.assign_epoch_start(leader_epoch)
        self.maybe_increment_high_watermark()

    def make_follower(
        self,
        leader_id: int,
        leader_epoch: int,
        isr: list[int] | None = None,
        replicas: list[int] | None = None,
        zk_version: int = -1,
        controller_epoch: int = -1,
    ) -> None:
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.isr = list(isr or [])
        self.replicas = list(replicas or [])
        self.zk_version = zk_version
        self.controller_epoch = controller_epoch
        self.replica_states = {}
        self.isr_change_pending = False

    # Leader side ----------------------------------------------------------------------
    def update_follower_fetch(self, replica_id: int, fetch_offset: int, now: int) -> bool:
        """A follower fetched at `fetch_offset`, so it has everything below it.

        Caught-up time follows Kafka's rule: caught up now if it asked for the LEO; caught up
        at its previous fetch if it now asks for what the LEO was then. True if the HW moved.
        """
        state = self.replica_states.get(replica_id)
        if state is None:
            state = self.replica_states[replica_id] = ReplicaState()
        leader_leo = self.log.log_end_offset
        if fetch_offset >= leader_leo:
            state.last_caught_up_ms = max(state.last_caught_up_ms, now)
        elif fetch_offset >= state.last_fetch_leader_leo >= 0:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.log_end_offset = fetch_offset
        state.last_fetch_leader_leo = leader_leo
        state.last_fetch_ms = now
        return self.maybe_increment_high_watermark()

    def maybe_increment_high_watermark(self) -> bool:
        """HW = max(HW, min LEO over the ISR); True when it moved."""
        if not self.is_leader:
            return False
        lowest = self.log.log_end_offset
        for replica in self.isr:
            if replica == self.local_id:
                continue
            state = self.replica_states.get(replica)
            lowest = min(lowest, state.log_end_offset if state is not None else -1)
        if lowest > self.log.high_watermark:
            self.log.update_high_watermark(lowest)
            return True
        return False

    def out_of_sync_replicas(self, now: int, max_lag_ms: int) -> set[int]:
        """ISR followers that have not caught up within replica.lag.time.max.ms."""
        return {
            replica
            for replica in self.isr
            if replica != self.local_id
            and now - self.replica_states.get(replica, ReplicaState()).last_caught_up_ms
            > max_lag_ms
        }

    def next_isr_expiry_ms(self, now: int, max_lag_ms: int) -> int | None:
        """The earliest time, not before `now`, an ISR follower turns out of sync unless it
        catches up first (its last caught-up time plus replica.lag.time.max.ms); None when
        no ISR follower has one to come (those already out of sync are the check's now)."""
        found = None
        for replica in self.isr:
            if replica == self.local_id:
                continue
            state = self.replica_states.get(replica)
            expiry = (state.last_caught_up_ms if state is not None else 0) + max_lag_ms
            if expiry >= now and (found is None or expiry < found):
                found = expiry
        return found

    def catching_up_replicas(self) -> set[int]:
        """Followers outside the ISR that reached the HW and the current epoch's start."""
        epoch_start = self._current_epoch_start()
        found = set()
        for replica, state in self.replica_states.items():
            if replica in self.isr or replica not in self.replicas:
                continue
            if (
                state.log_end_offset >= self.log.high_watermark
                and state.log_end_offset >= epoch_start
            ):
                found.add(replica)
        return found

    def _current_epoch_start(self) -> int:
        entry = self.log.leader_epoch_cache.latest_entry
        return entry.start_offset if entry is not None else 0

    # Follower side --------------------------------------------------------------------
    def update_follower_high_watermark(self, leader_high_watermark: int) -> None:
        new = min(self.log.log_end_offset, leader_high_watermark)
        if new > self.log.high_watermark:
            self.log.update_high_watermark(new)
