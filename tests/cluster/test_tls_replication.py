"""Replication over TLS: three brokers whose INTERNAL (inter-broker) listener is SSL with
mutual TLS required, so followers and the controller connect with the broker's own key and
trust stores. acks=all through a leader kill: every acknowledged record survives once."""

from __future__ import annotations

import pytest

from tests.integration.wire import WireClient, request
from tests.tls_certs import make_pki, ssl_props

from .checker import Workload, check_queue, check_replicas_identical, consume_all, create_topic
from .conftest import Cluster


@pytest.fixture
def tls_cluster(zookeeper, tmp_path_factory):
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    props = ssl_props(pki, **{"listener.name.internal.ssl.client.auth": "required"})
    made = Cluster(zookeeper, tmp_path_factory, internal_protocol="SSL", **props).start()
    yield made
    made.kill_all()


def test_replication_over_ssl_survives_a_leader_kill(tls_cluster, topic_name):
    cluster = tls_cluster
    create_topic(cluster, topic_name)  # full ISR: followers fetch over TLS
    # The inter-broker port speaks only TLS: a plaintext request is not answered.
    some = next(iter(cluster.brokers.values()))
    with WireClient(some.internal_bootstrap) as plain:
        plain.send(request(18, 3, client_software_name="t", client_software_version="1"))
        assert plain.is_closed_by_peer(wait=10)

    workload = Workload(cluster.bootstrap, topic_name).start()
    workload.wait_for_acks(100)
    leader = cluster.leader_of(topic_name)
    cluster.brokers[leader].kill()
    workload.wait_for_acks(100, timeout=60)
    assert cluster.leader_of(topic_name) != leader
    cluster.brokers[leader].start()
    cluster.wait_full_isr(topic_name)  # the restarted broker caught up over TLS
    workload.wait_for_acks(100)
    workload.stop()
    assert not workload.failed
    check_queue(workload, consume_all(cluster.bootstrap, topic_name))
    check_replicas_identical(cluster, topic_name)
