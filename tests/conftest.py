import json
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def vectors() -> dict:
    return json.loads((SHARED / "reference" / "vectors.json").read_text())


# Real ZooKeeper and brokers (tests/harness.py) -------------------------------------------
import itertools  # noqa: E402
import uuid  # noqa: E402

from tests.harness import BrokerProcess, ZooKeeper  # noqa: E402
from tests.tls_certs import make_pki  # noqa: E402

_chroots = itertools.count(1)


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory):
    """One ZooKeeper for the whole run; each broker gets its own chroot."""
    server = ZooKeeper(tmp_path_factory.mktemp("zookeeper")).start()
    yield server
    server.stop()


def new_broker(zookeeper, tmp_path_factory, **props) -> BrokerProcess:
    chroot = f"/brokerd-{next(_chroots)}"
    return BrokerProcess(tmp_path_factory.mktemp("broker"), f"{zookeeper.connect}{chroot}", **props)


@pytest.fixture(scope="session")
def broker(zookeeper, tmp_path_factory):
    """A broker shared by the session: tests use their own topics (see `topic_name`)."""
    process = new_broker(zookeeper, tmp_path_factory, num_partitions="3").start()
    yield process
    process.kill()


@pytest.fixture(scope="session")
def group_broker(zookeeper, tmp_path_factory):
    """A shared broker for consumer-group tests: groups form at once (no initial delay)."""
    process = new_broker(
        zookeeper, tmp_path_factory, num_partitions="3", group_initial_rebalance_delay_ms="0"
    ).start()
    yield process
    process.kill()


@pytest.fixture
def make_broker(zookeeper, tmp_path_factory):
    """Brokers a test owns (restarts, signals, configs); killed afterwards."""
    made = []

    def make(**props) -> BrokerProcess:
        process = new_broker(zookeeper, tmp_path_factory, **props)
        made.append(process)
        return process

    yield make
    for process in made:
        process.kill()


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A throwaway CA with broker and client certificates (tests/tls_certs), per module."""
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def topic_name(request) -> str:
    return f"t-{request.node.name[:40].strip('_')}-{uuid.uuid4().hex[:8]}".replace(
        "[", "-"
    ).replace("]", "")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that fails (or fails as expected) while brokers run reports where they were:
    each running broker's last log lines and its threads' and tasks' stacks."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or call.excinfo is None:
        return
    if not (report.failed or hasattr(report, "wasxfail")):
        return
    running = [b for b in list(BrokerProcess.running) if b.alive()]
    if running:
        report.sections.append(("brokers at the failure", "".join(b.diagnose() for b in running)))
