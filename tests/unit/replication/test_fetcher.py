"""The replica fetcher over real logs: truncation (OffsetForLeaderEpoch), fetching, and the
restart below a leader's log start, with every log write on a worker thread, and removal
or shutdown waiting for the write in flight.

The leader is a real `Log` in a temporary directory, reached through `LeaderLog`, which
answers the two requests a fetcher sends as a leader's handlers would, from that log. The
follower's log is real too, seen through `WatchedLog`, which records the thread each write
runs on and can hold a write at a gate (so "in flight" is a state, not a race).
"""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest

from brokerd.client.connection import PLAINTEXT
from brokerd.config import BrokerConfig, LogConfig
from brokerd.log.recovery import load_log
from brokerd.protocol.errors import ErrorCode
from brokerd.records import iter_entries
from brokerd.records.batch import SimpleRecord, build_batch
from brokerd.replication.fetcher import ReplicaFetcher
from brokerd.replication.partition import Partition

LEADER, FOLLOWER = 1, 2
CONFIG = BrokerConfig(
    {"broker.id": str(FOLLOWER), "zookeeper.connect": "127.0.0.1:2181", "log.dirs": "/unused"}
)


class WatchedLog:
    """A real log whose writes record their thread and wait at `gate` when it is closed."""

    def __init__(self, log):
        self._log = log
        self.writers: list[int] = []
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.gate.set()

    def __getattr__(self, name):
        return getattr(self._log, name)

    def _write(self, method: str, *args):
        self.writers.append(threading.get_ident())
        self.entered.set()
        assert self.gate.wait(30), "the test never opened the gate"
        return getattr(self._log, method)(*args)

    def truncate_to(self, offset):
        return self._write("truncate_to", offset)

    def truncate_fully_and_start_at(self, offset):
        return self._write("truncate_fully_and_start_at", offset)

    def append_as_follower(self, records):
        return self._write("append_as_follower", records)


class LeaderLog:
    """Answers OffsetForLeaderEpoch and Fetch from a real leader log, as the leader would."""

    def __init__(self, partition: Partition):
        self.partition = partition
        self.fetches: list = []

    async def send(self, request, timeout=None):
        log = self.partition.log
        if hasattr(request, "forgotten_topics_data"):
            self.fetches.append(request)
            # A leader that keeps no fetch session (as with a cache of 0 slots): every
            # fetch stays a full one, answered for the partitions it lists.
            return SimpleNamespace(
                error_code=ErrorCode.none,
                session_id=0,
                responses=[
                    SimpleNamespace(
                        topic=t.topic,
                        partitions=[self._fetch(log, p) for p in t.partitions],
                    )
                    for t in request.topics
                ],
            )
        return SimpleNamespace(
            topics=[
                SimpleNamespace(
                    topic=t.topic,
                    partitions=[self._epoch_end(log, p) for p in t.partitions],
                )
                for t in request.topics
            ]
        )

    @staticmethod
    def _epoch_end(log, p):
        epoch, end = log.leader_epoch_cache.end_offset_for(p.leader_epoch, log.log_end_offset)
        return SimpleNamespace(
            partition=p.partition, error_code=ErrorCode.none, leader_epoch=epoch, end_offset=end
        )

    @staticmethod
    def _fetch(log, p):
        answer = SimpleNamespace(
            partition_index=p.partition,
            error_code=ErrorCode.none,
            high_watermark=log.high_watermark,
            log_start_offset=log.log_start_offset,
            records=None,
        )
        if not log.log_start_offset <= p.fetch_offset <= log.log_end_offset:
            answer.error_code = ErrorCode.offset_out_of_range
            return answer
        data = log.read(p.fetch_offset, p.partition_max_bytes)
        answer.records = data.read() or None
        return answer


def _partition(tmp_path, name: str, broker_id: int, watched: bool = False) -> Partition:
    log = load_log(tmp_path / name / "t-0", LogConfig())
    return Partition("t", 0, WatchedLog(log) if watched else log, broker_id)


