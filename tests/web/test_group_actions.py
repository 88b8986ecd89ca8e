"""Consumer group actions on a real broker, checked with real clients: offsets shifted by N
(REST and the group page's form, with its dry-run preview), a topic's offsets deleted
(OffsetDelete, refused in Kafka's words while a member is subscribed), the group deleted after
typing its id; viewers get 403 for each change."""

from __future__ import annotations

import pytest
from django.test import Client
from kafka import KafkaConsumer, TopicPartition

from dashboard.core.models import AuditLog

from .conftest import make_user, wait_until
from .test_groups_api import API, commit, make_topic

pytestmark = pytest.mark.django_db(transaction=True)


def committed(broker, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    """The group's committed offsets as a real kafka-python consumer reads them."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group)
    try:
        return {p: consumer.committed(TopicPartition(topic, p)) for p in range(partitions)}
    finally:
        consumer.close()


def test_shift_by_n_over_rest(group_cluster, group_broker, operator_api, topic_name):
    make_topic(group_broker, topic_name, 2, {0: 10, 1: 4})
    group = f"s-{topic_name}"
    commit(group_broker, group, {(topic_name, 0): 7, (topic_name, 1): 1})
    reset = f"{API}/consumer-groups/{group}/offsets:reset"
    # Back 3, clamped to the log start: 7 -> 4, 1 -> 0; forward 5 clamped to the end.
    back = operator_api.post(reset, {"to": "shift", "shift_by": -3}, format="json")
    assert back.status_code == 200, back.json()
    assert {r["partition_id"]: r["new_offset"] for r in back.json()["data"]} == {0: 4, 1: 0}
    assert committed(group_broker, group, topic_name, 2) == {0: 4, 1: 0}
    ahead = {"to": "shift", "shift_by": 5, "dry_run": True}
    planned = operator_api.post(reset, ahead, format="json").json()["data"]
    assert {r["partition_id"]: r["new_offset"] for r in planned} == {0: 9, 1: 4}
    assert committed(group_broker, group, topic_name, 2) == {0: 4, 1: 0}  # a dry run
    assert operator_api.post(reset, {"to": "shift"}, format="json").status_code == 400
    # A partition without a committed offset has nothing to shift.
    other = f"{topic_name}-2"
    make_topic(group_broker, other, 1, {0: 3})
    body = {"to": "shift", "shift_by": 1, "topics": [{"topic_name": other}]}
    refused = operator_api.post(reset, body, format="json")
    assert refused.status_code == 400
    assert refused.json()["message"] == f"no committed offset to shift for {other}-0"


def test_topic_offsets_deleted_over_rest(group_cluster, group_broker, operator_api, topic_name):
    make_topic(group_broker, topic_name, 2, {0: 3, 1: 3})
    group = f"o-{topic_name}"
    commit(group_broker, group, {(topic_name, 0): 2, (topic_name, 1): 1})
    url = f"{API}/consumer-groups/{group}/offsets/{topic_name}"
    assert operator_api.delete(url).status_code == 204
    assert committed(group_broker, group, topic_name, 2) == {0: None, 1: None}
    assert operator_api.delete(url).status_code == 404  # nothing left to delete
    entries = AuditLog.objects.filter(action="group.offsets.delete", target=group)
    assert [e.details for e in entries] == [{"topic_name": topic_name}] * 2


def test_group_page_reset_preview_offsets_and_delete(group_cluster, group_broker, topic_name):
    make_topic(group_broker, topic_name, 2, {0: 10, 1: 4})
    group = f"ui-{topic_name}"
    commit(group_broker, group, {(topic_name, 0): 7, (topic_name, 1): 1})
    base = f"/clusters/local/groups/{group}/"
    viewer = Client()
    viewer.force_login(make_user("vim", "viewer"))
    assert "reset-offsets" not in viewer.get(base).content.decode()
    for action in ("reset-offsets", "delete-offsets", "delete"):
        assert viewer.post(f"{base}actions/{action}", {}).status_code == 403
    operator = Client()
    operator.force_login(make_user("oda", "operator"))

    # The preview: what would be committed, nothing committed.
    form = {"to": "shift", "value": "-2", "topic": topic_name, "mode": "preview"}
    preview = operator.post(f"{base}actions/reset-offsets", form)
    assert preview.status_code == 200
    rows = {r["partition_id"]: (r["previous_offset"], r["new_offset"]) for r in preview.context["preview"]}  # fmt: skip
    assert rows == {0: (7, 5), 1: (1, 0)}
    assert 'id="reset-preview"' in preview.content.decode()
    assert committed(group_broker, group, topic_name, 2) == {0: 7, 1: 1}
    # Bad input stays in the form, the error beside it.
    bad = operator.post(f"{base}actions/reset-offsets", {**form, "value": "two"})
    assert bad.status_code == 400
    html = bad.content.decode()
    assert "give the number of offsets to shift by (a whole number)" in html
    assert 'value="two"' in html
    # Execute: a time; a real client sees the offsets there.
    timed = {"to": "timestamp", "value": "1970-01-01T00:00:00Z", "topic": "", "mode": "execute"}
    done = operator.post(f"{base}actions/reset-offsets", timed)
    assert done.status_code == 302 and done.url == base
    assert committed(group_broker, group, topic_name, 2) == {0: 0, 1: 0}
    assert "Reset the offsets of 2 partitions." in operator.get(base).content.decode()

    # A live member: Kafka refuses to delete its subscribed topic's offsets, in its words.
    consumer = KafkaConsumer(
        topic_name, bootstrap_servers=group_broker.bootstrap, group_id=group,
        enable_auto_commit=False,
    )  # fmt: skip
    try:
        wait_until(lambda: consumer.poll(200) is not None and consumer.assignment(), 30)
        busy = operator.post(f"{base}actions/delete-offsets", {"topic": topic_name})
        assert busy.status_code == 400
        assert "(GROUP_SUBSCRIBED_TO_TOPIC)" in busy.content.decode()
        active = operator.post(f"{base}actions/reset-offsets", {**timed, "to": "earliest"})
        assert active.status_code == 400 and "its state is Stable" in active.content.decode()
        refused = operator.post(f"{base}actions/delete", {"confirm": group})
        assert refused.status_code == 400 and "(NON_EMPTY_GROUP)" in refused.content.decode()
    finally:
        consumer.close()

    gone = operator.post(f"{base}actions/delete-offsets", {"topic": topic_name})
    assert gone.status_code == 302
    assert committed(group_broker, group, topic_name, 2) == {0: None, 1: None}
    commit(group_broker, group, {(topic_name, 0): 3})
    wrong = operator.post(f"{base}actions/delete", {"confirm": "not-it"})
    assert wrong.status_code == 400 and 'value="not-it"' in wrong.content.decode()
    deleted = operator.post(f"{base}actions/delete", {"confirm": group})
    assert deleted.status_code == 302 and deleted.url == "/clusters/local/groups/"
    assert operator.get(base).status_code == 404
    assert f"Consumer group {group} deleted." in operator.get(deleted.url).content.decode()
