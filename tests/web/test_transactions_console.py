"""Transactions in the console against a real broker with a real transactional producer
(confluent-kafka): the REST listing and detail (/api/v3/clusters/{c}/transactions...), the
transactions page, and the topic page's last stable offset and open transaction per
partition, while a transaction is open and after it commits."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from django.test import Client

from tests.conftest import new_broker

from .conftest import make_user, register, token_client, wait_until

pytestmark = pytest.mark.django_db(transaction=True)
TIMEOUT = 30


@pytest.fixture(scope="module")
def txn_broker(zookeeper, tmp_path_factory):
    """One broker whose __transaction_state has one replica (so a lone broker coordinates)."""
    process = new_broker(
        zookeeper,
        tmp_path_factory,
        num_partitions="2",
        offsets_topic_num_partitions="3",
        offsets_topic_replication_factor="1",
        transaction_state_log_num_partitions="3",
        transaction_state_log_replication_factor="1",
        transaction_state_log_min_isr="1",
    ).start()
    yield process
    process.kill()


@pytest.fixture
def txn_cluster(db, txn_broker):
    return register(txn_broker)


def open_transaction(bootstrap: str, topic: str, transactional_id: str) -> Producer:
    """3 committed records in partition 0, then a transaction left open holding 2 more."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(TIMEOUT)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(TIMEOUT)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, b"committed-%d" % i, partition=0)
    producer.commit_transaction(TIMEOUT)  # offsets 0-2, its marker at 3
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, b"open-%d" % i, partition=0)  # offsets 4-5
    producer.flush(TIMEOUT)
    return producer


def test_transactions_rest_page_and_the_topic_pages_lso(txn_cluster, txn_broker):
    topic = f"txn-console-{uuid.uuid4().hex[:8]}"
    tid = f"console/tx-{uuid.uuid4().hex[:6]}"  # ids may hold "/"
    producer = open_transaction(txn_broker.bootstrap, topic, tid)
    viewer = make_user("tina", "viewer")
    api = token_client(viewer)

    def listed() -> dict:
        answer = api.get("/api/v3/clusters/local/transactions")
        assert answer.status_code == 200, answer.content
        return {t["transactional_id"]: t for t in answer.json()["data"]}

    # REST: the open transaction with its producer, epoch, coordinator and partition.
    row = listed()[tid]
    assert row["kind"] == "KafkaTransaction" and row["state"] == "Ongoing"
    assert row["partitions"] == [{"topic_name": topic, "partition_id": 0}]
    assert row["producer_id"] >= 0 and row["producer_epoch"] >= 0
    assert row["coordinator_id"] == txn_broker.broker_id
    assert row["transaction_start_time_ms"] > 0 and row["transaction_timeout_ms"] > 0
    detail = api.get(f"/api/v3/clusters/local/transactions/{tid}")
    assert detail.status_code == 200 and detail.json()["state"] == "Ongoing"
    assert detail.json()["metadata"]["self"].endswith(f"/transactions/{tid}")
    ongoing = api.get("/api/v3/clusters/local/transactions?state=Ongoing").json()["data"]
    assert tid in [t["transactional_id"] for t in ongoing]
    empty = api.get("/api/v3/clusters/local/transactions?state=PrepareAbort").json()["data"]
    assert tid not in [t["transactional_id"] for t in empty]
    assert api.get("/api/v3/clusters/local/transactions?state=Nope").status_code == 400
    missing = api.get("/api/v3/clusters/local/transactions/no-such-id")
    assert missing.status_code == 404, missing.content
    assert "TRANSACTIONAL_ID_NOT_FOUND" in missing.content.decode()
    assert token_client(None).get("/api/v3/clusters/local/transactions").status_code == 401

    # The page: the id, its state and partition, linked from every page's menu.
    browser = Client()
    browser.force_login(viewer)
    page = browser.get("/clusters/local/transactions/")
    assert page.status_code == 200
    shown = {r["transactional_id"]: r for r in page.context["rows"]}
    assert shown[tid]["state"] == "Ongoing"
    html = page.content.decode()
    assert f'data-id="{tid}" data-state="Ongoing"' in html and f"{topic}-0" in html
    assert (
        "/clusters/local/transactions/" in browser.get("/clusters/local/topics/").content.decode()
    )

    # The topic page: partition 0's LSO stops at the open transaction's first offset (4)
    # while HW is past its records (6); the open transaction is named with its producer.
    topic_page = browser.get(f"/clusters/local/topics/{topic}/")
    p0 = next(p for p in topic_page.context["partitions"] if p["partition_id"] == 0)
    assert (p0["high_watermark"], p0["last_stable_offset"]) == (6, 4)
    assert p0["open_transactions"] == [
        {
            "producer_id": row["producer_id"],
            "producer_epoch": row["producer_epoch"],
            "first_offset": 4,
            "last_timestamp": p0["open_transactions"][0]["last_timestamp"],
        }
    ]
    assert 'class="lso">4<' in topic_page.content.decode()

    # Committed: the LSO reaches the HW (past the marker), nothing is open any more.
    producer.commit_transaction(TIMEOUT)
    wait_until(lambda: listed()[tid]["state"] == "CompleteCommit", TIMEOUT)
    assert listed()[tid]["partitions"] == [] and listed()[tid]["duration_ms"] is None
    topic_page = browser.get(f"/clusters/local/topics/{topic}/")
    p0 = next(p for p in topic_page.context["partitions"] if p["partition_id"] == 0)
    assert (p0["high_watermark"], p0["last_stable_offset"]) == (7, 7)
    assert p0["open_transactions"] == []


