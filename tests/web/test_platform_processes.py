"""The overview shows `make run`'s processes from the supervisor's status file: rendered with
the page and pushed live, so a process killed and started again is seen while it happens."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from channels.db import database_sync_to_async

from brokerd.util.supervisor import Program, Supervisor

from .conftest import ARTIFACTS, make_user, wait_until
from .test_browser import LIVE_EXPECT_TIMEOUT_MS, chromium_context, log_in
from .test_live import communicator

pytestmark = pytest.mark.django_db(transaction=True)

SLEEPER = "import time\ntime.sleep(600)\n"
ROW = re.compile(
    r'<tr data-process="([^"]+)"><td>[^<]*</td><td class="pid">([^<]+)</td>'
    r'<td class="state [a-z]+">([^<]+)</td><td class="restarts">(\d+)</td>'
    r'<td class="last-exit">([^<]*)</td>'
)


@pytest.fixture
def supervisor(tmp_path, settings):
    """A real supervisor of two sleeping children for the cluster `local`, writing the
    status file the dashboard reads."""
    settings.PLATFORM_STATUS_FILE = tmp_path / "platform-status.json"
    supervisor = Supervisor(settings.PLATFORM_STATUS_FILE, {"cluster": "local"},
                            backoff_initial_s=0.1)  # fmt: skip
    for name in ("broker-1", "daphne"):
        supervisor.start(Program(name, [sys.executable, "-c", SLEEPER], tmp_path / f"{name}.log"))
    yield supervisor
    supervisor.stop()


def kill_and_wait_for_restart(supervisor: Supervisor, name: str) -> tuple[int, int]:
    (child,) = [c for c in supervisor.children if c.program.name == name]
    old = child.pid
    os.kill(old, signal.SIGKILL)
    wait_until(lambda: (supervisor.poll(), child.restarts == 1 and child.state == "running")[1])
    return old, child.pid


def overview_rows(client) -> tuple[str, list[tuple]]:
    html = client.get("/clusters/local/").content.decode()
    section = re.search(r'<section id="platform"([^>]*)>', html)
    return section.group(1).strip(), ROW.findall(html)


def test_overview_page_lists_the_platform_processes_and_a_restart(
    kafka_cluster, client, viewer, supervisor
):
    client.force_login(viewer)
    hidden, rows = overview_rows(client)
    pids = {c.program.name: c.pid for c in supervisor.children}
    assert hidden == ""
    assert rows == [
        ("broker-1", str(pids["broker-1"]), "running", "0", "–"),
        ("daphne", str(pids["daphne"]), "running", "0", "–"),
    ]

    old, new = kill_and_wait_for_restart(supervisor, "broker-1")
    _, rows = overview_rows(client)
    assert rows[0][:4] == ("broker-1", str(new), "running", "1")
    assert rows[0][4].startswith("signal SIGKILL (9) at ")
    assert rows[1] == ("daphne", str(pids["daphne"]), "running", "0", "–")


def test_overview_page_has_no_process_table_without_a_status_file_for_its_cluster(
    kafka_cluster, client, viewer, settings, tmp_path
):
    client.force_login(viewer)
    settings.PLATFORM_STATUS_FILE = tmp_path / "absent.json"
    assert overview_rows(client) == ("hidden", [])
    other = Supervisor(tmp_path / "other.json", {"cluster": "elsewhere"})
    other.write_status()
    settings.PLATFORM_STATUS_FILE = tmp_path / "other.json"
    assert overview_rows(client) == ("hidden", [])


async def test_live_overview_pushes_the_processes_as_one_is_restarted(
    kafka_cluster, channel_layer_on_redis, supervisor
):
    user = await database_sync_to_async(make_user)("paula", "viewer")
    connection = communicator("/ws/clusters/local/overview/", user)
    assert (await connection.connect())[0]

    async def next_platform(predicate, timeout: float = 15.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "no matching snapshot in time"
            message = await connection.receive_json_from(timeout=remaining)
            platform = message["data"].get("platform")
            if message["kind"] == "overview" and platform and predicate(platform["processes"]):
                return {p["name"]: p for p in platform["processes"]}

    pids = {c.program.name: c.pid for c in supervisor.children}
    before = await next_platform(lambda ps: True)
    assert {name: (p["pid"], p["state"], p["restarts"]) for name, p in before.items()} == {
        name: (pid, "running", 0) for name, pid in pids.items()
    }
    old, new = await asyncio.to_thread(kill_and_wait_for_restart, supervisor, "broker-1")
    after = await next_platform(lambda ps: ps[0]["restarts"] == 1)
    assert (after["broker-1"]["pid"], after["broker-1"]["state"]) == (new, "running")
    assert after["broker-1"]["last_exit"] == "signal SIGKILL (9)" and new != old
    assert (after["daphne"]["pid"], after["daphne"]["restarts"]) == (pids["daphne"], 0)
    await connection.disconnect()


def test_the_open_overview_shows_a_process_dying_and_coming_back(live_dashboard):
    """In a real browser on a live daphne: the table appears once the status file does, and
    a child killed with -9 is shown backing off, then running again with a new pid."""
    with chromium_context(expect_timeout_ms=LIVE_EXPECT_TIMEOUT_MS) as context:
        watch_a_restart(context.new_page(), live_dashboard)


def watch_a_restart(page, live_dashboard) -> None:
    from playwright.sync_api import expect

    log_in(page, live_dashboard)
    expect(page.locator("#live-status")).to_have_text("live")
    expect(page.locator("#platform")).to_be_hidden()
    page.evaluate("() => { window.__noReload = true; }")

    status_file = Path(live_dashboard.env["DASHBOARD_VAR_DIR"]) / "platform-status.json"
    # Backing off long enough for the page (collector every 0.5 s) to show it.
    supervisor = Supervisor(status_file, {"cluster": "local"}, backoff_initial_s=3.0)
    runner = None
    try:
        for name in ("broker-1", "daphne"):
            log_path = status_file.parent / f"{name}.log"
            supervisor.start(Program(name, [sys.executable, "-c", SLEEPER], log_path))
        runner = threading.Thread(target=supervisor.run, kwargs={"interval_s": 0.05})
        runner.start()
        (child, other) = supervisor.children
        row = page.locator("#processes tbody tr[data-process='broker-1']")
        expect(page.locator("#platform")).to_be_visible()
        expect(row.locator("td.pid")).to_have_text(str(child.pid))
        expect(row.locator("td.state")).to_have_text("running")

        old = child.pid
        os.kill(old, signal.SIGKILL)
        expect(row.locator("td.state")).to_contain_text("backing-off")
        expect(row.locator("td.last-exit")).to_contain_text("signal SIGKILL (9)")
        page.screenshot(path=str(ARTIFACTS / "platform-backing-off.png"), full_page=True)
        expect(row.locator("td.state")).to_have_text("running")
        expect(row.locator("td.restarts")).to_have_text("1")
        expect(row.locator("td.pid")).not_to_have_text(str(old))
        assert row.locator("td.pid").inner_text() == str(child.pid)
        other_row = page.locator("#processes tbody tr[data-process='daphne']")
        expect(other_row.locator("td.pid")).to_have_text(str(other.pid))
        expect(other_row.locator("td.restarts")).to_have_text("0")
        assert page.evaluate("() => window.__noReload === true")  # updated in place
    finally:
        supervisor.request_stop()
        if runner is not None:
            runner.join(10)
        supervisor.stop()
