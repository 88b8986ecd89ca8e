"""A leader paused past its ZooKeeper session (SIGSTOP), then resumed (SIGCONT): the zombie
case. While it was away another leader took over at a higher epoch; whatever the zombie
accepts after it wakes cannot reach its ISR (the followers fetch from the new leader, and its
conditional ISR write fails), so none of it is acknowledged with acks=all and no
acknowledged record is lost once it rejoins as a follower."""

from __future__ import annotations

import os
import signal
import time

from .checker import Workload, check_queue, check_replicas_identical, consume_all, create_topic
from .conftest import SESSION_TIMEOUT_MS


def test_paused_leader_does_not_acknowledge_after_it_is_replaced(cluster, topic_name):
    create_topic(cluster, topic_name)
    workload = Workload(cluster.bootstrap, topic_name).start()
    workload.wait_for_acks(100)
    leader = cluster.leader_of(topic_name)
    process = cluster.brokers[leader].process
    os.killpg(process.pid, signal.SIGSTOP)
    try:
        time.sleep(SESSION_TIMEOUT_MS / 1000 + 1)
        cluster.wait_for(
            lambda m: m["topics"].get(topic_name, {}).get(0, {}).get("leader") not in (leader, -1),
            what="a new leader",
        )
        workload.wait_for_acks(100)
    finally:
        os.killpg(process.pid, signal.SIGCONT)
    cluster.wait_full_isr(topic_name)
    workload.wait_for_acks(100)
    workload.stop()
    check_queue(workload, consume_all(cluster.bootstrap, topic_name))
    check_replicas_identical(cluster, topic_name)