def test_operators_abort_an_ongoing_transaction(txn_cluster, txn_broker):
    """The operator's abort (REST POST .../transactions/{id}:abort and the page's form with
    its confirmation): a confluent-kafka producer's open transaction is aborted by fencing
    the producer (force-terminate), viewers may not, an id with nothing ongoing is refused
    (409), and each abort lands in the audit log."""
    from confluent_kafka import KafkaException

    from dashboard.core.models import AuditLog

    topic = f"txn-abort-{uuid.uuid4().hex[:8]}"
    tid = f"console/abort-{uuid.uuid4().hex[:6]}"
    producer = open_transaction(txn_broker.bootstrap, topic, tid)
    viewer, operator = make_user("vera", "viewer"), make_user("otto", "operator")
    api = token_client(operator)
    before = api.get(f"/api/v3/clusters/local/transactions/{tid}").json()
    assert before["state"] == "Ongoing"

    refused = token_client(viewer).post(f"/api/v3/clusters/local/transactions/{tid}:abort")
    assert refused.status_code == 403, refused.content
    assert api.get(f"/api/v3/clusters/local/transactions/{tid}").json()["state"] == "Ongoing"

    answer = api.post(f"/api/v3/clusters/local/transactions/{tid}:abort")
    assert answer.status_code == 200, answer.content
    aborted = answer.json()
    assert aborted["kind"] == "KafkaTransaction" and aborted["transactional_id"] == tid
    # The fence succeeds once the abort is complete (its markers written), leaving the id
    # Empty under a new epoch, as Kafka's InitProducerId does.
    assert aborted["state"] == "Empty" and aborted["partitions"] == []
    assert aborted["producer_id"] == before["producer_id"]
    assert aborted["producer_epoch"] > before["producer_epoch"]
    again = api.post(f"/api/v3/clusters/local/transactions/{tid}:abort")
    assert again.status_code == 409, again.content
    assert again.json()["state"] == "Empty"
    missing = api.post("/api/v3/clusters/local/transactions/no-such-id:abort")
    assert missing.status_code == 404, missing.content
    with pytest.raises(KafkaException):  # fenced: its commit fails
        producer.commit_transaction(TIMEOUT)

    # The page: operators see "Abort…" on an Ongoing row, a confirmation panel, and the
    # abort runs only once the id is typed again.
    second = f"console-abort-{uuid.uuid4().hex[:6]}"
    open_transaction(txn_broker.bootstrap, f"{topic}-2", second)
    browser = Client()
    browser.force_login(viewer)
    html = browser.get("/clusters/local/transactions/").content.decode()
    assert "Abort…" not in html and "abort-form" not in html
    assert (
        browser.post(
            "/clusters/local/transactions/abort", {"transactional_id": second, "confirm": second}
        ).status_code
        == 403
    )
    browser.force_login(operator)
    html = browser.get("/clusters/local/transactions/").content.decode()
    assert f'href="?abort={second}">Abort…</a>' in html
    panel = browser.get(f"/clusters/local/transactions/?abort={second}").content.decode()
    assert 'id="abort-form"' in panel and f'value="{second}"' in panel
    wrong = browser.post(
        "/clusters/local/transactions/abort", {"transactional_id": second, "confirm": "nope"}
    )
    assert wrong.status_code == 400 and "to abort its transaction" in wrong.content.decode()
    assert api.get(f"/api/v3/clusters/local/transactions/{second}").json()["state"] == "Ongoing"
    done = browser.post(
        "/clusters/local/transactions/abort",
        {"transactional_id": second, "confirm": second},
        follow=True,
    )
    assert done.status_code == 200
    assert f"The transaction of {second} is aborted" in done.content.decode()
    assert api.get(f"/api/v3/clusters/local/transactions/{second}").json()["state"] == "Empty"
    entries = AuditLog.objects.filter(action="transaction.abort")
    assert {(e.target, e.succeeded) for e in entries} >= {
        (tid, True),
        (tid, False),
        (second, True),
    }
