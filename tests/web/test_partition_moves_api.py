"""Leader elections and partition reassignments through the REST admin, against a real
three-broker cluster (tests/cluster's Cluster, automatic leader rebalancing off so a moved
leadership stays where it is until someone elects): Kafka's per-partition answers by name,
4xx with a message for bad input, operator role, audit trail."""

from __future__ import annotations

import contextlib
import os
import signal

import pytest
from django.test import Client

from dashboard.core.models import AuditLog
from tests.cluster.conftest import Cluster
from tests.cluster.test_reassignment import client_for, create_placed_topic, wait_placed

from .conftest import wait_until

pytestmark = pytest.mark.django_db

ADMIN_TOKEN = "partition-moves-test-admin-token"
API = "/api/v3/clusters/local"


@pytest.fixture(scope="module")
def three_brokers(zookeeper, tmp_path_factory):
    cluster = Cluster(
        zookeeper,
        tmp_path_factory,
        admin_token=ADMIN_TOKEN,
        auto_leader_rebalance_enable="false",
    ).start()
    token_file = tmp_path_factory.mktemp("moves-token") / "admin.token"
    token_file.write_text(ADMIN_TOKEN)
    yield cluster, token_file
    cluster.kill_all()


@pytest.fixture
def moves_cluster(db, three_brokers):
    from dashboard.core.models import Cluster as ClusterModel

    cluster, token_file = three_brokers
    ClusterModel.objects.create(
        name="local",
        bootstrap_servers=cluster.bootstrap,
        zookeeper_connect=cluster.brokers[1].props["zookeeper.connect"],
        admin_token_ref=f"file:{token_file}",
    )
    return cluster


