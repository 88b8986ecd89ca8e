"""An incremental fetch reads what changed, not every partition of its session (issue 15:
an idle follower of 10,000 partitions): the partitions it lists, those appended to or
whose HW or leadership moved since the session's last answer, and those with more to send.
Over a real replica manager (tests/unit/replication's set-up); the logs' reads counted."""

import asyncio
import dataclasses

from brokerd.coordination.zk_data import PartitionState
from brokerd.log.log import Log
from brokerd.protocol.errors import ErrorCode
from brokerd.server.fetch_session import FetchSessionCache
from brokerd.server.handlers.fetch import handle_fetch
from brokerd.server.handlers.produce import handle_produce
from tests.integration.wire_calls import batch
from tests.unit.replication.replica_setup import CONTROLLER_EPOCH, LOCAL, PEER
from tests.unit.server.handler_context import (
    broker_config,
    call,
    context,
    fetch_request,
    on_listener,
    produce_request,
)

TOPICS = [f"s{n}" for n in range(24)]


def _fetch(session_id, epoch, offsets: dict[str, int], wait_ms=0, max_bytes=1 << 20):
    """Fetch v12 of partition 0 of each topic in `offsets` (from its offset)."""
    return fetch_request(
        session_id=session_id, epoch=epoch, offsets=offsets, wait_ms=wait_ms, max_bytes=max_bytes
    )


def _answered(response) -> dict[str, tuple[int, int, int]]:
    """topic -> (error, high watermark, record bytes)."""
    return {
        t.topic: (p.error_code, p.high_watermark, len(p.records or b""))
        for t in response.responses
        for p in t.partitions
    }


def _session_context(replicas, monkeypatch):
    """A handler context over the set-up's replica manager, with Kafka's default lag: the
    set-up's replica.lag.time.max.ms (200) would sweep whole sessions every 67 ms."""
    settings = replicas.replicas.settings
    monkeypatch.setattr(
        replicas.replicas, "settings", dataclasses.replace(settings, replica_lag_time_max_ms=30_000)
    )
    return context(
        broker_config({"broker.id": str(LOCAL)}),
        metadata=replicas.metadata,
        replicas=replicas.replicas,
        log_manager=replicas.log_manager,
        fetch_sessions=FetchSessionCache(10),
    )


def _counted_reads(monkeypatch) -> list[str]:
    """The name of each log read from now on, in order."""
    reads: list[str] = []
    real_read = Log.read

    def counted_read(self, *args, **kwargs):
        reads.append(self.dir.name)
        return real_read(self, *args, **kwargs)

    monkeypatch.setattr(Log, "read", counted_read)
    return reads


async def test_an_incremental_fetch_reads_only_what_changed(replicas, monkeypatch):
    states = {}
    for name in TOPICS:
        states[name] = await replicas.create_topic(name, [LOCAL], [LOCAL])
        await replicas.become(name, states[name], [LOCAL])
    ctx = _session_context(replicas, monkeypatch)
    reads = _counted_reads(monkeypatch)

    opened = await call(handle_fetch, ctx, _fetch(0, 0, dict.fromkeys(TOPICS, 0)))
    session_id = opened.session_id
    assert session_id != 0 and len(reads) == len(TOPICS)  # a new session reads them all

    reads.clear()
    quiet = await call(handle_fetch, ctx, _fetch(session_id, 1, {}))
    assert _answered(quiet) == {} and reads == []  # nothing changed: nothing read

    await call(handle_produce, ctx, produce_request(bytes(batch(b"a", b"b")), topic="s5"))
    reads.clear()
    fetched = await call(handle_fetch, ctx, _fetch(session_id, 2, {}))
    assert reads == ["s5-0"]  # the old handler read all 24
    (error, high_watermark, size) = _answered(fetched)["s5"]
    assert (error, high_watermark) == (ErrorCode.none, 2) and size > 0

    reads.clear()  # the consumer moved on: s5 is read at its new offset, nothing to send
    caught_up = await call(handle_fetch, ctx, _fetch(session_id, 3, {"s5": 2}))
    assert reads == ["s5-0"] and _answered(caught_up) == {}
    reads.clear()
    assert _answered(await call(handle_fetch, ctx, _fetch(session_id, 4, {}))) == {}
    assert reads == []

    # A parked fetch is woken by an append to any partition of its session.
    parked = asyncio.ensure_future(call(handle_fetch, ctx, _fetch(session_id, 5, {}, 20_000)))
    await asyncio.sleep(0.2)
    assert not parked.done()
    await call(handle_produce, ctx, produce_request(bytes(batch(b"late")), topic="s20"))
    woken = await asyncio.wait_for(parked, 15)
    assert _answered(woken)["s20"][0] == ErrorCode.none and _answered(woken)["s20"][2] > 0

    # Leadership moving away reaches the session at once (NOT_LEADER_OR_FOLLOWER).
    moved = PartitionState(PEER, 1, [PEER, LOCAL], CONTROLLER_EPOCH)
    moved.zk_version = 1
    await replicas.become("s7", moved, [PEER, LOCAL])
    reads.clear()
    after_move = _answered(await call(handle_fetch, ctx, _fetch(session_id, 6, {"s20": 1})))
    assert after_move["s7"][0] == ErrorCode.not_leader_or_follower
    assert set(after_move) <= {"s7", "s20"} and len(reads) <= 2


