"""`make run`'s process supervisor (brokerd/util/supervisor.py) on real processes: a child
killed with -9 is started again with a backoff while the others keep running, the status
file says so, and SIGTERM to the supervising process stops every child in reverse order.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from brokerd.tools import zookeeper
from brokerd.util.supervisor import Program, Supervisor
from tests.harness import ROOT, free_port, java_available

from .wire import WireClient, request

# A child that listens on a port (so "ready" means its SIGTERM handler is installed) and
# appends its name to a file when SIGTERM stops it.
LISTENING_CHILD = """
import signal, socket, sys, time
name, port, stopped = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def stop(*_):
    with open(stopped, "a") as f:
        f.write(name + "\\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen()
while True:
    time.sleep(1)
"""


def alive(pid: int) -> bool:
    """Running (not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_until(predicate, timeout: float, interval: float = 0.02):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def read_status(path: Path) -> dict[str, dict] | None:
    """The status file's processes by name (None while there is no file)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    return {p["name"]: p for p in data["processes"]}


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def kill_leftovers(pids) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def test_a_killed_child_is_restarted_and_sigterm_stops_all_in_reverse_order(tmp_path):
    names = ["first", "second", "third"]
    stopped = tmp_path / "stopped"
    status_path = tmp_path / "status.json"
    spec = {
        "status_path": str(status_path),
        # Long enough that the test sees the child backing off before it is started again.
        "backoff_initial_s": 2.0,
        "backoff_max_s": 30.0,
        "stable_after_s": 60.0,
        "programs": [],
    }
    for name in names:
        port = free_port()
        command = [sys.executable, "-c", LISTENING_CHILD, name, str(port), str(stopped)]
        log_path = str(tmp_path / f"{name}.log")
        spec["programs"].append({"name": name, "command": command, "log_path": log_path,
                                 "port": port})  # fmt: skip
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    driver_log = tmp_path / "driver.log"
    with open(driver_log, "ab") as log:
        driver = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.supervisor_driver", tmp_path / "spec.json"],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    seen_pids: set[int] = set()
    try:

        def all_running():
            status = read_status(status_path)
            if (
                status
                and len(status) == 3
                and all(p["state"] == "running" for p in status.values())
            ):
                return status
            assert driver.poll() is None, driver_log.read_text()
            return None

        before = wait_until(all_running, 30)
        seen_pids.update(p["pid"] for p in before.values())
        victim = before["second"]["pid"]
        os.kill(victim, signal.SIGKILL)

        backing_off = wait_until(
            lambda: (s := read_status(status_path)) and s["second"]["state"] == "backing-off" and s,
            10,
        )
        assert backing_off["second"]["pid"] is None
        assert backing_off["second"]["last_exit"] == "signal SIGKILL (9)"
        assert backing_off["second"]["last_exit_code"] == -9

        after = wait_until(
            lambda: (
                (s := read_status(status_path))
                and s["second"]["state"] == "running"
                and s["second"]["restarts"] == 1
                and s
            ),
            30,
        )
        restarted = after["second"]["pid"]
        seen_pids.add(restarted)
        assert restarted != victim and alive(restarted) and not alive(victim)
        assert after["second"]["last_exit"] == "signal SIGKILL (9)"
        for name in ("first", "third"):
            assert after[name]["pid"] == before[name]["pid"] and alive(after[name]["pid"])
            assert after[name]["restarts"] == 0 and after[name]["last_exit"] is None
        output = driver_log.read_text()
        assert f"second (pid {victim}) exited with signal SIGKILL (9)" in output
        assert f"second started again (pid {restarted}, restart 1)" in output

        driver.send_signal(signal.SIGTERM)
        assert driver.wait(60) == 0, driver_log.read_text()
        assert stopped.read_text().split() == ["third", "second", "first"]
        assert not any(alive(p["pid"]) for p in after.values())
        assert not status_path.exists()  # nothing runs: nothing to show
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(10)
        kill_leftovers(seen_pids)


def test_a_crash_loop_backs_off_doubling_to_the_cap_and_a_stable_run_resets_it(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="brokerd.util.supervisor")
    crash = tmp_path / "crash"  # while it exists, the child exits with 3 at once
    crashy = "import pathlib, sys, time\nif pathlib.Path(sys.argv[1]).exists(): sys.exit(3)\n"
    crashy += "time.sleep(600)\n"
    steady = "import time\ntime.sleep(600)\n"
    supervisor = Supervisor(
        tmp_path / "status.json",
        {"cluster": "test"},
        backoff_initial_s=0.1,
        backoff_max_s=0.4,
        stable_after_s=1.0,
    )

    def exits() -> list[str]:
        return [r.getMessage() for r in caplog.records if " exited with " in r.getMessage()]

    try:
        steady_pid = supervisor.start(
            Program("steady", [sys.executable, "-c", steady], tmp_path / "steady.log")
        )
        crashy_pid = supervisor.start(
            Program("crashy", [sys.executable, "-c", crashy, str(crash)], tmp_path / "c.log")
        )
        crash.touch()
        os.kill(crashy_pid, signal.SIGKILL)
        wait_until(lambda: (supervisor.poll(), len(exits()) >= 5)[1], 30)
        delays = [message.rsplit(" in ", 1)[1] for message in exits()[:5]]
        assert delays == ["0.1s", "0.2s", "0.4s", "0.4s", "0.4s"]
        assert "signal SIGKILL (9)" in exits()[0]
        assert all("exited with exit code 3" in message for message in exits()[1:5])
        status = read_status(supervisor.status_path)
        assert status["crashy"]["restarts"] >= 4 and status["crashy"]["last_exit_code"] == 3
        assert status["steady"]["pid"] == steady_pid and status["steady"]["restarts"] == 0

        crash.unlink()
        unlinked = time.monotonic()
        child = supervisor.children[1]
        # A child started before the unlink may still have seen the file: wait for a later one.
        wait_until(
            lambda: (supervisor.poll(), child.state == "running" and child.started_at > unlinked)[
                1
            ],
            30,
        )
        running = child.pid
        time.sleep(1.2)  # past stable_after_s: the next crash starts the backoff afresh
        supervisor.poll()
        assert alive(running)
        count = len(exits())
        os.kill(running, signal.SIGKILL)
        wait_until(lambda: (supervisor.poll(), len(exits()) > count)[1], 10)
        assert exits()[count].endswith(" in 0.1s")
        assert alive(steady_pid)
    finally:
        pids = [child.pid for child in supervisor.children if child.pid]
        supervisor.stop()
    assert not any(alive(pid) for pid in pids)


def broker_registration_owner(zk_port: int) -> int | None:
    """The ZooKeeper session owning /brokers/ids/1, None if absent or ZooKeeper is down."""
    client = KazooClient(hosts=f"127.0.0.1:{zk_port}/brokerd", timeout=5)
    try:
        client.start(timeout=5)
    except Exception:
        client.close()
        return None
    try:
        stat = client.exists("/brokers/ids/1")
        return stat.ephemeralOwner if stat else None
    finally:
        client.stop()
        client.close()


@pytest.mark.skipif(not java_available(), reason="needs Debian's zookeeper package and Java")
def test_a_killed_broker_and_a_killed_zookeeper_are_started_again(tmp_path):
    zk_port, broker_port = free_port(), free_port()
    zoo_cfg = tmp_path / "zoo.cfg"
    zoo_cfg.write_text(
        f"tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir={tmp_path / 'zk-data'}\n"
        f"clientPort={zk_port}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
        "minSessionTimeout=1000\nmaxSessionTimeout=60000\n"
    )
    properties = tmp_path / "server.properties"
    properties.write_text(
        "broker.id=1\n"
        f"listeners=PLAINTEXT://127.0.0.1:{broker_port}\n"
        f"log.dirs={tmp_path / 'broker-logs'}\n"
        f"zookeeper.connect=127.0.0.1:{zk_port}/brokerd\n"
        # Short: a restarted broker waits for its dead session to expire before registering.
        "zookeeper.session.timeout.ms=4000\n"
        "offsets.topic.replication.factor=1\n"
    )
    supervisor = Supervisor(tmp_path / "status.json", {"cluster": "test"}, backoff_initial_s=0.2)

    def supervised(name: str):
        supervisor.poll()
        return read_status(supervisor.status_path)[name]

    try:
        zk_pid = supervisor.start(
            Program(
                "zookeeper",
                zookeeper.server_command(zoo_cfg, "256m"),
                tmp_path / "zookeeper.log",
                ready=lambda: port_open(zk_port),
            )
        )
        broker_pid = supervisor.start(
            Program(
                "broker-1",
                [sys.executable, "-m", "brokerd", "serve", "--config", str(properties)],
                tmp_path / "broker-1.log",
                cwd=ROOT,
                ready=lambda: port_open(broker_port),
            )
        )
        first_session = wait_until(lambda: broker_registration_owner(zk_port), 30, 0.2)

        os.kill(broker_pid, signal.SIGKILL)
        restarted = wait_until(
            lambda: (
                (p := supervised("broker-1"))["state"] == "running" and p["restarts"] == 1 and p
            ),
            40,
        )
        assert restarted["pid"] != broker_pid and restarted["last_exit"] == "signal SIGKILL (9)"
        assert supervised("zookeeper")["pid"] == zk_pid and alive(zk_pid)
        # Registered again, by the new process's session, once the dead one expired.
        wait_until(
            lambda: (
                (supervisor.poll(), broker_registration_owner(zk_port))[1]
                not in (None, first_session)
            ),
            30,
            0.2,
        )
        with WireClient(f"127.0.0.1:{broker_port}") as client:
            metadata = client.call(request(3, 1, topics=[]))
        assert [b.node_id for b in metadata.brokers] == [1]

        os.kill(zk_pid, signal.SIGKILL)
        zk_again = wait_until(
            lambda: (
                (p := supervised("zookeeper"))["state"] == "running" and p["restarts"] == 1 and p
            ),
            40,
        )
        assert zk_again["pid"] != zk_pid
        assert supervised("broker-1")["pid"] == restarted["pid"] and alive(restarted["pid"])
        # The broker rides out ZooKeeper's restart and is registered on the new server.
        wait_until(
            lambda: (supervisor.poll(), broker_registration_owner(zk_port))[1] is not None, 30, 0.2
        )
        assert supervised("broker-1")["restarts"] == 1 and alive(restarted["pid"])
    finally:
        pids = [child.pid for child in supervisor.children if child.pid]
        supervisor.stop()
    assert not any(alive(pid) for pid in pids)
