"""The message browser page on a real broker, through Django's test client: what a viewer and
an operator get, the produce form's errors (beside the form, with what was typed) and its
success, audited; the browse form's bad input answered in words."""

from __future__ import annotations

import json
import re

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from dashboard.core.models import AuditLog
from dashboard.live.messages import parse_time

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def topic(broker, topic_name):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(topic_name, 2, 1)])
    admin.close()
    return topic_name


def page_url(topic: str, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"/clusters/local/topics/{topic}/messages/" + (f"?{query}" if query else "")


def shown_records(html: str) -> list[dict]:
    data = re.search(
        r'<script id="records-data" type="application/json">(.*?)</script>', html, re.S
    )
    return json.loads(data.group(1))


def read_back(bootstrap: str, topic: str, partition: int, offset: int):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = TopicPartition(topic, partition)
    consumer.assign([tp])
    consumer.seek(tp, offset)
    batch = consumer.poll(timeout_ms=10_000, max_records=1)
    consumer.close()
    (record,) = batch[tp]
    return record


def test_a_viewer_browses_but_cannot_produce(kafka_cluster, client, viewer, topic):
    client.force_login(viewer)
    page = client.get(page_url(topic))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="browse"' in html and 'id="produce"' not in html
    assert shown_records(html) == []
    assert 'id="records-empty"' in html
    refused = client.post(page_url(topic), {"value": "x", "value_format": "text"})
    assert refused.status_code == 403
    assert not AuditLog.objects.filter(target=topic).exists()


def test_the_produce_form_keeps_what_was_typed_beside_its_error_then_produces(
    kafka_cluster, client, operator, broker, topic
):
    client.force_login(operator)
    url = page_url(topic, start="earliest", format="hex")
    typed = {
        "partition": "1",
        "key": "order-7",
        "value": '{"id": 7, "total": ',
        "value_format": "json",
        "headers": "source: web\ntrace-id: abc",
    }
    bad = client.post(url, typed)
    assert bad.status_code == 400
    html = bad.content.decode()
    error = re.search(r'<p id="produce-error"[^>]*>(.*?)</p>', html, re.S).group(1)
    assert error.startswith("the value is not JSON")
    assert "{&quot;id&quot;: 7, &quot;total&quot;: </textarea>" in html  # kept as typed
    assert 'value="order-7"' in html and "source: web\ntrace-id: abc</textarea>" in html
    assert '<option value="1" selected>' in html

    bad_header = client.post(url, {**typed, "value": "{}", "headers": "no colon here"})
    assert bad_header.status_code == 400
    assert "header line 1 is not &#x27;name: value&#x27;" in bad_header.content.decode()
    no_partition = client.post(url, {**typed, "value": "{}", "partition": "9"})
    assert "the topic has partitions 0 to 1" in no_partition.content.decode()

    done = client.post(url, {**typed, "value": '{"id": 7, "total": 12.5}'}, follow=True)
    assert done.redirect_chain == [(url, 302)]
    assert "Produced to partition 1 at offset 0." in done.content.decode()
    record = read_back(broker.bootstrap, topic, 1, 0)
    assert (record.key, record.value) == (b"order-7", b'{"id": 7, "total": 12.5}')
    assert record.headers == [("source", b"web"), ("trace-id", b"abc")]
    assert [r["value"]["data"] for r in shown_records(done.content.decode())] == [
        '{"id": 7, "total": 12.5}'
    ]

    binary = client.post(url, {"partition": "0", "value": "/wD+", "value_format": "base64"})
    assert binary.status_code == 302
    assert read_back(broker.bootstrap, topic, 0, 0).value == b"\xff\x00\xfe"
    tombstone = client.post(url, {"partition": "0", "key": "k", "null_value": "1"})
    assert tombstone.status_code == 302
    assert read_back(broker.bootstrap, topic, 0, 1).value is None
    actions = AuditLog.objects.filter(target=topic).values_list("action", "succeeded", "username")
    assert list(actions) == [("record.produce", True, "otto")] * 3


def test_bad_browse_input_is_answered_beside_the_form(kafka_cluster, client, viewer, topic):
    client.force_login(viewer)
    for params, words in [
        ({"start": "timestamp", "timestamp": "yesterday"}, "is not a time"),
        ({"filter": "$.a =="}, "filter: expected a path"),
        ({"start": "offset", "offset": "-3"}, "offset:"),
    ]:
        html = client.get(page_url(topic, **params)).content.decode()
        error = re.search(r'<p id="browse-error"[^>]*>(.*?)</p>', html, re.S).group(1)
        assert words in error, (params, error)
    assert client.get(page_url("no-such-topic-anywhere")).status_code == 404


def test_times_are_read_as_ms_or_iso_8601_utc_unless_they_say():
    assert parse_time("1700000000000") == 1_700_000_000_000
    assert parse_time("2023-11-14T22:13:20Z") == 1_700_000_000_000
    assert parse_time("2023-11-14T22:13:20") == 1_700_000_000_000
    assert parse_time("2023-11-14T23:13:20+01:00") == 1_700_000_000_000
    with pytest.raises(ValueError):
        parse_time("soon")