async def test_partitions_cut_by_max_bytes_take_their_turn(replicas):
    """As Kafka's IncrementalFetchContext: a partition that got data goes after those that
    got none because max_bytes ran out, so a consumer behind on many partitions is served
    each in turn, not the first one over and over (it was)."""
    names = ["r0", "r1", "r2"]
    for name in names:
        state = await replicas.create_topic(name, [LOCAL], [LOCAL])
        await replicas.become(name, state, [LOCAL])
    ctx = context(
        broker_config({"broker.id": str(LOCAL)}),
        metadata=replicas.metadata,
        replicas=replicas.replicas,
        log_manager=replicas.log_manager,
        fetch_sessions=FetchSessionCache(10),
    )
    for name in names:
        for n in range(3):
            await call(handle_produce, ctx, produce_request(bytes(batch(b"%d" % n)), topic=name))
    # max_bytes of 1: each answer carries the first batch of one partition only.
    offsets = dict.fromkeys(names, 0)
    opened = await call(handle_fetch, ctx, _fetch(0, 0, offsets, max_bytes=1))
    served = [t for t, (_, _, size) in _answered(opened).items() if size > 0]
    assert served == ["r0"]
    session_id, order = opened.session_id, list(served)
    for epoch in range(1, 4):
        offsets[served[0]] += 1  # the consumer moves on where it got a batch
        answer = await call(
            handle_fetch,
            ctx,
            _fetch(session_id, epoch, {served[0]: offsets[served[0]]}, max_bytes=1),
        )
        served = [t for t, (_, _, size) in _answered(answer).items() if size > 0]
        assert len(served) == 1
        order += served
    assert order == ["r0", "r1", "r2", "r0"]


async def test_a_follower_sessions_sweep_renews_every_partition_and_reads_only_changes(
    replicas, monkeypatch
):
    """The periodic sweep of a follower's session (what keeps a quiet follower in the ISR)
    renewed each partition's caught-up time by reading every partition: 10,000 reads per
    follower every 10 s on an idle broker. It now reads only what it finds changed."""
    names = TOPICS[:12]
    for name in names:
        state = await replicas.create_topic(name, [LOCAL, PEER], [LOCAL, PEER])
        await replicas.become(name, state, [LOCAL, PEER])
    ctx = _session_context(replicas, monkeypatch)
    await call(handle_produce, ctx, produce_request(bytes(batch(b"a", b"b")), topic="s4"))
    reads = _counted_reads(monkeypatch)
    leaders = replicas.replicas.leaders
    offsets = dict.fromkeys(names, 0) | {"s4": 2}  # the follower has s4's two records
    with on_listener("INTERNAL"):
        opened = await call(handle_fetch, ctx, fetch_request(PEER, 0, 0, offsets=offsets))
        session_id = opened.session_id
        assert session_id != 0
        caught_up = {n: leaders[(n, 0)].replica_states[PEER].last_caught_up_ms for n in names}
        # s4's log start moves without a notification, as nothing but a sweep would see.
        leaders[("s4", 0)].log.maybe_increment_log_start_offset(1)
        await asyncio.sleep(0.01)
        ctx.fetch_sessions.sessions[session_id].sweep_due = 0  # the sweep is due
        reads.clear()
        swept = await call(handle_fetch, ctx, fetch_request(PEER, session_id, 1))
    assert reads == ["s4-0"]  # the old sweep read all 12
    assert _answered(swept) == {"s4": (ErrorCode.none, 2, 0)}
    assert swept.responses[0].partitions[0].log_start_offset == 1
    for name in names:
        assert leaders[(name, 0)].replica_states[PEER].last_caught_up_ms > caught_up[name]
