"""Start the local platform on loopback: ZooKeeper, Redis, brokers, the dashboard
(daphne; the database migrated, the first admin user created, the brokers registered) and a
Celery worker and beat, for `make run`.

With --secure (`make run SECURE=1`) the Kafka ports speak SASL_SSL: a local CA and the
brokers' certificates are made under var/pki/, SCRAM-SHA-512 users `admin` (for clients and
the dashboard) and `broker` (between brokers) are created in ZooKeeper before the brokers
start, and the admin's client settings are written to var/secrets/kafka-client.properties
(its password printed once, when it is made).

Everything keeps its state under var/ at the repository root (DASHBOARD_VAR_DIR elsewhere). The processes are supervised
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The same directory the dashboard's settings use (DASHBOARD_VAR_DIR, default var/).
VAR = Path(os.environ.get("DASHBOARD_VAR_DIR") or ROOT / "var")
sys.path.insert(0, str(ROOT))  # run as a script: the project's packages are one level up

from brokerd.tools import zookeeper  # noqa: E402
from brokerd.tools.local_ca import issue, make_ca  # noqa: E402
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


PKI = VAR / "pki"
CLIENT_PROPERTIES = VAR / "secrets" / "kafka-client.properties"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
MECHANISM = "SCRAM-SHA-512"


def private_file(path: Path, text: str) -> None:
    """Write `text` readable by this user only (passwords, keys, server.properties)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def kafka_password(user: str) -> tuple[str, bool]:
    """The local SCRAM user's password, made once: (password, made now)."""
    path = VAR / "secrets" / f"kafka-{user}.password"
    if path.exists():
        return path.read_text().strip(), False
    password = secrets.token_urlsafe(24)  # [A-Za-z0-9_-]: safe inside kafka-configs' [...]
    private_file(path, password)
    return password, True


def local_pki() -> tuple[Path, Path]:
    """(CA certificate, the brokers' PEM key store), made once under var/pki/."""
    ca_cert, keystore = PKI / "local-ca.pem", PKI / "broker.keystore.pem"
    if not (ca_cert.exists() and keystore.exists()):
        PKI.mkdir(mode=0o700, parents=True, exist_ok=True)
        ca = make_ca(PKI, "local-ca", "brokerd local", days=3650)
        issue(PKI, "broker", "/O=brokerd local/CN=localhost", ca, 825, "DNS:localhost,IP:127.0.0.1")
    return ca_cert, keystore


def create_scram_users(zk_port: int, users: dict[str, str]) -> None:
    """As kafka-configs.sh --zookeeper: before any broker runs, so the first one can log in."""
    for user, password in users.items():
        command = [sys.executable, "-m", "brokerd", "configs"]
        command += ["--zookeeper", f"127.0.0.1:{zk_port}/brokerd", "--alter"]
        command += ["--add-config", f"{MECHANISM}=[password={password}]"]
        command += ["--entity-type", "users", "--entity-name", user]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"launch: creating the SCRAM user {user} failed:\n{done.stderr}")


def jaas(user: str, password: str) -> str:
    return f'{SCRAM_MODULE} required username="{user}" password="{password}";'


@dataclass(frozen=True)
class Security:
    """How the local Kafka ports are secured: PLAINTEXT, or SASL_SSL with SCRAM."""

    protocol: str = "PLAINTEXT"
    broker_password: str = ""
    ca_cert: Path | None = None
    keystore: Path | None = None

    def broker_properties(self) -> str:
        if self.protocol == "PLAINTEXT":
            return "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT\n"
        return (
            "listener.security.protocol.map=SASL_SSL:SASL_SSL,INTERNAL:SASL_SSL\n"
            f"sasl.enabled.mechanisms={MECHANISM}\n"
            f"sasl.mechanism.inter.broker.protocol={MECHANISM}\n"
            f"listener.name.internal.{MECHANISM.lower()}.sasl.jaas.config="
            f"{jaas('broker', self.broker_password)}\n"
            "ssl.keystore.type=PEM\n"
            f"ssl.keystore.location={self.keystore}\n"
            "ssl.truststore.type=PEM\n"
            f"ssl.truststore.location={self.ca_cert}\n"
        )


