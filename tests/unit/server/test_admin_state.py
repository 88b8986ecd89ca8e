"""The admin API's partition views and the state gauges, read through an AdminContext of
real collaborators (a replica manager over a temporary log dir, an unstarted controller)."""

import asyncio

from brokerd.admin import AdminContext, BrokerMetrics, BrokerStateCollector, state
from brokerd.coordination.controller import Controller
from brokerd.server.failure_probes import FailureProbes
from tests.integration.wire_calls import batch
from tests.unit.replication.replica_setup import LOCAL, PEER, Setup
from tests.unit.server.handler_context import broker_config


def _admin_context(made: Setup, metrics: BrokerMetrics) -> AdminContext:
    config = broker_config({"broker.id": str(LOCAL)})
    return AdminContext(
        config=config,
        broker_id=LOCAL,
        metadata=made.metadata,
        log_manager=made.log_manager,
        replicas=made.replicas,
        controller=Controller(made.zk, LOCAL, made.metadata, config),
        zk=made.zk,
        metrics=metrics,
        failure_probes=FailureProbes([]),
        started=asyncio.Event(),
        advertised_endpoints=lambda: config.advertised_listeners,
        cleaner=lambda: None,
        cleaner_thread=lambda: None,
    )


def _samples(metrics: BrokerMetrics) -> dict[tuple[str, tuple], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in metrics.registry.collect()
        for s in family.samples
        if s.name.startswith("brokerd_")
    }


async def test_partition_views_and_gauges_follow_the_replica_manager(replicas):
    led = await replicas.create_topic("led", [LOCAL], [LOCAL])
    await replicas.become("led", led, [LOCAL])
    followed = await replicas.create_topic("followed", [PEER, LOCAL], [PEER, LOCAL])
    await replicas.become("followed", followed, [PEER, LOCAL])
    leader = replicas.replicas.leader("led", 0)
    replicas.replicas.append(leader, bytes(batch(b"a", b"b")), acks=1)

    metrics = BrokerMetrics()
    ctx = _admin_context(replicas, metrics)
    views = {v["topic"]: v for v in state.partition_views(ctx)}
    assert state.local_partitions(ctx) == [("followed", 0), ("led", 0)]
    assert views["led"]["status"] == "online" and views["led"]["is_leader"]
    assert (views["led"]["log_end_offset"], views["led"]["high_watermark"]) == (2, 2)
    assert views["led"]["isr"] == [LOCAL] and not views["led"]["under_replicated"]
    assert not views["followed"]["is_leader"] and views["followed"]["leader"] == PEER
    assert state.offline_count(ctx) == 0

    metrics.add_collector(BrokerStateCollector(ctx))
    parked = asyncio.create_task(replicas.replicas.purgatory.wait([("led", 0)], 30))
    await asyncio.sleep(0)
    samples = _samples(metrics)
    labels = (("partition", "0"), ("topic", "led"))
    assert samples[("brokerd_partition_log_end_offset", labels)] == 2
    assert samples[("brokerd_leader_partitions", ())] == 1
    assert samples[("brokerd_fetch_purgatory_size", ())] == 1
    assert samples[("brokerd_controller_active", ())] == 0
    assert samples[("brokerd_log_cleaner_passes_total", ())] == 0
    replicas.replicas.purgatory.notify(("led", 0))
    assert await parked
    assert _samples(metrics)[("brokerd_fetch_purgatory_size", ())] == 0
