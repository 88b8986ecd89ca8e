"""Preferred leader election: after the preferred replica (the first assigned) is killed and
comes back as a follower, ElectLeaders (confluent-kafka's AdminClient) or the controller's
automatic rebalance (auto.leader.rebalance.enable) makes it the leader again."""

from __future__ import annotations

import pytest
from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient

from .checker import create_topic
from .conftest import Cluster


def _lose_preferred_leadership(cluster: Cluster, topic: str) -> int:
    """Kill the preferred replica, restart it, and wait until it is back in the ISR while
    another broker leads. Returns its id."""
    meta = cluster.metadata(topic)
    preferred = meta["topics"][topic][0]["replicas"][0]
    assert cluster.leader_of(topic) == preferred
    cluster.brokers[preferred].kill()
    cluster.wait_for(
        lambda m: m["topics"][topic][0]["leader"] in m["brokers"] - {preferred},
        what="another leader",
    )
    cluster.brokers[preferred].start()
    cluster.wait_full_isr(topic)
    return preferred


def _elect(cluster: Cluster, election: ElectionType, topic: str) -> dict:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    future = admin.elect_leaders(election, [TopicPartition(topic, 0)])
    return {tp.partition: error for tp, error in future.result(30).items()}


@pytest.fixture
def manual_cluster(zookeeper, tmp_path_factory):
    made = Cluster(zookeeper, tmp_path_factory, auto_leader_rebalance_enable="false").start()
    yield made
    made.kill_all()


def test_elect_leaders_makes_the_preferred_replica_leader_again(manual_cluster, topic_name):
    cluster = manual_cluster
    create_topic(cluster, topic_name)
    preferred = _lose_preferred_leadership(cluster, topic_name)
    assert cluster.leader_of(topic_name) != preferred

    # Unclean election is not needed while a leader is live.
    error = _elect(cluster, ElectionType.UNCLEAN, topic_name)[0]
    assert error is not None and error.name() == "ELECTION_NOT_NEEDED"

    assert _elect(cluster, ElectionType.PREFERRED, topic_name) == {0: None}
    cluster.wait_for(
        lambda m: m["topics"][topic_name][0]["leader"] == preferred,
        what="the preferred replica leading",
    )
    # Asked again, there is nothing to do.
    error = _elect(cluster, ElectionType.PREFERRED, topic_name)[0]
    assert error is not None and error.name() == "ELECTION_NOT_NEEDED"


@pytest.fixture
def rebalancing_cluster(zookeeper, tmp_path_factory):
    made = Cluster(zookeeper, tmp_path_factory, leader_imbalance_check_interval_seconds="2").start()
    yield made
    made.kill_all()


def test_automatic_rebalance_returns_leadership_to_the_preferred_replica(
    rebalancing_cluster, topic_name
):
    cluster = rebalancing_cluster
    create_topic(cluster, topic_name)
    preferred = _lose_preferred_leadership(cluster, topic_name)
    cluster.wait_for(
        lambda m: m["topics"][topic_name][0]["leader"] == preferred,
        timeout=30,
        what="the automatic rebalance to restore the preferred leader",
    )