@contextlib.contextmanager
def paused(broker):
    """SIGSTOP a broker (well within its ZooKeeper session): it cannot fetch meanwhile. Only
    the controller is asked meanwhile (a paused broker's admin API would not answer)."""
    os.kill(broker.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(broker.process.pid, signal.SIGCONT)


def partition(api, topic: str) -> dict:
    answer = api.get(f"{API}/topics/{topic}/partitions/0")
    assert answer.status_code == 200, answer.json()
    return answer.json()


def placed_on(answer: dict, replicas: list[int]) -> dict | None:
    """The partition as the API answered it, if its replicas are `replicas`."""
    return answer if [r["broker_id"] for r in answer["replica_states"]] == replicas else None


def reorder(cluster, topic: str, replicas: list[int]) -> None:
    """Change the preferred leader without moving data (a reassignment to the same brokers)."""
    with client_for(cluster) as client:
        client.admin.alter_partition_reassignments({(topic, 0): replicas})
    wait_placed(cluster, topic, replicas)


def test_reassign_a_partition_cancel_one_and_refuse_bad_ones(
    moves_cluster, operator_api, viewer_api, topic_name
):
    cluster = moves_cluster
    create_placed_topic(cluster, topic_name, [1, 2])
    url = f"{API}/topics/{topic_name}/partitions/0/reassignment"

    # In progress while broker 3 cannot copy: listed per partition, per topic and for all.
    with paused(cluster.brokers[3]):
        started = operator_api.post(url, {"replicas": [1, 3]}, format="json")
        assert started.status_code == 202, started.json()
        body = started.json()
        assert body["kind"] == "KafkaReassignment" and body["metadata"]["self"].endswith(url)
        assert (body["adding_replicas"], body["removing_replicas"]) == ([3], [2])
        assert body["target_replicas"] == [1, 3] and sorted(body["replicas"]) == [1, 2, 3]
        assert viewer_api.get(url).json()["adding_replicas"] == [3]
        topic_level = viewer_api.get(f"{API}/topics/{topic_name}/partitions/-/reassignment")
        assert [r["partition_id"] for r in topic_level.json()["data"]] == [0]
        everywhere = viewer_api.get(f"{API}/topics/-/partitions/-/reassignment").json()["data"]
        assert topic_name in {r["topic_name"] for r in everywhere}
        assert viewer_api.delete(url).status_code == 403
        assert operator_api.delete(url).status_code == 204
    gone = viewer_api.get(url)
    assert gone.status_code == 404 and "no reassignment" in gone.json()["message"]
    again = operator_api.delete(url)
    assert again.status_code == 404 and again.json()["kafka_error"] == "NO_REASSIGNMENT_IN_PROGRESS"
    wait_placed(cluster, topic_name, [1, 2])

    # A move that completes: the new broker catches up, the old one leaves.
    done = operator_api.post(url, {"replicas": [3, 2]}, format="json")
    assert done.status_code == 202, done.json()
    wait_until(lambda: viewer_api.get(url).status_code == 404, 60, 0.3)
    wait_placed(cluster, topic_name, [3, 2])
    # wait_placed reads the controller's metadata; the dashboard asks another broker, whose
    # cache gets the controller's UpdateMetadata a moment later.
    moved = wait_until(lambda: placed_on(partition(viewer_api, topic_name), [3, 2]), 30, 0.3)
    assert [r["broker_id"] for r in moved["replica_states"]] == [3, 2]
    assert moved["reassignment"] is None

    # Bad input: 400 with the reason (ours or Kafka's), 404 for what is not there, 403.
    for bad, reason in [
        ({"replicas": []}, "replicas"),
        ({"replicas": [1, 1]}, "replicas"),
        ({"replicas": [-1]}, "replicas"),
        ({}, "replicas"),
    ]:
        refused = operator_api.post(url, bad, format="json")
        assert refused.status_code == 400 and reason in refused.json()["errors"], refused.json()
    unknown_broker = operator_api.post(url, {"replicas": [1, 99]}, format="json")
    assert unknown_broker.status_code == 400, unknown_broker.json()
    assert unknown_broker.json()["kafka_error"] == "INVALID_REPLICA_ASSIGNMENT"
    missing = operator_api.post(
        f"{API}/topics/{topic_name}-missing/partitions/0/reassignment",
        {"replicas": [1]},
        format="json",
    )
    assert missing.status_code == 404 and missing.json()["message"]
    assert viewer_api.post(url, {"replicas": [1, 2]}, format="json").status_code == 403
    audited = AuditLog.objects.filter(target=f"{topic_name}-0").order_by("timestamp")
    assert [(e.action, e.succeeded) for e in audited] == [
        ("partition.reassign", True),
        ("partition.reassign.cancel", True),
        ("partition.reassign.cancel", False),
        ("partition.reassign", True),
        ("partition.reassign", False),
    ]


def test_elect_the_preferred_leader(moves_cluster, operator_api, viewer_api, topic_name):
    cluster = moves_cluster
    create_placed_topic(cluster, topic_name, [1, 2, 3])
    reorder(cluster, topic_name, [2, 1, 3])  # broker 2 is now preferred; 1 still leads
    assert partition(viewer_api, topic_name)["leader"] == 1
    url = f"{API}/topics/{topic_name}/partitions/0:elect-leader"

    assert viewer_api.post(url, {}, format="json").status_code == 403
    elected = operator_api.post(url, {"election_type": "PREFERRED"}, format="json")
    assert elected.status_code == 200, elected.json()
    body = elected.json()
    assert body["kind"] == "KafkaLeaderElection"
    assert (body["result"], body["error_code"]) == ("ELECTED", 0)
    wait_until(lambda: partition(viewer_api, topic_name)["leader"] == 2, 30, 0.3)
    assert cluster.leader_of(topic_name) == 2

    not_needed = operator_api.post(url, {}, format="json")  # PREFERRED is the default
    assert not_needed.status_code == 200
    assert not_needed.json()["result"] == "ELECTION_NOT_NEEDED"

    # The batch form: one answer per partition, each in Kafka's words.
    batch = operator_api.post(
        f"{API}/partitions:elect-leaders",
        {
            "election_type": "PREFERRED",
            "partitions": [
                {"topic_name": topic_name, "partition_id": 0},
                {"topic_name": topic_name, "partition_id": 7},
            ],
        },
        format="json",
    )
    assert batch.status_code == 200, batch.json()
    results = {r["partition_id"]: r["result"] for r in batch.json()["data"]}
    assert results == {0: "ELECTION_NOT_NEEDED", 7: "UNKNOWN_TOPIC_OR_PARTITION"}

    # Bad input: 400 with the field; unknown partitions 404.
    for bad in [{"election_type": "SIDEWAYS"}, {"election_type": 1}]:
        refused = operator_api.post(url, bad, format="json")
        assert refused.status_code == 400 and "election_type" in refused.json()["errors"]
    empty = operator_api.post(f"{API}/partitions:elect-leaders", {"partitions": []}, format="json")
    assert empty.status_code == 400 and "partitions" in empty.json()["errors"]
    nowhere = operator_api.post(
        f"{API}/topics/{topic_name}/partitions/9:elect-leader", {}, format="json"
    )
    assert (
        nowhere.status_code == 404 and nowhere.json()["kafka_error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    )

    # The preferred leader down: 409 PREFERRED_LEADER_NOT_AVAILABLE, leadership unchanged.
    reorder(cluster, topic_name, [3, 1, 2])
    cluster.brokers[3].terminate()
    try:
        cluster.wait_for(
            lambda m: 3 not in m["topics"][topic_name][0]["isr"], 30, "broker 3 out of the ISR"
        )
        refused = operator_api.post(url, {}, format="json")
        assert refused.status_code == 409, refused.json()
        assert refused.json()["kafka_error"] == "PREFERRED_LEADER_NOT_AVAILABLE"
        assert "down or out of the ISR" in refused.json()["message"]
    finally:
        cluster.brokers[3].start()
    audited = AuditLog.objects.filter(action__startswith="partition").order_by("timestamp")
    assert [(e.action, e.succeeded) for e in audited][-1] == (
        "partition.elect-leader.preferred",
        False,
    )
    assert AuditLog.objects.filter(action="partitions.elect-leaders.preferred").count() == 1

    # Back in the ISR, broker 3 takes over when every partition's preferred leader is elected
    # (only the partitions whose leader moved are listed, as Kafka answers).
    cluster.wait_for(lambda m: 3 in m["topics"][topic_name][0]["isr"], 60, "broker 3 in sync")
    everything = operator_api.post(f"{API}/partitions:elect-leaders", {}, format="json")
    assert everything.status_code == 200, everything.json()
    results = {(r["topic_name"], r["partition_id"]): r["result"] for r in everything.json()["data"]}
    assert results[(topic_name, 0)] == "ELECTED" and set(results.values()) == {"ELECTED"}
    wait_until(lambda: partition(viewer_api, topic_name)["leader"] == 3, 30, 0.3)


def test_only_operators_get_the_buttons(moves_cluster, viewer, operator, topic_name):
    create_placed_topic(moves_cluster, topic_name, [1, 2])
    pages = {}
    for user in (viewer, operator):
        browser = Client()
        browser.force_login(user)
        answer = browser.get(f"/clusters/local/topics/{topic_name}/")
        assert answer.status_code == 200
        pages[user.username] = answer.content.decode()
    for marker in ("elect-preferred", 'id="reassign"', "partition-moves.js"):
        assert marker in pages[operator.username] and marker not in pages[viewer.username]


def test_unclean_election_brings_an_offline_partition_back(
    moves_cluster, operator_api, viewer_api, topic_name
):
    cluster = moves_cluster
    create_placed_topic(cluster, topic_name, [2, 3])
    url = f"{API}/topics/{topic_name}/partitions/0:elect-leader"
    cluster.brokers[3].terminate()  # leaves the ISR cleanly
    cluster.wait_for(lambda m: m["topics"][topic_name][0]["isr"] == [2], 30, "ISR [2]")
    cluster.brokers[2].kill()  # the last ISR member: the partition goes offline
    try:
        cluster.wait_for(
            lambda m: m["topics"][topic_name][0]["leader"] not in m["brokers"], 30, "no leader"
        )
        nobody = operator_api.post(url, {"election_type": "UNCLEAN"}, format="json")
        assert nobody.status_code == 409, nobody.json()
        assert nobody.json()["kafka_error"] == "ELIGIBLE_LEADERS_NOT_AVAILABLE"

        # Broker 3 returns, out of the ISR: a clean election cannot pick it, an unclean one can.
        cluster.brokers[3].start()
        cluster.wait_for(lambda m: 3 in m["brokers"], 30, "broker 3 registered")
        assert partition(viewer_api, topic_name)["leader"] is None
        preferred = operator_api.post(url, {"election_type": "PREFERRED"}, format="json")
        assert preferred.json()["kafka_error"] == "PREFERRED_LEADER_NOT_AVAILABLE"
        elected = operator_api.post(url, {"election_type": "UNCLEAN"}, format="json")
        assert elected.status_code == 200, elected.json()
        assert (elected.json()["result"], elected.json()["election_type"]) == ("ELECTED", "UNCLEAN")
        wait_until(lambda: partition(viewer_api, topic_name)["leader"] == 3, 30, 0.3)
    finally:
        cluster.brokers[2].start()
    actions = AuditLog.objects.filter(target=f"{topic_name}-0").values_list("action", "succeeded")
    assert list(actions.order_by("timestamp")) == [
        ("partition.elect-leader.unclean", False),
        ("partition.elect-leader.preferred", False),
        ("partition.elect-leader.unclean", True),
    ]
