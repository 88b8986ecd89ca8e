"""Consumer groups in the REST admin against a real broker and real kafka-python members:
REST Proxy v3 resources (groups, consumers, lags, lag summary), offset reset, deletion."""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from dashboard.core.models import AuditLog

from .conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v3/clusters/local"


def make_topic(broker, topic: str, partitions: int, records: dict[int, int]) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for partition, count in records.items():
        for i in range(count):
            producer.send(topic, b"v%d" % i, key=b"k%d" % i, partition=partition)
    producer.flush()
    producer.close()


def commit(broker, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Standalone commits (no members), as Kafka's tools make them."""
    from brokerd.client.sync import SyncClient

    with SyncClient(broker.bootstrap) as client:
        client.admin.commit_offsets(group, offsets)


def test_group_resources_follow_rest_proxy_v3(group_cluster, group_broker, viewer_api, topic_name):
    make_topic(group_broker, topic_name, 2, {0: 5, 1: 3})
    group = f"g-{topic_name}"
    consumer = KafkaConsumer(
        topic_name,
        bootstrap_servers=group_broker.bootstrap,
        group_id=group,
        client_id="lag-reader",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_records=2,
    )
    try:
        wait_until(lambda: consumer.poll(200) is not None and consumer.assignment(), 30)
        consumer.commit({tp: _meta(2) for tp in consumer.assignment() if tp.partition == 0})

        listed = viewer_api.get(f"{API}/consumer-groups").json()
        assert listed["kind"] == "KafkaConsumerGroupList"
        (mine,) = [g for g in listed["data"] if g["consumer_group_id"] == group]
        assert mine["kind"] == "KafkaConsumerGroup"
        assert mine["metadata"]["self"] == f"http://testserver{API}/consumer-groups/{group}"
        assert mine["metadata"]["resource_name"] == f"crn:///kafka=local/consumer-group={group}"
        assert (mine["state"], mine["is_simple"]) == ("STABLE", False)
        assert mine["partition_assignor"] in ("range", "roundrobin", "sticky")
        assert mine["coordinator"]["related"].endswith("/brokers/1")
        assert mine["lag_summary"]["related"].endswith(f"/consumer-groups/{group}/lag-summary")

        detail = viewer_api.get(f"{API}/consumer-groups/{group}").json()
        assert detail["consumer_group_id"] == group and detail["state"] == "STABLE"

        consumers = viewer_api.get(f"{API}/consumer-groups/{group}/consumers").json()
        assert consumers["kind"] == "KafkaConsumerList"
        (member,) = consumers["data"]
        assert member["kind"] == "KafkaConsumer" and member["client_id"] == "lag-reader"
        assert sorted(a["partition_id"] for a in member["assignments"]) == [0, 1]
        one = viewer_api.get(member["metadata"]["self"].replace("http://testserver", ""))
        assert one.status_code == 200 and one.json()["consumer_id"] == member["consumer_id"]

        lags = viewer_api.get(f"{API}/consumer-groups/{group}/lags").json()
        assert lags["kind"] == "KafkaConsumerLagList"
        by_partition = {row["partition_id"]: row for row in lags["data"]}
        p0 = by_partition[0]
        assert (p0["current_offset"], p0["log_end_offset"], p0["lag"]) == (2, 5, 3)
        assert p0["consumer_id"] == member["consumer_id"] and p0["client_id"] == "lag-reader"
        assert p0["metadata"]["self"].endswith(f"/lags/{topic_name}/partitions/0")
        # Assigned but never committed: no offset, no lag (as kafka-consumer-groups shows '-').
        assert (by_partition[1]["current_offset"], by_partition[1]["lag"]) == (None, None)
        assert by_partition[1]["log_end_offset"] == 3
        assert viewer_api.get(p0["metadata"]["self"]).json()["lag"] == 3

        summary = viewer_api.get(f"{API}/consumer-groups/{group}/lag-summary").json()
        assert summary["kind"] == "KafkaConsumerGroupLagSummary"
        assert (summary["max_lag"], summary["total_lag"]) == (3, 3)
        assert (summary["max_lag_topic_name"], summary["max_lag_partition_id"]) == (topic_name, 0)
        assert summary["max_lag_consumer"]["related"].endswith(member["consumer_id"])
    finally:
        consumer.close()


def _meta(offset: int):
    from kafka.structs import OffsetAndMetadata

    return OffsetAndMetadata(offset, "", -1)


def test_offset_reset_dry_run_execute_and_refusal_while_active(
    group_cluster, group_broker, operator_api, viewer_api, topic_name
):
    make_topic(group_broker, topic_name, 2, {0: 10, 1: 4})
    group = f"r-{topic_name}"
    commit(group_broker, group, {(topic_name, 0): 7, (topic_name, 1): 1})
    reset = f"{API}/consumer-groups/{group}/offsets:reset"

    planned = operator_api.post(reset, {"to": "earliest", "dry_run": True}, format="json")
    assert planned.status_code == 200, planned.json()
    rows = {r["partition_id"]: r for r in planned.json()["data"]}
    assert rows[0]["previous_offset"] == 7 and rows[0]["new_offset"] == 0
    lags = viewer_api.get(f"{API}/consumer-groups/{group}/lags").json()["data"]
    assert {r["partition_id"]: r["current_offset"] for r in lags} == {0: 7, 1: 1}  # dry run

    # An offset beyond the log end is clamped to it, as Kafka's tool does.
    body = {"to": "offset", "offset": 9, "topics": [{"topic_name": topic_name}]}
    done = operator_api.post(reset, body, format="json")
    assert {r["partition_id"]: r["new_offset"] for r in done.json()["data"]} == {0: 9, 1: 4}
    lags = viewer_api.get(f"{API}/consumer-groups/{group}/lags").json()["data"]
    assert {r["partition_id"]: r["lag"] for r in lags} == {0: 1, 1: 0}
    latest = operator_api.post(reset, {"to": "latest"}, format="json").json()["data"]
    assert {r["partition_id"]: r["new_offset"] for r in latest} == {0: 10, 1: 4}
    # A time after every record means the log end; a time before them all, the start.
    future = {"to": "timestamp", "timestamp": 2**42, "topics": [{"topic_name": topic_name, "partitions": [0]}]}  # fmt: skip
    assert operator_api.post(reset, future, format="json").json()["data"][0]["new_offset"] == 10
    past = {"to": "timestamp", "timestamp": 0}
    assert {r["new_offset"] for r in operator_api.post(reset, past, format="json").json()["data"]} == {0}  # fmt: skip
    assert AuditLog.objects.filter(action="group.offsets.reset", target=group).count() == 4

    # Bad input: 400 with a message; viewers may not reset.
    bad = operator_api.post(reset, {"to": "offset"}, format="json")
    assert bad.status_code == 400 and "offset" in str(bad.json())
    assert operator_api.post(reset, {"to": "sideways"}, format="json").status_code == 400
    assert viewer_api.post(reset, {"to": "earliest"}, format="json").status_code == 403

    # A group with a live member: 409, nothing changes.
    consumer = KafkaConsumer(
        topic_name,
        bootstrap_servers=group_broker.bootstrap,
        group_id=group,
        enable_auto_commit=False,
    )
    try:
        wait_until(lambda: consumer.poll(200) is not None and consumer.assignment(), 30)
        refused = operator_api.post(reset, {"to": "latest"}, format="json")
        assert refused.status_code == 409 and "inactive" in refused.json()["message"]
        busy = operator_api.delete(f"{API}/consumer-groups/{group}")
        assert busy.status_code == 409 and busy.json()["kafka_error"] == "NON_EMPTY_GROUP"
    finally:
        consumer.close()


def test_group_deletion_and_unknown_groups(group_cluster, group_broker, operator_api, topic_name):
    make_topic(group_broker, topic_name, 1, {0: 2})
    group = f"d-{topic_name}"
    commit(group_broker, group, {(topic_name, 0): 1})
    assert operator_api.get(f"{API}/consumer-groups/{group}").json()["state"] == "EMPTY"
    assert operator_api.delete(f"{API}/consumer-groups/{group}").status_code == 204
    assert operator_api.get(f"{API}/consumer-groups/{group}").status_code == 404
    gone = operator_api.delete(f"{API}/consumer-groups/{group}")
    assert gone.status_code == 404 and gone.json()["message"]
    assert operator_api.get(f"{API}/consumer-groups/nope-{topic_name}/lags").status_code == 404
    entries = AuditLog.objects.filter(action="group.delete", target=group).order_by("timestamp")
    assert [(e.succeeded, e.username) for e in entries] == [(True, "otto"), (False, "otto")]


def test_lags_keep_the_commits_of_a_deleted_topic(
    group_cluster, group_broker, viewer_api, topic_name
):
    kept, deleted = f"{topic_name}-kept", f"{topic_name}-deleted"
    make_topic(group_broker, kept, 1, {0: 4})
    make_topic(group_broker, deleted, 1, {0: 3})
    group = f"gone-{topic_name}"
    commit(group_broker, group, {(kept, 0): 1, (deleted, 0): 2})
    admin = KafkaAdminClient(bootstrap_servers=group_broker.bootstrap)
    admin.delete_topics([deleted])
    wait_until(lambda: deleted not in admin.list_topics(), 30)
    admin.close()

    # ListOffsets fails for the deleted topic only: its row stays, without an end or a lag.
    lags = viewer_api.get(f"{API}/consumer-groups/{group}/lags")
    assert lags.status_code == 200, lags.json()
    rows = {r["topic_name"]: (r["current_offset"], r["log_end_offset"], r["lag"]) for r in lags.json()["data"]}  # fmt: skip
    assert rows == {kept: (1, 4, 3), deleted: (2, None, None)}


def test_a_page_of_groups_is_described_in_one_request_per_coordinator(
    group_cluster, group_broker, viewer_api, topic_name
):
    """The groups list describes the groups it shows with one DescribeGroups per
    coordinator (Kafka's admin client batches them), not one per group."""
    from tests.integration.test_admin_api import admin_for, metric_samples

    make_topic(group_broker, topic_name, 1, {0: 2})
    prefix = f"batch-{topic_name}"
    for n in range(30):
        commit(group_broker, f"{prefix}-{n:02d}", {(topic_name, 0): 1})
    admin = admin_for(group_broker)
    series = ("brokerd_requests_total", (("api", "describe_groups"), ("outcome", "ok")))

    def describes() -> float:
        return metric_samples(admin.get("/metrics", token=None)[1]).get(series, 0)

    before = describes()
    page = viewer_api.get(f"{API}/consumer-groups?page_size=30&page_token={prefix}").json()
    asked = describes() - before
    assert [g["consumer_group_id"] for g in page["data"]] == [
        f"{prefix}-{n:02d}" for n in range(30)
    ]
    assert all(g["state"] == "EMPTY" for g in page["data"])
    assert asked <= 3, asked  # one broker coordinates them all; 30 before
