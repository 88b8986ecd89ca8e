"""Topics created and deleted in quick succession against three brokers.

Every answer must be one Kafka gives, no broker may log a traceback, no partition
directory may outlive its topic, and a producer writing to another topic meanwhile loses
nothing it was acknowledged for.
"""

from __future__ import annotations

import datetime
import random
import threading
import time
import uuid

import pytest

from brokerd.protocol.errors import ErrorCode
from tests.integration.wire import WireClient, nested, request

from .checker import Workload, check_queue, consume_all, create_topic
from .conftest import Cluster

TIMEOUT = datetime.timedelta(seconds=30)
CLIENTS = 3
TOPICS_PER_CLIENT = 20  # 60 topics in all


@pytest.fixture
def churn_cluster(zookeeper, tmp_path_factory):
    # Deleted directories go at once (Kafka waits file.delete.delay.ms, 60 s by default).
    made = Cluster(zookeeper, tmp_path_factory, log_segment_delete_delay_ms="0").start()
    yield made
    made.kill_all()


def create(client: WireClient, name: str) -> tuple[ErrorCode, str | None]:
    topic = nested(
        19,
        7,
        "CreatableTopic",
        name=name,
        num_partitions=3,
        replication_factor=3,
        assignments=(),
        configs=(),
    )
    result = client.call(request(19, 7, topics=(topic,), timeout=TIMEOUT, validate_only=False))
    return ErrorCode(result.topics[0].error_code), result.topics[0].error_message


def delete(client: WireClient, name: str) -> tuple[ErrorCode, str | None]:
    state = nested(20, 6, "DeleteTopicState", name=name, topic_id=None)
    result = client.call(request(20, 6, topics=(state,), timeout=TIMEOUT)).responses[0]
    return ErrorCode(result.error_code), result.error_message


def leftovers(cluster: Cluster, prefix: str) -> dict[int, list[str]]:
    """Per broker, the log dir entries of topics named `prefix`..."""
    found = {}
    for broker_id, broker in cluster.brokers.items():
        names = sorted(p.name for p in (broker.dir / "logs").iterdir() if p.name.startswith(prefix))
        if names:
            found[broker_id] = names
    return found


def wait_until_clean(cluster: Cluster, prefix: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while leftovers(cluster, prefix):
        assert time.monotonic() < deadline, f"left behind: {leftovers(cluster, prefix)}"
        time.sleep(0.2)


def assert_no_traceback(cluster: Cluster) -> None:
    for broker_id, broker in cluster.brokers.items():
        output = broker.output
        assert "Traceback" not in output, f"broker {broker_id}:\n{_around_traceback(output)}"


def _around_traceback(output: str) -> str:
    at = output.index("Traceback")
    return output[max(0, at - 2000) : at + 3000]


def test_delete_right_after_create(churn_cluster):
    """Create through one broker, delete at once through another: Kafka's answers (the
    deleting broker may not have heard of the topic yet: ZooKeeper has)."""
    prefix = f"quick-{uuid.uuid4().hex[:6]}-"
    brokers = list(churn_cluster.brokers.values())
    clients = [WireClient(b.bootstrap, timeout=60) for b in brokers]
    answers = []
    try:
        for i in range(20):
            creator, deleter = clients[i % 3], clients[(i + 1) % 3]
            answers.append(("create", *create(creator, f"{prefix}{i}")))
            answers.append(("delete", *delete(deleter, f"{prefix}{i}")))
    finally:
        for client in clients:
            client.close()
    assert [a for a in answers if a[1] != ErrorCode.none] == []
    wait_until_clean(churn_cluster, prefix)
    assert_no_traceback(churn_cluster)


def test_topic_churn_beside_a_producer(churn_cluster, topic_name):
    cluster = churn_cluster
    create_topic(cluster, topic_name)
    workload = Workload(cluster.bootstrap, topic_name).start()
    workload.wait_for_acks(100)

    prefix = f"churn-{uuid.uuid4().hex[:6]}-"
    contested = [f"{prefix}shared-{k}" for k in range(3)]  # every client creates and deletes
    answers: list[tuple[str, str, ErrorCode, str | None]] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def client_loop(worker: int) -> None:
        rng = random.Random(worker)
        clients = [WireClient(b.bootstrap, timeout=60) for b in cluster.brokers.values()]
        try:
            for i in range(TOPICS_PER_CLIENT):
                own = f"{prefix}{worker}-{i}"
                shared = contested[i % len(contested)]
                for op, name in (("create", own), ("create", shared)):
                    got = create(rng.choice(clients), name)
                    with lock:
                        answers.append((op, name, *got))
                for op, name in (("delete", own), ("delete", shared)):
                    got = delete(rng.choice(clients), name)
                    with lock:
                        answers.append((op, name, *got))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failures.append(exc)
        finally:
            for client in clients:
                client.close()

    threads = [threading.Thread(target=client_loop, args=(w,)) for w in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not failures, failures
    assert not any(t.is_alive() for t in threads), "the churn did not end"

    # Own topics: created and deleted, nothing else. Contested ones: Kafka's answers to a
    # race for one name (it exists, is being deleted, or is gone already).
    own_answers = [a for a in answers if "shared" not in a[1]]
    assert len(own_answers) == 2 * CLIENTS * TOPICS_PER_CLIENT
    assert [a for a in own_answers if a[2] != ErrorCode.none] == []
    allowed = {
        "create": {ErrorCode.none, ErrorCode.topic_already_exists},
        "delete": {ErrorCode.none, ErrorCode.unknown_topic_or_partition},
    }
    assert [a for a in answers if a[2] not in allowed[a[0]]] == []

    with WireClient(cluster.brokers[1].bootstrap, timeout=60) as client:
        for name in contested:
            assert delete(client, name)[0] in allowed["delete"]
    wait_until_clean(cluster, prefix)

    workload.wait_for_acks(100)
    workload.stop()
    assert not workload.failed, list(workload.failed.items())[:5]
    check_queue(workload, consume_all(cluster.bootstrap, topic_name))
    assert_no_traceback(cluster)
