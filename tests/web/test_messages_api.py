"""GET .../records against a real broker: an exact key match by default (substring on
request), from_end counting records (the newest of the whole topic, across compaction gaps),
value and expression filters, and cursor paging that reads each record once."""

from __future__ import annotations

import json

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from dashboard.core.admin_api import AdminApi

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v3/clusters/local"


def make_topic(bootstrap: str, name: str, partitions: int, **configs: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs)])
    admin.close()


def produce(bootstrap: str, topic: str, records) -> None:
    """(partition, key, value, timestamp ms or None) each, one batch per record."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for partition, key, value, timestamp in records:
        producer.send(topic, value, key=key, partition=partition, timestamp_ms=timestamp)
        producer.flush()
    producer.close()


def browse(api, topic: str, **params) -> dict:
    answer = api.get(f"{API}/topics/{topic}/records", params)
    assert answer.status_code == 200, answer.content
    return answer.json()


def keys(body: dict) -> list[str]:
    return [r["key"]["data"] for r in body["data"]]


def test_key_filter_is_exact_by_default_and_substring_on_request(
    kafka_cluster, viewer_api, broker, topic_name
):
    make_topic(broker.bootstrap, topic_name, 1)
    names = ["cust-42", "cust-426", "cust-4", "xcust-42", "cust-42"]
    produce(broker.bootstrap, topic_name, [(0, k.encode(), b"v", None) for k in names])

    exact = browse(viewer_api, topic_name, key="cust-42")
    assert [(r["offset"], r["key"]["data"]) for r in exact["data"]] == [
        (0, "cust-42"),
        (4, "cust-42"),
    ]
    assert exact["scan"]["scanned_records"] == 5
    assert exact["scan"]["matched_records"] == 2
    explicit = browse(viewer_api, topic_name, key="cust-42", key_match="exact")
    assert keys(explicit) == ["cust-42", "cust-42"]
    substring = browse(viewer_api, topic_name, key="cust-42", key_match="substring")
    assert keys(substring) == ["cust-42", "cust-426", "xcust-42", "cust-42"]
    bad = viewer_api.get(f"{API}/topics/{topic_name}/records", {"key": "k", "key_match": "regex"})
    assert bad.status_code == 400 and "key_match" in bad.json()["errors"]


def test_from_end_is_the_newest_records_of_the_whole_topic(
    kafka_cluster, viewer_api, broker, topic_name
):
    make_topic(broker.bootstrap, topic_name, 3)
    base = 1_700_000_000_000
    # Four records per partition, interleaved in time: p0 at 0,3,6,9; p1 at 1,4,7,10; ...
    records = [(i % 3, b"k%d" % i, b"v%d" % i, base + i * 1000) for i in range(12)]
    produce(broker.bootstrap, topic_name, records)

    last = browse(viewer_api, topic_name, from_end=4)
    assert [r["value"]["data"] for r in last["data"]] == ["v8", "v9", "v10", "v11"]
    assert [(r["partition_id"], r["offset"]) for r in last["data"]] == [
        (2, 2),
        (0, 3),
        (1, 3),
        (2, 3),
    ]
    assert last["scan"]["complete"] is True

    one = browse(viewer_api, topic_name, from_end=1, partition_id=1)
    assert [(r["partition_id"], r["offset"], r["value"]["data"]) for r in one["data"]] == [
        (1, 3, "v10")
    ]
    # More than the topic holds: all of it, oldest first across partitions.
    everything = browse(viewer_api, topic_name, from_end=100)
    assert [r["value"]["data"] for r in everything["data"]] == [f"v{i}" for i in range(12)]
    # from_end beyond limit starts that many records before the end; the rest is a next page.
    first_page = browse(viewer_api, topic_name, from_end=6, limit=4)
    assert [r["value"]["data"] for r in first_page["data"]] == ["v6", "v7", "v8", "v9"]
    assert first_page["scan"]["complete"] is False
    rest = browse(viewer_api, topic_name, cursor=first_page["scan"]["next_cursor"], limit=4)
    assert [r["value"]["data"] for r in rest["data"]] == ["v10", "v11"]
    assert rest["scan"]["complete"] is True


def test_from_end_counts_records_across_compaction_gaps(
    kafka_cluster, viewer_api, broker, topic_name
):
    make_topic(
        broker.bootstrap, topic_name, 1, **{"cleanup.policy": "compact", "segment.bytes": "1024"}
    )
    # Even offsets have keys of their own, odd ones share one: compaction leaves gaps.
    produce(
        broker.bootstrap,
        topic_name,
        [(0, b"dup" if i % 2 else b"u%d" % i, b"v%d" % i, None) for i in range(60)],
    )
    AdminApi(kafka_cluster).request(1, "POST", "/v1/maintenance/compaction", {"topic": topic_name})

    kept = browse(viewer_api, topic_name, limit=500)["data"]
    offsets = [r["offset"] for r in kept]
    assert len(offsets) < 60 and offsets[-1] == 59  # compaction left gaps
    assert any(b - a > 1 for a, b in zip(offsets, offsets[1:], strict=False))

    tail = browse(viewer_api, topic_name, from_end=len(offsets))
    assert [r["offset"] for r in tail["data"]] == offsets
    two = browse(viewer_api, topic_name, from_end=2)
    assert [r["offset"] for r in two["data"]] == offsets[-2:]


def test_value_and_expression_filters_and_cursor_paging(
    kafka_cluster, viewer_api, broker, topic_name
):
    make_topic(broker.bootstrap, topic_name, 2)
    docs = [
        {"id": i, "customer": {"name": f"c{i % 3}"}, "amount": i * 10, "tags": ["a", f"t{i}"]}
        for i in range(10)
    ]
    records = [
        (i % 2, b"o%d" % i, json.dumps(d).encode(), 1_700_000_000_000 + i)
        for i, d in enumerate(docs)
    ]
    records.append((0, b"bin", b"\xff\x00\xfe", 1_700_000_000_100))
    produce(broker.bootstrap, topic_name, records)

    def ids(body):
        return [json.loads(r["value"]["data"])["id"] for r in body["data"]]

    by_value = browse(viewer_api, topic_name, value='"name": "c1"', value_match="substring")
    assert ids(by_value) == [1, 4, 7]
    exact_value = browse(viewer_api, topic_name, value=json.dumps(docs[5]))
    assert ids(exact_value) == [5]
    expression = browse(
        viewer_api, topic_name, filter='$.customer.name == "c2" and value.amount >= 50'
    )
    assert ids(expression) == [5, 8]
    wildcard = browse(viewer_api, topic_name, filter='$.tags[*] == "t3" or key == "o9"')
    assert ids(wildcard) == [3, 9]
    binary = browse(viewer_api, topic_name, filter="not ($.id >= 0)")
    assert [(r["key"]["data"], r["value"]["type"]) for r in binary["data"]] == [("bin", "BINARY")]

    bad = viewer_api.get(f"{API}/topics/{topic_name}/records", {"filter": "$.a == "})
    assert bad.status_code == 400 and "filter" in bad.json()["errors"]

    # Paging with a cursor: every record once, in time order, a page of 4 at a time.
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 4, **({"cursor": cursor} if cursor else {})}
        page = browse(viewer_api, topic_name, **params)
        seen += [r["key"]["data"] for r in page["data"]]
        cursor, pages = page["scan"]["next_cursor"], pages + 1
        if page["scan"]["complete"]:
            assert page["metadata"]["next"] is None
            break
        assert "cursor=" in page["metadata"]["next"]
    assert seen == [f"o{i}" for i in range(10)] + ["bin"] and pages == 3


def test_filtered_scans_over_multi_record_batches_find_what_a_full_read_finds(
    kafka_cluster, viewer_api, broker, topic_name
):
    """Batches of many records, compressed and not: a key or value filter decodes only the
    records that may match, yet finds exactly what filtering every record finds, counts
    every record it passed, and pages on without losing or repeating one."""
    make_topic(broker.bootstrap, topic_name, 2)
    for partition, codec in ((0, None), (1, "gzip")):
        producer = KafkaProducer(
            bootstrap_servers=broker.bootstrap,
            linger_ms=200,
            batch_size=64 << 10,
            compression_type=codec,
        )
        for i in range(1500):
            value = {"i": i, "tag": "hit" if i % 97 == 5 else "miss", "note": "x" * (i % 7)}
            key = b"hit-key" if i % 211 == 0 else b"k%d" % i
            producer.send(topic_name, json.dumps(value).encode(), key=key, partition=partition)
        producer.flush()
        producer.close()

    everything, cursor = [], None
    while True:
        page = browse(viewer_api, topic_name, limit=500, **({"cursor": cursor} if cursor else {}))
        everything += page["data"]
        cursor = page["scan"]["next_cursor"]
        if page["scan"]["complete"]:
            break
    assert len(everything) == 3000

    def brute(test) -> list[tuple[int, int]]:
        return [(r["partition_id"], r["offset"]) for r in everything if test(r)]

    cases = [
        ({"value": '"tag": "hit"', "value_match": "substring"},
         lambda r: '"tag": "hit"' in r["value"]["data"]),
        ({"value": "hit", "value_match": "substring"}, lambda r: "hit" in r["value"]["data"]),
        ({"key": "hit-key"}, lambda r: r["key"]["data"] == "hit-key"),
        ({"key": "hit", "key_match": "substring", "value": "miss", "value_match": "substring"},
         lambda r: "hit" in r["key"]["data"] and "miss" in r["value"]["data"]),
        ({"value": json.dumps({"i": 700, "tag": "miss", "note": "x" * 0})},
         lambda r: r["value"]["data"] == json.dumps({"i": 700, "tag": "miss", "note": ""})),
    ]  # fmt: skip
    for params, test in cases:
        wanted = brute(test)
        assert wanted, params
        found, cursor, scanned, pages = [], None, 0, 0
        while True:  # small pages and a small max_scan: many stops inside batches
            extra = {"cursor": cursor} if cursor else {"offset": 0}
            page = browse(viewer_api, topic_name, limit=7, max_scan=400, **params, **extra)
            found += [(r["partition_id"], r["offset"]) for r in page["data"]]
            scanned += page["scan"]["scanned_records"]
            cursor, pages = page["scan"]["next_cursor"], pages + 1
            if page["scan"]["complete"]:
                break
            assert pages < 1000
        assert sorted(found) == sorted(wanted), params
        assert len(found) == len(set(found))
        assert scanned == 3000, params  # each record passed once, decoded or stepped over


def test_starting_inside_batches_that_compaction_thinned(
    kafka_cluster, viewer_api, broker, topic_name
):
    """Batches of many records from which compaction removed some (offsets no longer
    consecutive inside a batch): a browse from any offset starts at the first record at or
    after it, as reading everything shows."""
    make_topic(
        broker.bootstrap, topic_name, 1, **{"cleanup.policy": "compact", "segment.bytes": "4096"}
    )
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=100, batch_size=2048)
    for i in range(300):
        key = b"dup" if i % 3 else b"u%d" % i
        producer.send(topic_name, b"v%d" % i, key=key, partition=0)
    producer.flush()
    producer.close()
    AdminApi(kafka_cluster).request(1, "POST", "/v1/maintenance/compaction", {"topic": topic_name})

    kept = [r["offset"] for r in browse(viewer_api, topic_name, limit=500)["data"]]
    assert 100 < len(kept) < 300 and kept[0] == 0
    for start in range(0, 300, 7):
        page = browse(viewer_api, topic_name, offset=start, limit=3)
        assert [r["offset"] for r in page["data"]] == [o for o in kept if o >= start][:3], start
    ends = browse(viewer_api, topic_name, from_end=5)
    assert [r["offset"] for r in ends["data"]] == kept[-5:]
