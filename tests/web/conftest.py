"""Fixtures of the web platform's tests: a real redis-server, a real broker (tests/conftest.py),
users with roles and API tokens, and a live daphne serving the dashboard.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness import ROOT, free_port, wait_for_port

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A throwaway redis-server on a free port (no persistence)."""
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    process = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    wait_for_port(port, 20, process)
    yield f"redis://127.0.0.1:{port}/0"
    process.kill()
    process.wait(10)


@pytest.fixture(scope="session", autouse=True)
def secrets_in_test_dirs(tmp_path_factory):
    """The brokers' admin tokens live in the tests' temporary directories: those are the
    secrets directories here, for this process and the daphne/Celery ones it starts."""
    from django.conf import settings

    base = str(tmp_path_factory.getbasetemp())
    os.environ["DASHBOARD_SECRETS_DIRS"] = base
    settings.SECRETS_DIRS = [Path(base)]
    yield


@pytest.fixture(scope="session", autouse=True)
def close_dashboard_zookeeper_sessions(zookeeper):
    """The dashboard keeps its ZooKeeper session open; close it before ZooKeeper stops."""
    yield
    from dashboard.core.admin_api import close_zookeeper_sessions

    close_zookeeper_sessions()


@pytest.fixture
def channel_layer_on_redis(settings, redis_server):
    """Point the Channels layer at the test's redis-server (a fresh layer per test)."""
    from channels.layers import channel_layers

    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [redis_server], "expiry": 10},
        }
    }
    channel_layers.backends.clear()
    yield redis_server
    channel_layers.backends.clear()


def broker_admin_token_ref(broker) -> str:
    return f"file:{broker.dir / 'logs' / 'admin.token'}"


def register(broker, name: str = "local"):
    from dashboard.core.models import Cluster

    return Cluster.objects.create(
        name=name,
        bootstrap_servers=broker.bootstrap,
        zookeeper_connect=broker.props["zookeeper.connect"],
        admin_token_ref=broker_admin_token_ref(broker),
    )


@pytest.fixture
def kafka_cluster(db, broker):
    """The shared broker registered as cluster `local`, admin API found through ZooKeeper."""
    return register(broker)


@pytest.fixture
def group_cluster(db, group_broker):
    """The shared consumer-group broker (groups form at once) registered as `local`."""
    return register(group_broker)


def make_user(username: str, role: str | None):
    from django.contrib.auth.models import Group, User

    from dashboard.core.roles import ensure_roles

    ensure_roles()
    user = User.objects.create_user(username=username, password=f"{username}-pw-123")
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def token_client(user):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def viewer(db):
    return make_user("vera", "viewer")


@pytest.fixture
def operator(db):
    return make_user("otto", "operator")


@pytest.fixture
def viewer_api(viewer):
    return token_client(viewer)


@pytest.fixture
def operator_api(operator):
    return token_client(operator)


# A live dashboard (daphne) for schemathesis and the browser --------------------------------
@dataclass
class LiveDashboard:
    url: str
    username: str
    password: str
    token: str
    cluster: str
    broker: object
    log_path: Path
    env: dict


def _manage(env: dict, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


@contextlib.contextmanager
def running_dashboard(
    tmp_path_factory, redis_server, bootstrap: str, zookeeper_connect: str, token_ref: str
):
    """daphne serving dashboard.asgi on a free port, with its own SQLite file, set up the way
    `make run` does it (migrate, bootstrap_admin, register_cluster `local`)."""
    var = tmp_path_factory.mktemp("dashboard-var")
    env = {
        **os.environ,
        "DASHBOARD_VAR_DIR": str(var),
        "DATABASE_URL": f"sqlite:///{var / 'dashboard.sqlite3'}",
        "REDIS_URL": redis_server,
        "DJANGO_SECRET_KEY": "test-secret-key-not-for-production-0123456789abcdef",
        "DASHBOARD_COLLECTOR_INTERVAL_S": "0.5",
    }
    password = "live-admin-pw-123"
    _manage(env, "migrate", "--no-input", "-v0")
    _manage(env, "bootstrap_admin", "--password", password)
    _manage(
        env,
        "register_cluster",
        "local",
        "--bootstrap-servers",
        bootstrap,
        "--zookeeper-connect",
        zookeeper_connect,
        "--admin-token-ref",
        token_ref,
    )
    token = _manage(env, "drf_create_token", "admin").split()[2]
    port = free_port()
    log_path = var / "daphne.log"
    log = open(log_path, "ab")  # noqa: SIM115 - lives with the process
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "dashboard.asgi:application",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for_port(port, 30, process)
        yield LiveDashboard(
            url=f"http://127.0.0.1:{port}",
            username="admin",
            password=password,
            token=token,
            cluster="local",
            broker=None,
            log_path=log_path,
            env=env,
        )
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@contextlib.contextmanager
def dashboard_on_own_broker(zookeeper, tmp_path_factory, redis_server, **broker_props):
    """A live dashboard (see running_dashboard) on a broker of its own started with
    `broker_props`; the broker is `dashboard.broker`."""
    from tests.conftest import new_broker

    broker = new_broker(zookeeper, tmp_path_factory, **broker_props).start()
    try:
        with running_dashboard(
            tmp_path_factory,
            redis_server,
            broker.bootstrap,
            broker.props["zookeeper.connect"],
            broker_admin_token_ref(broker),
        ) as dashboard:
            dashboard.broker = broker
            yield dashboard
    finally:
        broker.kill()


@pytest.fixture(scope="session")
def live_dashboard(zookeeper, tmp_path_factory, redis_server):
    """A live dashboard on its own broker (see running_dashboard)."""
    # No cleaner thread: compaction happens when the maintenance page asks for it.
    with dashboard_on_own_broker(
        zookeeper,
        tmp_path_factory,
        redis_server,
        num_partitions="3",
        group_initial_rebalance_delay_ms="0",
        log_cleaner_enable="false",
    ) as dashboard:
        yield dashboard


@contextlib.contextmanager
def running_celery_worker(env: dict, log_path: Path):
    """A real Celery worker (`celery -A tasks`, solo pool: tasks run in this very process) on
    the database and Redis of `env`; yields the process."""
    log = open(log_path, "ab")  # noqa: SIM115 - lives with the process
    command = [sys.executable, "-m", "celery", "-A", "tasks", "worker", "-P", "solo", "-l", "info"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_until(lambda: b" ready." in log_path.read_bytes() or process.poll() is not None, 60)
        assert process.poll() is None, log_path.read_text()
        yield process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture(scope="session")
def celery_worker(live_dashboard):
    """A real Celery worker on the live dashboard's database and Redis."""
    log_path = live_dashboard.log_path.with_name("celery-worker.log")
    with running_celery_worker(live_dashboard.env, log_path):
        yield log_path


def wait_until(predicate, timeout: float = 15.0, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)
