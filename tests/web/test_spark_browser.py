"""Spark loads from the browser (Debian's chromium via Playwright) on a live daphne with a real
Celery worker running spark-submit: launch an export, watch the progress bar reach 100 % and
the result appear without a reload; launch another and cancel it: the Spark job's processes
are gone and the load ends cancelled."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import requests
from kafka.admin import KafkaAdminClient, NewTopic
from playwright.sync_api import expect

from spark_jobs.launcher import group_alive
from tests.spark.conftest import produce_confluent

from .conftest import ARTIFACTS
from .test_browser import browser_page, log_in  # noqa: F401 - fixture

LOAD_TIMEOUT_MS = 180_000
# Samples the bar and the status every 50 ms, so the test sees what a person would.
WATCH_PROGRESS = """() => {
  window.__noReload = true;
  window.__seen = [];
  setInterval(() => window.__seen.push([document.getElementById('load-status').dataset.status,
                                       document.getElementById('load-progress').value,
                                       document.getElementById('progress-detail').textContent]),
              50);
}"""
STAGE_TEXT = re.compile(r"^stage (\d+) of (\d+), tasks (\d+)/(\d+)$")


def new_topic(bootstrap: str, partitions: int, records: int) -> str:
    topic = f"spark-ui-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    admin.close()
    produce_confluent(bootstrap, topic, ((b"k%d" % i, b"value-%d" % i) for i in range(records)))
    return topic


def launch_from_the_ui(page, topic: str, output: str, records_per_task: int | None = None) -> int:
    page.click("header nav a:text-is('Spark loads')")
    page.select_option("#launch-load select[name=topic]", topic)
    page.check("#launch-load input[name=mode][value=incremental]")
    page.fill("#launch-load input[name=output_path]", output)
    if records_per_task:
        page.fill("#launch-load input[name=records_per_task]", str(records_per_task))
    page.click("#launch-load-submit")
    page.wait_for_url("**/clusters/local/spark-loads/*/")
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def samples_since_now(page) -> list:
    """WATCH_PROGRESS's samples, once it has taken one after this call: the page's state at
    the call is in the last sample (the sampler's last tick may predate the last render)."""
    taken = page.evaluate("() => window.__seen.length")
    page.wait_for_function(f"() => window.__seen.length > {taken}")
    return page.evaluate("() => window.__seen")


def api_load(live_dashboard, load_id: int) -> dict:
    response = requests.get(
        f"{live_dashboard.url}/api/v3/clusters/local/spark-loads/{load_id}",
        headers={"Authorization": f"Token {live_dashboard.token}"},
        timeout=30,
    )
    response.raise_for_status()
    return response.json()


def processes_of_load(load_id: int, topic: str) -> list[int]:
    """Processes whose command line names this load (spark-submit, its JVM, the driver): its
    id and its topic, as whole arguments. The id alone is not enough: other dashboards on
    this machine (other tests, other runs) number their loads from 1 too."""
    markers = (f"\0--load-id\0sparkload-{load_id}\0".encode(), f"\0--topic\0{topic}\0".encode())
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                arguments = b"\0" + (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if all(marker in arguments for marker in markers):
                found.append(int(entry.name))
    return found


def test_export_launched_from_the_ui_runs_to_100_percent(
    browser_page,  # noqa: F811
    live_dashboard,
    celery_worker,
):
    page = browser_page
    records = 3_000
    topic = new_topic(live_dashboard.broker.bootstrap, 3, records)
    log_in(page, live_dashboard)
    # A second tab keeps the loads list open: the new load must appear there and follow its
    # status and progress without a reload.
    loads_list = page.context.new_page()
    loads_list.goto(f"{live_dashboard.url}/clusters/local/spark-loads/")
    expect(loads_list.locator("#live-status")).to_have_text("live")
    loads_list.evaluate("() => { window.__noReload = true; }")
    load_id = launch_from_the_ui(page, topic, f"exports/{topic}")
    expect(page.locator("#live-status")).to_have_text("live")
    page.evaluate(WATCH_PROGRESS)

    status = page.locator("#load-status")
    expect(status).to_have_attribute("data-status", "running", timeout=LOAD_TIMEOUT_MS)
    page.screenshot(path=str(ARTIFACTS / "spark-load-running.png"), full_page=True)
    expect(status).to_have_attribute("data-status", "succeeded", timeout=LOAD_TIMEOUT_MS)
    expect(page.locator("#progress-percent")).to_have_text("100 %")
    assert page.locator("#load-progress").evaluate("p => p.value") == 100
    expect(page.locator("#result-rows")).to_have_text(str(records))
    expect(page.locator("#result-partitions tbody tr")).to_have_count(3)
    counts = page.locator("#result-partitions tbody tr td:nth-child(4)").all_inner_texts()
    assert sum(int(c) for c in counts) == records
    expect(page.locator("#load-log")).to_contain_text("BROKERD_RESULT")
    expect(page.locator("#cancel-form")).to_be_hidden()
    assert page.evaluate("() => window.__noReload === true")  # all pushed, no reload
    page.screenshot(path=str(ARTIFACTS / "spark-load-done.png"), full_page=True)

    load = api_load(live_dashboard, load_id)
    assert load["status"] == "succeeded" and load["result"]["rows"] == records
    progress = load["progress"]
    assert progress["percent"] == 100
    assert progress["tasks_done"] == progress["tasks_total"] > 0
    assert progress["stages_done"] == progress["stages_total"] > 0
    # The stage text followed the job: empty while queued, then pushed, ending on the last
    # stage with every task done, never a reload.
    final = f"stage {progress['stages_total']} of {progress['stages_total']}, "
    final += f"tasks {progress['tasks_total']}/{progress['tasks_total']}"
    expect(page.locator("#progress-detail")).to_have_text(final)
    rendered = json.loads(page.locator("#load-initial").text_content())  # at the redirect
    assert rendered["status"] in ("queued", "running") and rendered["progress_text"] != final
    seen = samples_since_now(page)  # the last sample shows the end the page now shows
    bars = [value for _, value, _ in seen]
    assert bars == sorted(bars), "the progress bar went backwards"
    assert bars[-1] == 100 and any(s == "running" for s, _, _ in seen)
    texts = [text for _, _, text in seen]
    assert texts[-1] == final
    assert all(STAGE_TEXT.match(t) for t in texts if t), set(texts)

    # The list tab got the load pushed: its row appeared and followed it to the end.
    row = loads_list.locator(f"#loads tbody tr[data-load='{load_id}']")
    expect(row).to_have_attribute("data-status", "succeeded")
    expect(row.locator("td.rows")).to_have_text(str(records))
    expect(row.locator(".progress-detail")).to_have_text(final)
    assert row.locator("progress").evaluate("p => p.value") == 100
    assert loads_list.evaluate("() => window.__noReload === true")
    loads_list.screenshot(path=str(ARTIFACTS / "spark-loads-live.png"), full_page=True)
    loads_list.close()
    # And a fresh render of the list agrees.
    page.click("header nav a:text-is('Spark loads')")
    row = page.locator(f"#loads tbody tr[data-load='{load_id}']")
    expect(row).to_have_attribute("data-status", "succeeded")
    expect(row).to_contain_text(str(records))
    expect(row.locator(".progress-detail")).to_have_text(final)


def test_cancel_from_the_ui_stops_the_spark_job(
    browser_page,  # noqa: F811
    live_dashboard,
    celery_worker,
):
    page = browser_page
    topic = new_topic(live_dashboard.broker.bootstrap, 2, 200_000)
    log_in(page, live_dashboard)
    # Tasks of 2,000 records: 100 of them on the worker's 2 cores, so the Spark job is
    # still running its tasks when the cancel comes.
    load_id = launch_from_the_ui(page, topic, f"exports/{topic}", records_per_task=2_000)
    expect(page.locator("#live-status")).to_have_text("live")
    expect(page.locator("#load-status")).to_have_attribute(
        "data-status", "running", timeout=LOAD_TIMEOUT_MS
    )
    expect(page.locator("#load-range")).to_contain_text("at most 2000 records")
    # The job is inside its stage: some tasks done, the bar moving.
    page.wait_for_function(
        "() => document.getElementById('load-progress').value > 0", timeout=LOAD_TIMEOUT_MS
    )
    pid = api_load(live_dashboard, load_id)["result"]["pid"]
    assert group_alive(pid) and processes_of_load(load_id, topic)
    # Inside the first (only) stage of the job, some of its 100+ tasks done.
    expect(page.locator("#progress-detail")).to_have_text(re.compile(r"^stage 1 of 1, tasks "))

    page.click("#cancel-load")
    expect(page.locator("#load-status")).to_have_attribute(
        "data-status", "cancelled", timeout=60_000
    )
    expect(page.locator("#result-error")).to_contain_text("cancelled")
    expect(page.locator("#cancel-form")).to_be_hidden()
    page.screenshot(path=str(ARTIFACTS / "spark-load-cancelled.png"), full_page=True)

    load = api_load(live_dashboard, load_id)
    assert load["status"] == "cancelled" and load["result"]["cancelled"] is True
    assert load["result"]["pid"] == pid
    # Stopped inside the stage: tasks had run, most had not (about 100 of 2,000 records).
    assert 0 < load["progress"]["tasks_done"] < load["progress"]["tasks_total"]
    assert load["progress"]["tasks_total"] >= 100
    assert not group_alive(pid), "processes of the Spark job survived the cancel"
    assert processes_of_load(load_id, topic) == [], "a spark-submit of the load is still running"


def read_back_with_kafka_python(bootstrap: str, topic: str, partitions: int, wanted: int):
    """Every record of the topic as (key, value), read with kafka-python."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    consumer.seek_to_beginning()
    found = []
    try:
        for _ in range(60):
            for records in consumer.poll(timeout_ms=1000).values():
                found += [(r.key, r.value) for r in records]
            if len(found) >= wanted:
                break
    finally:
        consumer.close()
    return found


def test_ingest_launched_from_the_ui_writes_the_csv_into_the_topic(
    browser_page,  # noqa: F811
    live_dashboard,
    celery_worker,
):
    page = browser_page
    bootstrap = live_dashboard.broker.bootstrap
    topic = new_topic(bootstrap, 2, 0)
    rows = [(f"id-{i}", f"payload {i}, with a comma") for i in range(500)]
    data_root = Path(live_dashboard.env["DASHBOARD_VAR_DIR"]) / "spark-data"
    source = data_root / "in" / f"{topic}.csv"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("id,payload\n" + "".join(f'{k},"{v}"\n' for k, v in rows))
    log_in(page, live_dashboard)
    page.click("header nav a:text-is('Spark loads')")
    form = page.locator("#launch-load")
    form.locator("input[name=kind][value=ingest]").check()
    expect(page.locator("#export-fields")).to_be_hidden()
    form.locator("select[name=topic]").select_option(topic)
    form.locator("input[name=input_path]").fill(f"in/{topic}.json")  # no such file
    form.locator("select[name=input_format]").select_option("csv")
    form.locator("input[name=key_column]").fill("id")
    form.locator("input[name=value_column]").fill("payload")
    page.click("#launch-load-submit")

    # Refused on the page, at its field, with what was entered kept.
    errors = page.locator("#launch-errors li[data-field=input_path]")
    expect(errors).to_contain_text("does not exist under the data root")
    expect(form.locator("input[name=kind][value=ingest]")).to_be_checked()
    expect(form.locator("input[name=input_path]")).to_have_value(f"in/{topic}.json")
    expect(form.locator("input[name=key_column]")).to_have_value("id")
    expect(page.locator("#ingest-fields")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "spark-ingest-refused.png"), full_page=True)

    form.locator("input[name=input_path]").fill(f"in/{topic}.csv")
    page.click("#launch-load-submit")
    page.wait_for_url("**/clusters/local/spark-loads/*/")
    load_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    expect(page.locator("#load-status")).to_have_attribute(
        "data-status", "succeeded", timeout=LOAD_TIMEOUT_MS
    )
    expect(page.locator("#result-rows")).to_have_text(str(len(rows)))
    page.screenshot(path=str(ARTIFACTS / "spark-ingest-done.png"), full_page=True)
    load = api_load(live_dashboard, load_id)
    assert load["load_type"] == "ingest" and load["input_path"] == str(source)

    found = read_back_with_kafka_python(bootstrap, topic, 2, len(rows))
    expected = [(k.encode(), v.encode()) for k, v in rows]
    assert sorted(found) == sorted(expected)  # each row once: no loss, no duplicate
