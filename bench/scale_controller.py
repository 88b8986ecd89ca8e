"""Scale, the ZooKeeper side of ISR changes and reassignment (issue 15).

A real ZooKeeper and three broker processes on loopback (tests/cluster's `Cluster`: a 4 s
ZooKeeper session, replica.lag.time.max.ms 3 s). Cases:

* ZooKeeper batches: 1,000 (`--quick`: 300) pipelined creates, reads and conditional sets
  through ZkClient with kazoo's own connection loop (a request per turn, a selector per
  socket wait) and with the batching connection brokerd uses (coordination/zk_connection),
  taking turns against the same ZooKeeper; medians of 5 (3). Ratio = batching / kazoo.
* ISR shrink: a topic of WIDE partitions at RF 3 (every broker follows two thirds of them);
  kill -9 of a broker that is not the controller; seconds until no partition's ISR names it
  in Metadata. Its leaders drop it after replica.lag.time.max.ms (the peer: nothing can be
  faster than that lag) and the controller when its ZooKeeper session expires, whichever
  comes first; both write the states as pipelined batches. Aim <= 2x the lag.
* ISR expand: the killed broker is started again; seconds from its start until every ISR
  holds it again (its leaders add it as it catches up: leader-side ISR writes, in batches).
  Printed beside the 10-partition figure of the same steps.
* reassignment: every partition of a WIDE-partition topic at RF 2 moved to other replicas
  ([a, b] -> [a+1, b+1] mod 3: one replica added, one removed, the leader moving for most)
  with AlterPartitionReassignments (brokerd.client), until ListPartitionReassignments is
  empty and every partition serves from its new replicas; ratio to the same move of a
  10-partition topic. Aim <= 20 (as for creation: the cost of a move per partition must not
  grow with their number).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from bench import Result, say, scratch_dir
from bench.scale import described_partitions, timed_wait

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

NARROW = 10
LAG_S = 3.0  # tests/cluster's replica.lag.time.max.ms


# The controller cases wait up to 10 minutes at 1,000 partitions.
WAIT_S = 600


def _led(admin, topic: str, partitions: int) -> bool:
    found = admin.list_topics(topic=topic, timeout=30)
    described = found.topics.get(topic)
    return (
        described is not None
        and described.error is None
        and len(described.partitions) == partitions
        and all(p.leader in found.brokers for p in described.partitions.values())
    )


def _isrs_without(admin, topic: str, broker: int) -> bool:
    return all(broker not in p.isrs for p in described_partitions(admin, topic).values())


def _isrs_full(admin, topic: str) -> bool:
    parts = described_partitions(admin, topic)
    return bool(parts) and all(set(p.isrs) == set(p.replicas) for p in parts.values())


def _create(admin, topic: str, partitions: int, replicas: dict[int, list[int]] | None) -> None:
    from confluent_kafka.admin import NewTopic

    if replicas is None:
        new = NewTopic(topic, num_partitions=partitions, replication_factor=3)
    else:
        new = NewTopic(
            topic,
            num_partitions=partitions,
            replica_assignment=[replicas[p] for p in range(partitions)],
        )
    admin.create_topics([new], operation_timeout=300, request_timeout=300)[topic].result(300)
    timed_wait(lambda: _led(admin, topic, partitions) and _isrs_full(admin, topic), WAIT_S)


def _shrink_and_expand(admin, cluster, topic: str) -> tuple[float, float, int]:
    """kill -9 of a follower (not the controller) until no ISR names it; its restart until
    every ISR holds it again. The seconds of each and the broker's id."""
    controller = admin.list_topics(timeout=30).controller_id
    victim = max(b for b in cluster.brokers if b != controller)
    killed_at = time.monotonic()
    cluster.brokers[victim].kill()
    try:
        timed_wait(lambda: _isrs_without(admin, topic, victim), timeout=180)
    except TimeoutError:
        stuck = {
            p: (v.leader, v.isrs)
            for p, v in described_partitions(admin, topic).items()
            if victim in v.isrs
        }
        raise TimeoutError(f"ISRs still naming broker {victim}: {stuck}") from None
    shrink_s = time.monotonic() - killed_at
    started_at = time.monotonic()
    cluster.brokers[victim].start(120)
    timed_wait(lambda: _isrs_full(admin, topic), WAIT_S)
    return shrink_s, time.monotonic() - started_at, victim


def _moved(admin, client, topic: str, partitions: int, targets: dict) -> bool:
    if client.admin.list_partition_reassignments([(topic, p) for p in range(partitions)]):
        return False
    parts = described_partitions(admin, topic)
    return len(parts) == partitions and all(
        list(parts[p].replicas) == targets[(topic, p)] and parts[p].leader in targets[(topic, p)]
        for p in range(partitions)
    )


def _reassign(admin, client, topic: str, partitions: int) -> float:
    """Every partition of `topic` (RF 2 on brokers 1-3) moved one broker up; seconds until
    no reassignment is left and Metadata shows the new replicas with a leader among them."""
    _create(admin, topic, partitions, {p: [p % 3 + 1, (p + 1) % 3 + 1] for p in range(partitions)})
    targets = {
        (topic, p): [(p + 1) % 3 + 1, (p + 2) % 3 + 1] for p in range(partitions)
    }  # [a, b] -> [b, c]: c added, a removed, b (a follower) leads
    started = time.monotonic()
    client.admin.alter_partition_reassignments(targets, timeout=300)
    timed_wait(lambda: _moved(admin, client, topic, partitions, targets), WAIT_S)
    return time.monotonic() - started


