"""Start-up checks, graceful SIGTERM, restart with data, and ZooKeeper session loss."""

import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaProducer
from kazoo.client import KazooClient

from tests.client_reads import kafka_python_all
from tests.harness import ROOT, ZooKeeper


def test_invalid_config_is_refused_naming_the_key(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("broker.id=1\nzookeeper.connect=127.0.0.1:1\nnum.partitions=0\n")
    result = subprocess.run(
        [sys.executable, "-m", "brokerd", "serve", "--config", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "num.partitions" in result.stderr


def test_override_beats_the_file(tmp_path):
    config = tmp_path / "server.properties"
    config.write_text("broker.id=1\nzookeeper.connect=127.0.0.1:1\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "brokerd",
            "serve",
            "--config",
            str(config),
            "--override",
            "message.max.bytes=-5",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and "message.max.bytes" in result.stderr


def _consume_all(bootstrap, topic, count):
    """The values of a one-partition topic, which must hold `count` records (read to the
    high watermark: a fixed quiet spell can pass before the first one after a restart)."""
    values = [m.value for m in kafka_python_all(bootstrap, topic)]
    assert len(values) == count
    return values


def test_sigterm_is_clean_and_data_survives_restart(make_broker, zookeeper, topic_name):
    broker = make_broker().start()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(50):
        producer.send(topic_name, b"m%d" % i)
    producer.flush()
    producer.close()

    assert broker.terminate() == 0
    log_dir = Path(broker.props["log.dirs"])
    assert (log_dir / ".kafka_cleanshutdown").exists()
    assert (log_dir / "meta.properties").exists()
    chroot = broker.props["zookeeper.connect"].split("/", 1)[1]
    zk = KazooClient(f"{zookeeper.connect}/{chroot}")
    zk.start(10)
    try:
        assert zk.get_children("/brokers/ids") == []  # the session was closed, not abandoned
        assert zk.exists(f"/brokers/topics/{topic_name}")
    finally:
        zk.stop()

    broker.start()
    assert _consume_all(broker.bootstrap, topic_name, 50) == [b"m%d" % i for i in range(50)]


def test_broker_survives_zookeeper_loss_and_registers_again(make_broker, tmp_path, topic_name):
    private_zk = ZooKeeper(tmp_path / "zk").start()
    try:
        broker = make_broker(zookeeper_session_timeout_ms="2000")
        broker.props["zookeeper.connect"] = private_zk.connect
        broker.start()
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
        producer.send(topic_name, b"before").get(10)

        private_zk.stop()
        time.sleep(3)  # past the session timeout: the broker's session is gone
        producer.send(topic_name, b"during").get(10)  # still serving from its own state

        private_zk.start()  # same port and data dir
        zk = KazooClient(private_zk.connect)
        zk.start(60)  # a restarted ZooKeeper on a loaded machine can take a while
        try:
            deadline = time.monotonic() + 30
            while zk.get_children("/brokers/ids") != ["1"]:
                assert time.monotonic() < deadline, broker.output[-3000:]
                time.sleep(0.2)
        finally:
            zk.stop()
        producer.send(topic_name, b"after").get(10)
        producer.close()
        assert _consume_all(broker.bootstrap, topic_name, 3) == [b"before", b"during", b"after"]
    finally:
        private_zk.stop()
