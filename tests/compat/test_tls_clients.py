"""librdkafka clients over SSL: confluent-kafka (server TLS and mutual TLS with
ssl.certificate.location / ssl.key.location) and kcat (-X security.protocol=SSL), against a
broker whose SSL listener requests client certificates and another that requires them."""

from __future__ import annotations

import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

from tests.conftest import new_broker
from tests.tls_certs import make_pki, ssl_props


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def ssl_broker(zookeeper, tmp_path_factory, pki):
    """ssl.client.auth=required on the SSL listener."""
    props = ssl_props(pki, **{"ssl.client.auth": "required"})
    process = new_broker(
        zookeeper, tmp_path_factory, client_protocol="SSL", num_partitions="1", **props
    ).start()
    yield process
    process.kill()


def librdkafka_ssl(pki, broker, mutual: bool = True) -> dict:
    config = {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki.ca),
    }
    if mutual:
        config["ssl.certificate.location"] = str(pki.client.cert)
        config["ssl.key.location"] = str(pki.client.key)
    return config


def consume(config: dict, topic: str, count: int) -> list[bytes]:
    consumer = Consumer(
        {**config, "group.id": f"g-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is not None and not message.error():
                got.append(message.value())
    finally:
        consumer.close()
    return got


def test_confluent_kafka_mutual_tls_produce_and_consume_in_a_group(ssl_broker, pki):
    config = librdkafka_ssl(pki, ssl_broker)
    topic = f"tls-ck-{uuid.uuid4().hex[:6]}"
    producer = Producer({**config, "acks": "all"})
    values = [f"v{i}".encode() * 500 for i in range(200)]
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    assert consume(config, topic, len(values)) == values


def test_confluent_kafka_without_a_certificate_is_refused(ssl_broker, pki):
    producer = Producer(
        {**librdkafka_ssl(pki, ssl_broker, mutual=False), "message.timeout.ms": 5000}
    )
    with pytest.raises(KafkaException):
        producer.list_topics(timeout=5)


def test_kcat_over_mutual_tls(ssl_broker, pki):
    topic = f"tls-kcat-{uuid.uuid4().hex[:6]}"
    tls = [
        "-X", "security.protocol=SSL",
        "-X", f"ssl.ca.location={pki.ca}",
        "-X", f"ssl.certificate.location={pki.client.cert}",
        "-X", f"ssl.key.location={pki.client.key}",
    ]  # fmt: skip
    lines = "".join(f"line-{i}\n" for i in range(50))
    subprocess.run(
        ["kcat", "-b", ssl_broker.bootstrap, *tls, "-P", "-t", topic],
        input=lines.encode(),
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        ["kcat", "-b", ssl_broker.bootstrap, *tls, "-C", "-t", topic, "-o", "beginning", "-e"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.decode() == lines
