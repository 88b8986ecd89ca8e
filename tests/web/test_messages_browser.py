"""The message browser in a real browser (Debian's chromium, Playwright) on a live daphne and
a real broker: records a real client produced, browsed from an offset and from a time,
decoded as chosen, filtered (exact key, substring, a JSON expression), exported as JSON and
CSV; a live tail that shows new records without a reload; the produce form, read back with
a real client. Screenshots at 1440x900 land in tests/web/artifacts/."""

from __future__ import annotations

import csv
import datetime
import io
import json
import time
import uuid

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from playwright.sync_api import expect

from .conftest import ARTIFACTS
from .test_browser import browser_page, log_in  # noqa: F401 - browser_page is a fixture

TIERS = ["gold", "silver", "bronze"]


def order(i: int) -> dict:
    return {"id": i, "customer": {"id": 40 + i % 4, "tier": TIERS[i % 3]}, "amount": 10 * i}


def fill_topic(bootstrap: str, topic: str, base_ms: int) -> list[tuple[int, bytes, bytes, int]]:
    """12 JSON orders over 2 partitions (even ids in 0, odd in 1), keyed cust-4x (cust-426
    once), a second apart from `base_ms`, then one binary value; (partition, key, value,
    timestamp) each, in time order."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 2, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    produced = []
    for i in range(12):
        key = b"cust-426" if i == 5 else b"cust-4%d" % (i % 4)
        value = json.dumps(order(i)).encode()
        produced.append((i % 2, key, value, base_ms + i * 1000))
    produced.append((0, b"blob", b"\x00\xff\x10binary", base_ms + 12_000))
    for partition, key, value, ts in produced:
        producer.send(topic, value, key=key, partition=partition, timestamp_ms=ts,
                      headers=[("source", b"web")])  # fmt: skip
    producer.flush()
    producer.close()
    return produced


def offsets_shown(page) -> list[tuple[int, int]]:
    rows = page.locator("#records tbody tr")
    return [
        (int(r.get_attribute("data-partition")), int(r.get_attribute("data-offset")))
        for r in rows.all()
    ]


def browse(page, url: str, **fields) -> None:
    """Fill the browse form's fields (name -> value; selects by value) and submit it."""
    page.goto(url)
    for name, value in fields.items():
        control = page.locator(f"#browse [name={name}]")
        if control.evaluate("e => e.tagName") == "SELECT":
            control.select_option(value)
        else:
            control.fill(value)
    with page.expect_navigation():
        page.click("#browse-submit")


