"""Spark loads from the browser (Debian's chromium via Playwright) on a live daphne with a real
Celery worker running spark-submit: launch an export, watch the progress bar reach 100 % and
the result appear without a reload; launch another and cancel it: the Spark job's processes
are gone and the load ends cancelled."""

from __future__ import annotations

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
                                       document.getElementById('load-progress').value]), 50);
}"""


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


def api_load(live_dashboard, load_id: int) -> dict:
    response = requests.get(
        f"{live_dashboard.url}/api/v3/clusters/local/spark-loads/{load_id}",
        headers={"Authorization": f"Token {live_dashboard.token}"},
        timeout=30,
    )
    response.raise_for_status()
    return response.json()


def processes_of_load(load_id: int) -> list[int]:
    """Processes whose command line names this load (spark-submit, its JVM, the driver)."""
    marker = f"sparkload-{load_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
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

    seen = page.evaluate("() => window.__seen")
    bars = [value for _, value in seen]
    assert bars == sorted(bars), "the progress bar went backwards"
    assert bars[-1] == 100 and any(s == "running" for s, _ in seen)
    assert page.evaluate("() => window.__noReload === true")  # all pushed, no reload
    page.screenshot(path=str(ARTIFACTS / "spark-load-done.png"), full_page=True)

    load = api_load(live_dashboard, load_id)
    assert load["status"] == "succeeded" and load["result"]["rows"] == records
    assert load["progress"]["percent"] == 100
    assert load["progress"]["tasks_done"] == load["progress"]["tasks_total"] > 0
    # The list page shows it too.
    page.click("header nav a:text-is('Spark loads')")
    row = page.locator(f"#loads tbody tr[data-load='{load_id}']")
    expect(row).to_have_attribute("data-status", "succeeded")
    expect(row).to_contain_text(str(records))


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
    assert group_alive(pid) and processes_of_load(load_id)

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
    assert processes_of_load(load_id) == [], "a spark-submit of the load is still running"
