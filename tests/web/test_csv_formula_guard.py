"""The message browser's CSV export guards against formula injection as OWASP advises: a text
cell starting with =, +, -, @, a tab or a carriage return gets a leading ' so a spreadsheet
shows it as text; other cells are exported as they are. Real chromium, real broker, records
a real client produced."""

from __future__ import annotations

import csv
import io
import uuid

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from playwright.sync_api import expect

from .test_browser import browser_page, log_in  # noqa: F401 - browser_page is a fixture

DANGEROUS = [
    (b'=HYPERLINK("http://x","y")', b'=HYPERLINK("http://x","y")'),
    (b"+1+2", b"-3"),
    (b"@SUM(A1)", b"\tTAB"),
]


def test_csv_export_prefixes_cells_a_spreadsheet_would_run(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    bootstrap = live_dashboard.broker.bootstrap
    topic = f"csv-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for key, value in [*DANGEROUS, (b"plain", b"a=b")]:
        producer.send(topic, value, key=key, partition=0, headers=[("h", b"-x")])
    producer.flush()
    producer.close()

    log_in(page, live_dashboard)
    page.goto(f"{live_dashboard.url}/clusters/local/topics/{topic}/messages/?start=earliest")
    expect(page.locator("#records tbody tr")).to_have_count(4)
    with page.expect_download() as download:
        page.click("#export-csv")
    rows = list(csv.DictReader(io.StringIO(open(download.value.path()).read())))
    shown = [(r["key"], r["value"]) for r in rows]
    expected = [("'" + k.decode(), "'" + v.decode()) for k, v in DANGEROUS]
    assert shown == [*expected, ("plain", "a=b")]
    assert [r["offset"] for r in rows] == ["0", "1", "2", "3"]  # numbers stay numbers
    assert all(r["headers"].startswith("[") for r in rows)  # JSON text, not a formula