def _zk_batches(connect: str, count: int, rounds: int) -> dict[str, float]:
    """Median seconds of `count` pipelined creates, reads and conditional sets through
    ZkClient with kazoo's own connection loop and with brokerd's batching one
    (coordination/zk_connection.py), taking turns against the same ZooKeeper."""
    import asyncio
    import statistics

    from kazoo.handlers.threading import SequentialThreadingHandler
    from kazoo.protocol.connection import ConnectionHandler

    from brokerd.coordination.zk_client import ZkClient

    async def measure() -> dict[str, float]:
        kazoo_loop = ZkClient(connect, "/zk-batches", 20000, connect_ms=60000)
        kazoo_loop._kazoo.handler.__class__ = SequentialThreadingHandler
        kazoo_loop._kazoo._connection.__class__ = ConnectionHandler
        batching = ZkClient(connect, "/zk-batches", 20000, connect_ms=60000)
        await kazoo_loop.start()
        await batching.start()
        times: dict[str, list[float]] = {}
        try:
            await batching.ensure_path("/n")
            for turn in range(rounds):
                for name, zk in (("kazoo", kazoo_loop), ("batching", batching)):
                    paths = [f"/n/{name}-{turn}-{i}" for i in range(count)]
                    for step, work in (
                        (
                            "create",
                            lambda zk=zk, paths=paths: zk.create_many(
                                [(p, b"x" * 100) for p in paths]
                            ),
                        ),
                        ("get", lambda zk=zk, paths=paths: zk.get_many(paths)),
                        (
                            "set",
                            lambda zk=zk, paths=paths: zk.set_many(
                                [(p, b"y" * 100, 0) for p in paths]
                            ),
                        ),
                    ):
                        began = time.monotonic()
                        await work()
                        times.setdefault(f"{name} {step}", []).append(time.monotonic() - began)
        finally:
            await kazoo_loop.stop()
            await batching.stop()
        return {key: statistics.median(values) for key, values in times.items()}

    return asyncio.run(measure())


def run(quick: bool) -> list[Result]:
    from confluent_kafka.admin import AdminClient

    from bench.replication import _Dirs
    from brokerd.client.sync import SyncClient
    from tests.cluster.conftest import Cluster
    from tests.harness import ZooKeeper

    wide = 300 if quick else 1000
    results = []
    with scratch_dir("scale-controller") as base:
        zookeeper = ZooKeeper(base / "zookeeper").start()
        cluster = None
        client = None
        try:
            count = 300 if quick else 1000
            zk_s = _zk_batches(zookeeper.connect, count, 3 if quick else 5)
            say(
                "scale_controller: ZooKeeper batches of "
                f"{count}: " + ", ".join(f"{key} {value:.3f} s" for key, value in zk_s.items())
            )
            for step in ("create", "get", "set"):
                results.append(
                    Result(
                        "scale_controller",
                        f"{count} pipelined ZooKeeper {step}s, batching connection vs kazoo's loop",
                        "s",
                        "batching connection",
                        zk_s[f"batching {step}"],
                        "kazoo's own loop",
                        zk_s[f"kazoo {step}"],
                        zk_s[f"batching {step}"] / zk_s[f"kazoo {step}"],
                    )
                )
            cluster = Cluster(zookeeper, _Dirs(base)).start()
            admin = AdminClient(
                {"bootstrap.servers": cluster.bootstrap, "socket.timeout.ms": 300000}
            )
            client = SyncClient(cluster.bootstrap, request_timeout=300)

            _create(admin, "isr-narrow", NARROW, None)
            narrow_shrink, narrow_expand, _ = _shrink_and_expand(admin, cluster, "isr-narrow")
            say(
                f"scale_controller: {NARROW} partitions: ISR shrink {narrow_shrink:.2f} s, "
                f"expand {narrow_expand:.2f} s"
            )
            admin.delete_topics(["isr-narrow"])["isr-narrow"].result(120)
            _create(admin, "isr-wide", wide, None)
            shrink_s, expand_s, victim = _shrink_and_expand(admin, cluster, "isr-wide")
            say(
                f"scale_controller: {wide} partitions RF 3, kill -9 of broker {victim}: "
                f"out of every ISR after {shrink_s:.2f} s; restarted, back in every ISR "
                f"after {expand_s:.2f} s"
            )
            results.append(
                Result(
                    "scale_controller",
                    f"kill -9 of a follower until no ISR of {wide} partitions names it",
                    "s",
                    "kill -9 -> out of every ISR",
                    shrink_s,
                    "replica.lag.time.max.ms",
                    LAG_S,
                    shrink_s / LAG_S,
                    aim_at_most=2,
                    note=f"{NARROW} partitions: {narrow_shrink:.2f} s",
                )
            )
            results.append(
                Result(
                    "scale_controller",
                    f"restart of that follower until every ISR of {wide} partitions holds it",
                    "s",
                    f"{wide} partitions",
                    expand_s,
                    f"{NARROW} partitions",
                    narrow_expand,
                    expand_s / narrow_expand,
                )
            )
            admin.delete_topics(["isr-wide"])["isr-wide"].result(120)

            narrow_s = _reassign(admin, client, "move-narrow", NARROW)
            say(f"scale_controller: reassigned {NARROW} partitions in {narrow_s:.2f} s")
            wide_s = _reassign(admin, client, "move-wide", wide)
            say(f"scale_controller: reassigned {wide} partitions in {wide_s:.2f} s")
            results.append(
                Result(
                    "scale_controller",
                    f"reassign every partition of a topic, {wide} vs {NARROW} (RF 2)",
                    "s",
                    f"{wide} partitions",
                    wide_s,
                    f"{NARROW} partitions",
                    narrow_s,
                    wide_s / narrow_s,
                    aim_at_most=20,
                )
            )
            return results
        finally:
            if client is not None:
                client.close()
            if cluster is not None:
                cluster.kill_all()
            zookeeper.stop()
