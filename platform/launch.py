"""Start the local platform on loopback: ZooKeeper, Redis, a broker, the dashboard
(daphne; the database migrated, the first admin user created, the broker registered) and a
Celery worker and beat, for `make run`.

Everything keeps its state under var/ at the repository root. Ctrl-C or SIGTERM stops all
of them; if one dies, the others are stopped too. This directory is not a Python package
(a package named `platform` would shadow the standard library module).
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VAR = ROOT / "var"
sys.path.insert(0, str(ROOT))  # run as a script: the project's packages are one level up

from brokerd.tools import zookeeper  # noqa: E402


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_for_port(port: int, process: subprocess.Popen, name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"launch: {name} exited with {process.returncode}; see var/logs/")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"launch: {name} did not listen on port {port} within {timeout:.0f}s")


def spawn(
    name: str, command: list[str], cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.Popen:
    logs = VAR / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_file = open(logs / f"{name}.log", "ab")  # noqa: SIM115 - lives with the process
    return subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def start_zookeeper(port: int) -> subprocess.Popen:
    home = VAR / "zookeeper"
    (home / "data").mkdir(parents=True, exist_ok=True)
    config = home / "zoo.cfg"
    config.write_text(
        f"tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir={home / 'data'}\n"
        f"clientPort={port}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
    )
    process = spawn("zookeeper", zookeeper.server_command(config, max_heap="512m"))
    wait_for_port(port, process, "ZooKeeper")
    return process


def start_redis(port: int) -> subprocess.Popen:
    process = spawn(
        "redis",
        [
            "redis-server",
            "--save",
            "",
            "--appendonly",
            "no",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
        ],
    )
    wait_for_port(port, process, "Redis")
    return process


ADMIN_TOKEN = VAR / "admin.token"


def admin_token() -> str:
    """One admin API token for every local broker: the dashboard stores one per cluster."""
    if not ADMIN_TOKEN.exists():
        VAR.mkdir(parents=True, exist_ok=True)
        ADMIN_TOKEN.write_text(secrets.token_urlsafe(32))
        ADMIN_TOKEN.chmod(0o600)
    return ADMIN_TOKEN.read_text().strip()


def start_broker(broker_id: int, port: int, zk_port: int, replication: int) -> subprocess.Popen:
    home = VAR / f"broker-{broker_id}"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "server.properties"
    config.write_text(
        f"broker.id={broker_id}\n"
        f"listeners=PLAINTEXT://127.0.0.1:{port}\n"
        f"log.dirs={home / 'logs'}\n"
        f"zookeeper.connect=127.0.0.1:{zk_port}/brokerd\n"
        "num.partitions=3\n"
        f"default.replication.factor={replication}\n"
        f"offsets.topic.replication.factor={replication}\n"
        f"min.insync.replicas={min(2, replication)}\n"
        f"admin.token={admin_token()}\n"
    )
    process = spawn(
        f"broker-{broker_id}",
        [sys.executable, "-m", "brokerd", "serve", "--config", str(config)],
    )
    wait_for_port(port, process, f"broker {broker_id}")
    return process


def dashboard_env(redis_port: int) -> dict[str, str]:
    return {**os.environ, "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0"}


def prepare_dashboard(env: dict[str, str], broker_ports: list[int], zk_port: int) -> None:
    """Migrate, create (and print) the first admin user, register the local cluster."""
    token = ADMIN_TOKEN
    for args in (
        ["migrate", "--no-input", "-v0"],
        ["bootstrap_admin"],
        [
            "register_cluster",
            "local",
            "--bootstrap-servers=" + ",".join(f"127.0.0.1:{p}" for p in broker_ports),
            f"--zookeeper-connect=127.0.0.1:{zk_port}/brokerd",
            f"--admin-token-ref=file:{token}",
        ],
    ):
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
        )
        if result.returncode != 0:
            raise SystemExit(f"launch: manage.py {args[0]} failed:\n{result.stderr}")
        if args[0] == "bootstrap_admin":
            print(f"dashboard: {result.stdout.strip()}", flush=True)


def start_dashboard(port: int, env: dict[str, str]) -> subprocess.Popen:
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    process = spawn("daphne", [*command, "dashboard.asgi:application"], env=env)
    wait_for_port(port, process, "daphne")
    return process


def celery_command(role: str) -> list[str]:
    """The Celery worker or beat of the platform (tasks/celery.py; beat's schedules live in
    the database through django-celery-beat)."""
    command = [sys.executable, "-m", "celery", "-A", "tasks", role, "-l", "info"]
    if role == "worker":
        command += ["--concurrency", "2", "--without-gossip", "--without-mingle"]
    else:
        command += ["--schedule", str(VAR / "celerybeat-schedule")]
    return command


def start_celery(env: dict[str, str]) -> list[tuple[str, subprocess.Popen]]:
    return [(f"celery-{role}", spawn(f"celery-{role}", celery_command(role), env=env))
            for role in ("worker", "beat")]  # fmt: skip


def stop_all(processes: list[tuple[str, subprocess.Popen]]) -> None:
    """Brokers first (they close their ZooKeeper sessions), then the services."""
    for _name, process in reversed(processes):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--zookeeper-port", type=int, default=2181)
    parser.add_argument("--redis-port", type=int, default=6379)
    parser.add_argument("--broker-port", type=int, default=9092, help="first broker's port")
    parser.add_argument("--brokers", type=int, default=3, help="how many brokers (ports follow)")
    parser.add_argument("--web-port", type=int, default=8000)
    args = parser.parse_args()
    broker_ports = [args.broker_port + i for i in range(max(args.brokers, 1))]
    for name, port in (
        ("ZooKeeper", args.zookeeper_port),
        ("Redis", args.redis_port),
        *((f"broker {i + 1}", port) for i, port in enumerate(broker_ports)),
        ("the dashboard", args.web_port),
    ):
        if not port_free(port):
            print(f"launch: port {port} for {name} is in use", file=sys.stderr)
            return 1

    stopping = False

    def request_stop(_signum, _frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)

    processes: list[tuple[str, subprocess.Popen]] = []
    try:
        processes.append(("zookeeper", start_zookeeper(args.zookeeper_port)))
        processes.append(("redis", start_redis(args.redis_port)))
        replication = min(3, len(broker_ports))
        for broker_id, port in enumerate(broker_ports, start=1):
            process = start_broker(broker_id, port, args.zookeeper_port, replication)
            processes.append((f"broker-{broker_id}", process))
        env = dashboard_env(args.redis_port)
        prepare_dashboard(env, broker_ports, args.zookeeper_port)
        processes.append(("daphne", start_dashboard(args.web_port, env)))
        processes.extend(start_celery(env))
        print(
            "platform running on loopback (logs in var/logs/):\n"
            f"  ZooKeeper  127.0.0.1:{args.zookeeper_port} (chroot /brokerd)\n"
            f"  Redis      127.0.0.1:{args.redis_port}\n"
            + "".join(
                f"  broker {i}   127.0.0.1:{port}\n" for i, port in enumerate(broker_ports, 1)
            )
            + f"  bootstrap.servers={','.join(f'127.0.0.1:{p}' for p in broker_ports)}\n"
            f"  dashboard  http://127.0.0.1:{args.web_port}/  (API docs at /api/docs/)\n"
            "  celery     worker and beat (maintenance schedules, lag history)\n"
            "Ctrl-C stops everything.",
            flush=True,
        )
        while not stopping:
            for name, process in processes:
                if process.poll() is not None:
                    print(f"launch: {name} exited with {process.returncode}", file=sys.stderr)
                    stopping = True
            time.sleep(0.5)
    finally:
        stop_all(processes)
        print("platform stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
