"""`make run SECURE=1` (platform/launch.py --secure), end to end: the whole platform on free
loopback ports in a temporary var/ directory; a real client connects with the written
client properties over SASL_SSL (SCRAM-SHA-512), a client without credentials does not,
brokers replicate between themselves over SASL_SSL, and the dashboard reaches the cluster."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness import ROOT, free_port, java_available, wait_for_port

pytestmark = pytest.mark.skipif(not java_available(), reason="needs ZooKeeper and Java")


def client_settings(path) -> dict[str, str]:
    """librdkafka's names for the Java-style properties the launcher wrote."""
    props = dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    user, password = re.search(
        r'username="([^"]+)" password="([^"]+)"', props["sasl.jaas.config"]
    ).groups()
    return {
        "security.protocol": props["security.protocol"],
        "sasl.mechanisms": props["sasl.mechanism"],
        "sasl.username": user,
        "sasl.password": password,
        "ssl.ca.location": props["ssl.truststore.location"],
    }


@pytest.fixture
def secured_platform(tmp_path):
    ports = {name: free_port() for name in ("zk", "redis", "web")}
    # The launcher numbers brokers from its first port: take two consecutive free ones.
    first = free_port()
    while not all(_free(p) for p in (first, first + 1)):
        first = free_port()
    env = {**os.environ, "DASHBOARD_VAR_DIR": str(tmp_path / "var")}
    output = open(tmp_path / "launch.out", "w")  # noqa: SIM115 - lives with the process
    process = subprocess.Popen(
        [
            sys.executable, "platform/launch.py", "--secure", "--brokers", "2",
            "--zookeeper-port", str(ports["zk"]), "--redis-port", str(ports["redis"]),
            "--broker-port", str(first), "--web-port", str(ports["web"]),
        ],
        cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while "platform running" not in (tmp_path / "launch.out").read_text():
            assert process.poll() is None, (tmp_path / "launch.out").read_text()
            assert time.monotonic() < deadline, (tmp_path / "launch.out").read_text()
            time.sleep(0.5)
        wait_for_port(ports["web"], 30)
        yield tmp_path / "var", [first, first + 1], (tmp_path / "launch.out")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
        output.close()


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_secure_run_serves_sasl_ssl_clients_and_the_dashboard(secured_platform):
    var, ports, launch_out = secured_platform
    properties = var / "secrets" / "kafka-client.properties"
    assert stat.S_IMODE(properties.stat().st_mode) == 0o600
    for broker in (1, 2):
        config = var / f"broker-{broker}" / "server.properties"
        assert stat.S_IMODE(config.stat().st_mode) == 0o600  # it holds the broker's password
    printed = launch_out.read_text()
    settings = client_settings(properties)
    assert f"password {settings['sasl.password']} (shown once)" in printed

    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    admin = AdminClient({"bootstrap.servers": bootstrap, **settings})
    topic = f"secured-{uuid.uuid4().hex[:8]}"
    # Replication factor 2: the follower fetches from the leader over SASL_SSL.
    admin.create_topics([NewTopic(topic, 2, 2)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **settings})
    for i in range(20):
        producer.produce(topic, f"v{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            **settings,
        }
    )
    consumer.subscribe([topic])
    seen = set()
    deadline = time.monotonic() + 60
    while len(seen) < 20 and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is not None and not message.error():
            seen.add(message.value())
    consumer.close()
    assert seen == {f"v{i}".encode() for i in range(20)}

    # No credentials: no metadata (librdkafka fails the call; nothing is served).
    stranger = AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "admin",
            "sasl.password": "wrong",
            "ssl.ca.location": settings["ssl.ca.location"],
        }
    )
    with pytest.raises(KafkaException):
        stranger.list_topics(timeout=5)
    del stranger  # librdkafka retries (and logs) until the client is gone

    # The dashboard was registered with those settings and reaches the cluster.
    shell = subprocess.run(
        [
            sys.executable, "manage.py", "shell", "-c",
            "from dashboard.core.models import Cluster;"
            "from dashboard.core.kafka import with_cluster;"
            "c = Cluster.objects.get(name='local');"
            "m = with_cluster(c, lambda ops: ops.refresh([]));"
            "print(c.security_protocol, sorted(m.brokers))",
        ],
        cwd=ROOT, env={**os.environ, "DASHBOARD_VAR_DIR": str(var)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert shell.stdout.strip().splitlines()[-1] == "SASL_SSL [1, 2]", shell.stderr