def _produce(leader: Partition, *values: bytes) -> None:
    for value in values:
        batch = build_batch([SimpleRecord(value, None, (), 0)])
        leader.log.append_as_leader(bytes(batch), leader.leader_epoch)


def _fetcher() -> ReplicaFetcher:
    return ReplicaFetcher(LEADER, FOLLOWER, CONFIG.replication, lambda _: None, lambda _: PLAINTEXT)


def _batches(partition: Partition):
    out = []
    for segment in partition.log.segments:
        data = segment.log_path.read_bytes()
        out += [(b.base_offset, b.partition_leader_epoch, b.crc) for b in iter_entries(data)]
    return out


@pytest.fixture
def diverged(tmp_path):
    """A follower with m0 m1 at epoch 0 and a leader that has m0, then m1' at epoch 1."""
    leader = _partition(tmp_path, "leader", LEADER)
    follower = _partition(tmp_path, "follower", FOLLOWER, watched=True)
    for partition in (leader, follower):
        partition.make_leader(0, [partition.local_id], [LEADER, FOLLOWER], 0)
        _produce(partition, b"m0")
    _produce(follower, b"m1")
    leader.make_leader(1, [LEADER], [LEADER, FOLLOWER], 1)
    _produce(leader, b"m1-prime")
    follower.make_follower(LEADER, 1)
    return leader, follower


async def test_a_diverged_follower_truncates_then_catches_up_off_the_event_loop(diverged):
    leader, follower = diverged
    fetcher = _fetcher()
    fetcher.add(follower, 1)
    connection = LeaderLog(leader)

    await fetcher._truncate(connection)
    assert follower.log.log_end_offset == 1  # epoch 0 ended at 1 on the leader
    assert not fetcher.partitions[follower.key].truncating

    await fetcher._fetch(connection)
    assert follower.log.log_end_offset == leader.log.log_end_offset == 2
    assert _batches(follower) == _batches(leader)
    assert follower.log.high_watermark == min(2, leader.log.high_watermark)
    loop_thread = threading.get_ident()
    assert len(follower.log.writers) == 2  # the truncation and the append
    assert loop_thread not in follower.log.writers


async def test_removing_a_partition_waits_for_its_truncation_in_flight(diverged):
    leader, follower = diverged
    fetcher = _fetcher()
    fetcher.add(follower, 1)
    follower.log.gate.clear()
    truncating = asyncio.create_task(fetcher._truncate(LeaderLog(leader)))
    assert await asyncio.to_thread(follower.log.entered.wait, 30)

    removing = asyncio.create_task(fetcher.remove(follower.key))
    for _ in range(20):
        await asyncio.sleep(0)
    # Gone from the fetcher at once, but not returned while its log is being cut: a new
    # leader or a new fetcher must not touch the log before the cut is done.
    assert follower.key not in fetcher.partitions
    assert not removing.done()
    assert follower.log.log_end_offset == 2

    follower.log.gate.set()
    await removing
    assert follower.log.log_end_offset == 1
    await truncating


async def test_stopping_waits_for_an_append_in_flight_and_drops_its_result(diverged):
    leader, follower = diverged
    fetcher = _fetcher()
    fetcher.add(follower, 1)
    connection = LeaderLog(leader)
    await fetcher._truncate(connection)
    leader.log.update_high_watermark(2)
    follower.log.entered.clear()
    follower.log.gate.clear()
    fetching = asyncio.create_task(fetcher._fetch(connection))
    assert await asyncio.to_thread(follower.log.entered.wait, 30)

    fetching.cancel()
    stopping = asyncio.create_task(fetcher.stop())
    for _ in range(20):
        await asyncio.sleep(0)
    assert not stopping.done()  # the log must not close under the append

    follower.log.gate.set()
    await stopping
    assert follower.log.log_end_offset == 2  # the append finished on its thread
    assert follower.log.high_watermark == 0  # the cancelled fetch applied no HW


