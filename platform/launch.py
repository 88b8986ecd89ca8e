"""Start the local platform on loopback: ZooKeeper, Redis, brokers, the dashboard
(daphne; the database migrated, the first admin user created, the brokers registered) and a
Celery worker and beat, for `make run`.

Everything keeps its state under var/ at the repository root. The processes are supervised
(brokerd/util/supervisor.py): one that dies is started again with a backoff while the others
keep running, each exit and restart is logged here, and their states are written to
var/platform-status.json for the dashboard's overview. Ctrl-C or SIGTERM stops them all, in
reverse start order. This directory is not a Python package (a package named `platform`
would shadow the standard library module).
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VAR = ROOT / "var"
sys.path.insert(0, str(ROOT))  # run as a script: the project's packages are one level up

from brokerd.tools import zookeeper  # noqa: E402
from brokerd.util.supervisor import Program, StartFailed, StopRequested, Supervisor  # noqa: E402

CLUSTER = "local"  # the name the dashboard knows the local brokers by
STATUS_FILE = VAR / "platform-status.json"


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def program(
    name: str, command: list[str], port: int | None = None, env: dict[str, str] | None = None
) -> Program:
    """A supervised process logging to var/logs/<name>.log, ready once `port` accepts."""
    return Program(
        name,
        command,
        log_path=VAR / "logs" / f"{name}.log",
        cwd=ROOT,
        env=env,
        ready=None if port is None else lambda: port_open(port),
    )


def start_zookeeper(supervisor: Supervisor, port: int) -> None:
    home = VAR / "zookeeper"
    (home / "data").mkdir(parents=True, exist_ok=True)
    config = home / "zoo.cfg"
    config.write_text(
        f"tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir={home / 'data'}\n"
        f"clientPort={port}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
    )
    supervisor.start(program("zookeeper", zookeeper.server_command(config, "512m"), port))


def start_redis(supervisor: Supervisor, port: int) -> None:
    command = ["redis-server", "--save", "", "--appendonly", "no"]
    command += ["--port", str(port), "--bind", "127.0.0.1"]
    supervisor.start(program("redis", command, port))


# In the dashboard's secrets directory: the only place its `file:` references may name.
ADMIN_TOKEN = VAR / "secrets" / "admin.token"


def admin_token() -> str:
    """One admin API token for every local broker: the dashboard stores one per cluster."""
    if not ADMIN_TOKEN.exists():
        ADMIN_TOKEN.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        ADMIN_TOKEN.write_text(secrets.token_urlsafe(32))
        ADMIN_TOKEN.chmod(0o600)
    return ADMIN_TOKEN.read_text().strip()


def start_broker(
    supervisor: Supervisor, broker_id: int, port: int, zk_port: int, replication: int
) -> None:
    home = VAR / f"broker-{broker_id}"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "server.properties"
    config.write_text(
        f"broker.id={broker_id}\n"
        # Clients on PLAINTEXT; brokers reach each other on INTERNAL (a loopback port the
        # OS picks, published in the registration), the only listener that takes
        # inter-broker requests (LeaderAndIsr, StopReplica, follower fetches, ...).
        f"listeners=PLAINTEXT://127.0.0.1:{port},INTERNAL://127.0.0.1:0\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT\n"
        "inter.broker.listener.name=INTERNAL\n"
        f"log.dirs={home / 'logs'}\n"
        f"zookeeper.connect=127.0.0.1:{zk_port}/brokerd\n"
        "num.partitions=3\n"
        f"default.replication.factor={replication}\n"
        f"offsets.topic.replication.factor={replication}\n"
        f"min.insync.replicas={min(2, replication)}\n"
        f"admin.token={admin_token()}\n"
    )
    command = [sys.executable, "-m", "brokerd", "serve", "--config", str(config)]
    supervisor.start(program(f"broker-{broker_id}", command, port))


def dashboard_env(redis_port: int) -> dict[str, str]:
    return {
        **os.environ,
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "DASHBOARD_PLATFORM_STATUS_FILE": str(STATUS_FILE),
    }


def prepare_dashboard(env: dict[str, str], broker_ports: list[int], zk_port: int) -> None:
    """Migrate, create (and print) the first admin user, register the local cluster."""
    token = ADMIN_TOKEN
    for args in (
        ["migrate", "--no-input", "-v0"],
        ["bootstrap_admin"],
        [
            "register_cluster",
            CLUSTER,
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


def start_dashboard(supervisor: Supervisor, port: int, env: dict[str, str]) -> None:
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    supervisor.start(program("daphne", [*command, "dashboard.asgi:application"], port, env))


def celery_command(role: str) -> list[str]:
    """The Celery worker or beat of the platform (the app of dashboard/celery.py with the
    task modules of tasks/; beat's schedules live in the database through django-celery-beat)."""
    command = [sys.executable, "-m", "celery", "-A", "tasks", role, "-l", "info"]
    if role == "worker":
        command += ["--concurrency", "2", "--without-gossip", "--without-mingle"]
    else:
        command += ["--schedule", str(VAR / "celerybeat-schedule")]
    return command


def start_celery(supervisor: Supervisor, env: dict[str, str]) -> None:
    for role in ("worker", "beat"):
        supervisor.start(program(f"celery-{role}", celery_command(role), env=env))


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

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s launch: %(message)s", stream=sys.stderr
    )
    supervisor = Supervisor(STATUS_FILE, {"cluster": CLUSTER})
    signal.signal(signal.SIGTERM, lambda _signum, _frame: supervisor.request_stop())
    signal.signal(signal.SIGINT, lambda _signum, _frame: supervisor.request_stop())

    status = 0
    try:
        start_zookeeper(supervisor, args.zookeeper_port)
        start_redis(supervisor, args.redis_port)
        replication = min(3, len(broker_ports))
        for broker_id, port in enumerate(broker_ports, start=1):
            start_broker(supervisor, broker_id, port, args.zookeeper_port, replication)
        env = dashboard_env(args.redis_port)
        prepare_dashboard(env, broker_ports, args.zookeeper_port)
        start_dashboard(supervisor, args.web_port, env)
        start_celery(supervisor, env)
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
            "A process that dies is started again; Ctrl-C stops everything.",
            flush=True,
        )
        supervisor.run()
    except StartFailed as exc:
        print(f"launch: {exc}; see var/logs/", file=sys.stderr)
        status = 1
    except StopRequested:
        pass
    finally:
        supervisor.stop()
        print("platform stopped", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
