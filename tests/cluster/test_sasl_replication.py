"""Replication over SASL: three brokers whose INTERNAL (inter-broker) listener is
SASL_PLAINTEXT with PLAIN, or SASL_SSL (TLS with the brokers' PEM stores, then SCRAM-SHA-512
as the broker user created in ZooKeeper first), so followers, the controller channel and
controlled shutdown authenticate with sasl.mechanism.inter.broker.protocol and the
listener's JAAS username/password. Sessions last connections.max.reauth.ms=3000, so brokers'
own connections must renew them while replicating. acks=all through a leader kill and a
graceful restart: every acknowledged record survives once."""

from __future__ import annotations

import pytest

from tests.integration.test_sasl_scram import brokerd_configs
from tests.integration.wire import WireClient, request
from tests.sasl_support import plain_jaas
from tests.tls_certs import make_pki, ssl_props

from .checker import Workload, check_queue, check_replicas_identical, consume_all, create_topic
from .conftest import Cluster

SCRAM_JAAS = (
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" '
    'password="admin-secret";'
)


def sasl_props(mechanism: str) -> dict[str, str]:
    return {
        "listener.name.internal.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.internal.plain.sasl.jaas.config": plain_jaas("admin", "admin-secret"),
        "listener.name.internal.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "sasl.mechanism.inter.broker.protocol": mechanism,
        "connections.max.reauth.ms": "3000",
    }


@pytest.fixture(
    params=[("SASL_PLAINTEXT", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-512")],
    ids=["SASL_PLAINTEXT-PLAIN", "SASL_SSL-SCRAM-SHA-512"],
)
def sasl_cluster(request, zookeeper, tmp_path_factory):
    protocol, mechanism = request.param
    props = sasl_props(mechanism)
    if protocol == "SASL_SSL":
        props.update(ssl_props(make_pki(tmp_path_factory.mktemp("pki"))))
    made = Cluster(zookeeper, tmp_path_factory, internal_protocol=protocol, **props)
    if mechanism.startswith("SCRAM"):
        done = brokerd_configs(
            made.brokers[1].props["zookeeper.connect"],
            "--alter",
            "--add-config",
            "SCRAM-SHA-512=[password=admin-secret]",
            "--entity-type",
            "users",
            "--entity-name",
            "admin",
        )
        assert done.returncode == 0, done.stderr
    made.start()
    yield made
    made.kill_all()


def test_replication_over_sasl_survives_a_leader_kill(sasl_cluster, topic_name):
    cluster = sasl_cluster
    create_topic(cluster, topic_name)  # full ISR: followers fetch over SASL
    some = next(iter(cluster.brokers.values()))
    with WireClient(some.internal_bootstrap) as anonymous:  # no authentication: closed
        anonymous.send(
            request(
                3,
                12,
                topics=None,
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
        assert anonymous.is_closed_by_peer(wait=10)

    workload = Workload(cluster.bootstrap, topic_name).start()
    workload.wait_for_acks(100)
    leader = cluster.leader_of(topic_name)
    cluster.brokers[leader].kill()
    workload.wait_for_acks(100, timeout=60)
    assert cluster.leader_of(topic_name) != leader
    cluster.brokers[leader].start()
    cluster.wait_full_isr(topic_name)  # the restarted broker caught up over SASL
    workload.wait_for_acks(300)  # several session lifetimes of replication
    new_leader = cluster.leader_of(topic_name)
    assert cluster.brokers[new_leader].terminate() == 0  # controlled shutdown over SASL
    workload.wait_for_acks(100, timeout=60)
    cluster.brokers[new_leader].start()
    cluster.wait_full_isr(topic_name)
    workload.stop()
    assert not workload.failed
    check_queue(workload, consume_all(cluster.bootstrap, topic_name))
    check_replicas_identical(cluster, topic_name)
    for broker in cluster.brokers.values():
        assert "Invalid username or password" not in broker.output  # no broker was refused
        assert "invalid credentials" not in broker.output
        assert "SASL session expired" not in broker.output  # brokers renewed their sessions