def secure_cluster(zk_port: int) -> Security:
    """The CA, the SCRAM users and the admin's client properties of a SASL_SSL cluster."""
    ca_cert, keystore = local_pki()
    admin_password, made = kafka_password("admin")
    broker_password, _ = kafka_password("broker")
    create_scram_users(zk_port, {"admin": admin_password, "broker": broker_password})
    private_file(
        CLIENT_PROPERTIES,
        "security.protocol=SASL_SSL\n"
        f"sasl.mechanism={MECHANISM}\n"
        f"sasl.jaas.config={jaas('admin', admin_password)}\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={ca_cert}\n",
    )
    if made:
        print(f"kafka: SCRAM user admin, password {admin_password} (shown once)", flush=True)
    return Security("SASL_SSL", broker_password, ca_cert, keystore)


def start_broker(
    supervisor: Supervisor,
    broker_id: int,
    port: int,
    zk_port: int,
    replication: int,
    security: Security,
) -> None:
    home = VAR / f"broker-{broker_id}"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "server.properties"
    private_file(
        config,
        f"broker.id={broker_id}\n"
        # Clients on PLAINTEXT (or SASL_SSL); brokers reach each other on INTERNAL (a
        # loopback port the OS picks, published in the registration), the only listener
        # that takes inter-broker requests (LeaderAndIsr, StopReplica, follower fetches).
        f"listeners={security.protocol}://127.0.0.1:{port},INTERNAL://127.0.0.1:0\n"
        + security.broker_properties()
        + "inter.broker.listener.name=INTERNAL\n"
        f"log.dirs={home / 'logs'}\n"
        f"zookeeper.connect=127.0.0.1:{zk_port}/brokerd\n"
        "num.partitions=3\n"
        f"default.replication.factor={replication}\n"
        f"offsets.topic.replication.factor={replication}\n"
        f"transaction.state.log.replication.factor={replication}\n"
        f"transaction.state.log.min.isr={min(2, replication)}\n"
        f"min.insync.replicas={min(2, replication)}\n"
        f"admin.token={admin_token()}\n",
    )
    command = [sys.executable, "-m", "brokerd", "serve", "--config", str(config)]
    supervisor.start(program(f"broker-{broker_id}", command, port))


def dashboard_env(redis_port: int) -> dict[str, str]:
    return {
        **os.environ,
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "DASHBOARD_PLATFORM_STATUS_FILE": str(STATUS_FILE),
    }


def prepare_dashboard(
    env: dict[str, str], broker_ports: list[int], zk_port: int, security: Security
) -> None:
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
            *(
                [f"--command-config={CLIENT_PROPERTIES}"]
                if security.protocol != "PLAINTEXT"
                else []
            ),
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
    parser.add_argument(
        "--secure",
        action="store_true",
        help="SASL_SSL (SCRAM-SHA-512) on the Kafka ports, with a local CA",
    )
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
        security = secure_cluster(args.zookeeper_port) if args.secure else Security()
        replication = min(3, len(broker_ports))
        for broker_id, port in enumerate(broker_ports, start=1):
            start_broker(supervisor, broker_id, port, args.zookeeper_port, replication, security)
        env = dashboard_env(args.redis_port)
        prepare_dashboard(env, broker_ports, args.zookeeper_port, security)
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
            + (
                f"  client settings ({security.protocol}): {CLIENT_PROPERTIES}\n"
                if security.protocol != "PLAINTEXT"
                else ""
            )
            + f"  dashboard  http://127.0.0.1:{args.web_port}/  (API docs at /api/docs/)\n"
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