async def test_a_follower_below_the_leaders_log_start_restarts_there(tmp_path):
    leader = _partition(tmp_path, "leader", LEADER)
    leader.make_leader(0, [LEADER], [LEADER, FOLLOWER], 0)
    leader.log.truncate_fully_and_start_at(5)  # as retention past everything would
    _produce(leader, b"m5", b"m6")
    leader.log.update_high_watermark(7)
    follower = _partition(tmp_path, "follower", FOLLOWER, watched=True)
    follower.make_follower(LEADER, 0)
    fetcher = _fetcher()
    fetcher.add(follower, 0)
    connection = LeaderLog(leader)

    await fetcher._truncate(connection)  # an empty log has no epoch to ask about
    await fetcher._fetch(connection)  # OFFSET_OUT_OF_RANGE: restart at 5
    assert (follower.log.log_start_offset, follower.log.log_end_offset) == (5, 5)
    await fetcher._fetch(connection)
    assert follower.log.log_end_offset == 7
    assert follower.log.high_watermark == 7
    assert threading.get_ident() not in follower.log.writers


class SessionLeader:
    """A leader of many empty partitions that keeps one fetch session: it answers each fetch
    with the partitions it lists, nothing else (all caught up)."""

    def __init__(self):
        self.fetches: list = []

    async def send(self, request, timeout=None):
        self.fetches.append(request)
        return SimpleNamespace(
            error_code=ErrorCode.none,
            session_id=7,
            responses=[
                SimpleNamespace(
                    topic=t.topic,
                    partitions=[
                        SimpleNamespace(
                            partition_index=p.partition,
                            error_code=ErrorCode.none,
                            high_watermark=0,
                            log_start_offset=0,
                            records=None,
                        )
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ],
        )


class CountedLog:
    """A log whose end offset counts how often a fetch round asks for it."""

    def __init__(self, log, counter: list[int]):
        self._log = log
        self._counter = counter

    def __getattr__(self, name):
        return getattr(self._log, name)

    @property
    def log_end_offset(self):
        self._counter[0] += 1
        return self._log.log_end_offset


async def test_a_quiet_round_looks_at_no_partition(tmp_path):
    looked = [0]
    fetcher = _fetcher()
    partitions = []
    for index in range(50):
        log = load_log(tmp_path / f"t-{index}", LogConfig())
        partition = Partition("t", index, CountedLog(log, looked), FOLLOWER)
        partition.make_follower(LEADER, 0)
        partitions.append(partition)
        fetcher.add(partition, 0)
    leader = SessionLeader()
    await fetcher._truncate(leader)  # empty logs: nothing to ask, nothing to cut
    await fetcher._fetch(leader)  # opens the session: every partition
    assert len(leader.fetches[-1].topics[0].partitions) == 50
    looked[0] = 0
    for _ in range(3):
        await fetcher._fetch(leader)
        assert leader.fetches[-1].topics == ()  # incremental, nothing changed
    assert looked[0] == 0

    await fetcher.remove(("t", 3))  # moved away: forgotten, the others untouched
    await fetcher._fetch(leader)
    forgotten = leader.fetches[-1].forgotten_topics_data
    assert [(f.topic, list(f.partitions)) for f in forgotten] == [("t", [3])]
    assert looked[0] == 0


async def test_a_partition_backing_off_leaves_the_session_and_comes_back(diverged):
    leader, follower = diverged
    fetcher = _fetcher()
    fetcher.add(follower, 1)
    connection = LeaderLog(leader)
    await fetcher._truncate(connection)
    await fetcher._fetch(connection)
    state = fetcher.partitions[follower.key]
    loop = asyncio.get_running_loop()
    fetcher._partition_error(state, ErrorCode.unknown_leader_epoch, loop.time() + 0.2)
    await fetcher._fetch(connection)  # backing off: nothing to ask of the leader
    assert len(connection.fetches) == 1
    await asyncio.sleep(0.25)
    await fetcher._fetch(connection)  # the delay passed: asked again
    assert len(connection.fetches) == 2
    assert [p.partition for t in connection.fetches[-1].topics for p in t.partitions] == [0]