def test_browse_decode_filter_and_export(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    bootstrap = live_dashboard.broker.bootstrap
    topic = f"msgs-{uuid.uuid4().hex[:8]}"
    base_ms = int(time.time() * 1000) - 3_600_000  # an hour ago
    produced = fill_topic(bootstrap, topic, base_ms)
    log_in(page, live_dashboard)
    url = f"{live_dashboard.url}/clusters/local/topics/{topic}/messages/"

    # From the topic page; the default start is the latest N, newest last, both partitions.
    page.goto(f"{live_dashboard.url}/clusters/local/topics/{topic}/")
    page.click("#messages-link")
    expect(page.locator("#records tbody tr")).to_have_count(13)
    last = page.locator("#records tbody tr").last
    expect(last.locator("td.key")).to_have_text("blob")
    expect(last.locator("td.value pre")).to_have_text("00 ff 10 62 69 6e 61 72 79")  # hex
    first_value = page.locator("#records tbody tr").first.locator("td.value pre")
    expect(first_value).to_have_text(json.dumps(order(0), indent=2))  # JSON, pretty-printed
    expect(page.locator("#records tbody tr").first.locator("td.timestamp")).to_contain_text(
        datetime.datetime.fromtimestamp(base_ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
        + "."
    )
    expect(page.locator("#records tbody tr").first.locator(".age")).to_have_text("1 h 0 min ago")

    # The decode choice is the user's: text shows the JSON as sent, hex shows the bytes.
    page.select_option("#decode", "text")
    expect(first_value).to_have_text(produced[0][2].decode())
    page.select_option("#decode", "hex")
    expect(first_value).to_have_text(" ".join(f"{b:02x}" for b in produced[0][2]))
    assert "format=hex" in page.url
    page.select_option("#decode", "auto")

    # From an offset in one partition: offsets 3.. of partition 1 (ids 7, 9, 11).
    browse(page, url, partition="1", start="offset", offset="3")
    assert offsets_shown(page) == [(1, 3), (1, 4), (1, 5)]
    values = page.locator("#records tbody td.value pre").all_inner_texts()
    assert [json.loads(v)["id"] for v in values] == [7, 9, 11]

    # From a time: the first record at or after id 9's timestamp, in both partitions.
    moment = datetime.datetime.fromtimestamp((base_ms + 9000) / 1000, datetime.UTC)
    browse(page, url, start="timestamp", timestamp=moment.isoformat())
    assert offsets_shown(page) == [(1, 4), (0, 5), (1, 5), (0, 6)]  # ids 9, 10, 11, blob

    # Filters: an exact key, a substring, an expression over the JSON value.
    browse(page, url, start="earliest", key="cust-42", key_match="exact")
    keys = page.locator("#records tbody td.key pre").all_inner_texts()
    assert keys == ["cust-42"] * 3
    browse(page, url, start="earliest", key="cust-42", key_match="substring")
    keys = page.locator("#records tbody td.key pre").all_inner_texts()
    assert keys == ["cust-42", "cust-426", "cust-42", "cust-42"]
    browse(page, url, start="earliest",
           filter='$.customer.tier == "gold" and $.amount >= 30')  # fmt: skip
    values = page.locator("#records tbody td.value pre").all_inner_texts()
    assert [json.loads(v)["id"] for v in values] == [3, 6, 9]
    expect(page.locator("#scan")).to_contain_text("Scanned 13 records, 3 shown")
    page.screenshot(path=str(ARTIFACTS / "messages-filtered.png"))

    # Export what is shown: JSON and CSV, the records as produced.
    with page.expect_download() as download:
        page.click("#export-json")
    exported = json.loads(open(download.value.path()).read())
    assert [(r["partition"], r["offset"]) for r in exported] == offsets_shown(page)
    assert [json.loads(r["value"]) for r in exported] == [order(3), order(6), order(9)]
    assert exported[0]["headers"] == [{"name": "source", "value": "web", "encoding": "utf-8"}]
    assert exported[0]["timestamp"] == base_ms + 3000 and exported[0]["key_encoding"] == "utf-8"
    with page.expect_download() as download:
        page.click("#export-csv")
    assert download.value.suggested_filename == f"{topic}-messages.csv"
    rows = list(csv.DictReader(io.StringIO(open(download.value.path()).read())))
    assert [json.loads(r["value"]) for r in rows] == [order(3), order(6), order(9)]
    assert rows[1]["key"] == "cust-42" and rows[1]["timestamp"] == str(base_ms + 6000)

    # The whole page at 1440x900, the latest records.
    page.goto(url)
    expect(page.locator("#records tbody tr")).to_have_count(13)
    page.screenshot(path=str(ARTIFACTS / "messages-1440x900.png"))


def test_live_tail_and_the_produce_form(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    page.set_viewport_size({"width": 1440, "height": 900})
    bootstrap = live_dashboard.broker.bootstrap
    topic = f"tail-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 2, 1)])
    admin.close()
    log_in(page, live_dashboard)
    page.goto(f"{live_dashboard.url}/clusters/local/topics/{topic}/messages/")
    expect(page.locator("#records-empty")).to_be_visible()

    # Live tail: records a real client produces appear without a reload.
    page.click("#tail-toggle")
    expect(page.locator("#tail-status")).to_have_text("tailing")
    page.evaluate("() => { window.__noReload = true; }")
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for i in range(3):
        producer.send(topic, b'{"tick": %d}' % i, key=b"t%d" % i, partition=i % 2)
    producer.flush()
    producer.close()
    expect(page.locator("#records tbody tr")).to_have_count(3)
    keys = sorted(page.locator("#records tbody td.key pre").all_inner_texts())
    assert keys == ["t0", "t1", "t2"]
    assert page.evaluate("() => window.__noReload === true")
    page.screenshot(path=str(ARTIFACTS / "messages-tail.png"))
    page.click("#tail-toggle")
    expect(page.locator("#tail-status")).to_have_text("tail off")

    # The produce form: a JSON value that is not JSON is refused beside the form, as typed.
    page.select_option("#produce [name=partition]", "1")
    page.fill("#produce [name=key]", "order-9")
    page.select_option("#produce [name=value_format]", "json")
    page.fill("#produce [name=value]", '{"id": 9, ')
    page.fill("#produce [name=headers]", "source: console\ntrace: 42")
    with page.expect_navigation():
        page.click("#produce-submit")
    expect(page.locator("#produce-error")).to_contain_text("the value is not JSON")
    expect(page.locator("#produce [name=value]")).to_have_value('{"id": 9, ')
    expect(page.locator("#produce [name=key]")).to_have_value("order-9")
    expect(page.locator("#produce [name=partition]")).to_have_value("1")
    page.screenshot(path=str(ARTIFACTS / "messages-produce-error.png"), full_page=True)

    page.fill("#produce [name=value]", '{"id": 9, "total": 12.5}')
    with page.expect_navigation():
        page.click("#produce-submit")
    success = page.locator("ul.messages li.success")
    expect(success).to_have_text("Produced to partition 1 at offset 1.")
    expect(page.locator("#produce-error")).to_be_hidden()
    expect(page.locator("#records tbody tr").last.locator("td.key")).to_have_text("order-9")

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = TopicPartition(topic, 1)
    consumer.assign([tp])
    consumer.seek(tp, 1)
    (record,) = consumer.poll(timeout_ms=10_000, max_records=1)[tp]
    consumer.close()
    assert (record.key, record.value) == (b"order-9", b'{"id": 9, "total": 12.5}')
    assert record.headers == [("source", b"console"), ("trace", b"42")]
