"""Failover under load: three brokers, RF 3, min.insync.replicas 2, acks=all, idempotent
producer; every acknowledged record must survive exactly once at its offset."""

from __future__ import annotations

import time

from .checker import Workload, check_queue, check_replicas_identical, consume_all, create_topic


def test_replication_keeps_replicas_identical(cluster, topic_name):
    create_topic(cluster, topic_name)
    workload = Workload(cluster.bootstrap, topic_name).start()
    workload.wait_for_acks(300)
    workload.stop()
    assert not workload.failed
    check_queue(workload, consume_all(cluster.bootstrap, topic_name))
    high = check_replicas_identical(cluster, topic_name)
    assert high >= len(workload.acked)


def test_kill_leader_five_times_under_load(cluster, topic_name):
    create_topic(cluster, topic_name)
    workload = Workload(cluster.bootstrap, topic_name).start()
    workload.wait_for_acks(100)
    for _ in range(5):
        leader = cluster.leader_of(topic_name)
        cluster.brokers[leader].kill()
        # A new leader from the ISR takes writes again...
        workload.wait_for_acks(100, timeout=60)
        assert cluster.leader_of(topic_name) != leader
        # ...and the killed broker comes back, catches up and rejoins the ISR.
        cluster.brokers[leader].start()
        cluster.wait_full_isr(topic_name)
    workload.wait_for_acks(100)
    workload.stop()
    check_queue(workload, consume_all(cluster.bootstrap, topic_name))
    check_replicas_identical(cluster, topic_name)


def test_kill_controller(cluster, topic_name):
    create_topic(cluster, topic_name)
    workload = Workload(cluster.bootstrap, topic_name).start()
    workload.wait_for_acks(100)
    controller = cluster.metadata()["controller"]
    cluster.brokers[controller].kill()
    cluster.wait_for(
        lambda m: m["controller"] in m["brokers"] and m["controller"] != controller,
        what="a new controller",
    )
    workload.wait_for_acks(200)
    cluster.brokers[controller].start()
    cluster.wait_full_isr(topic_name)
    workload.wait_for_acks(100)
    workload.stop()
    check_queue(workload, consume_all(cluster.bootstrap, topic_name))
    check_replicas_identical(cluster, topic_name)


def test_rolling_restart(cluster, topic_name):
    create_topic(cluster, topic_name)
    workload = Workload(cluster.bootstrap, topic_name).start()
    workload.wait_for_acks(100)
    for broker in list(cluster.brokers.values()):
        assert broker.terminate() == 0
        time.sleep(0.5)
        broker.start()
        cluster.wait_full_isr(topic_name)
        workload.wait_for_acks(50)
    workload.stop()
    check_queue(workload, consume_all(cluster.bootstrap, topic_name))
    check_replicas_identical(cluster, topic_name)
