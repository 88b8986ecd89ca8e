"""librdkafka clients over SASL with PLAIN: confluent-kafka (security.protocol
SASL_PLAINTEXT and SASL_SSL, sasl.mechanisms, sasl.username/sasl.password) and kcat produce
and consume; a wrong password and an unknown user are refused with Kafka's one message."""

from __future__ import annotations

import subprocess
import uuid

import pytest
from confluent_kafka import KafkaException, Producer

from tests.compat.test_tls_clients import consume
from tests.conftest import new_broker
from tests.sasl_support import INVALID, sasl_broker
from tests.tls_certs import make_pki, ssl_props


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def sasl_plaintext(zookeeper, tmp_path_factory):
    process = sasl_broker(new_broker, zookeeper, tmp_path_factory, num_partitions="1")
    yield process
    process.kill()


@pytest.fixture(scope="module")
def sasl_ssl(zookeeper, tmp_path_factory, pki):
    process = sasl_broker(
        new_broker, zookeeper, tmp_path_factory, "SASL_SSL", ssl_props(pki), num_partitions="1"
    )
    yield process
    process.kill()


def librdkafka_sasl(
    broker, protocol="SASL_PLAINTEXT", user="alice", password="alice-secret", pki=None
) -> dict:
    config = {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": protocol,
        "sasl.mechanisms": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
    }
    if pki is not None:
        config["ssl.ca.location"] = str(pki.ca)
    return config


def produce_and_consume(config: dict) -> None:
    topic = f"sasl-ck-{uuid.uuid4().hex[:6]}"
    producer = Producer({**config, "acks": "all"})
    values = [f"v{i}".encode() * 100 for i in range(200)]
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    assert consume(config, topic, len(values)) == values


def test_confluent_kafka_sasl_plaintext_produce_and_consume_in_a_group(sasl_plaintext):
    produce_and_consume(librdkafka_sasl(sasl_plaintext))


def test_confluent_kafka_sasl_ssl_produce_and_consume_in_a_group(sasl_ssl, pki):
    produce_and_consume(librdkafka_sasl(sasl_ssl, "SASL_SSL", pki=pki))


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "alice-secret")])
def test_confluent_kafka_bad_credentials_are_refused_with_one_message(
    sasl_plaintext, user, password
):
    errors = []
    config = librdkafka_sasl(sasl_plaintext, user=user, password=password)
    producer = Producer({**config, "error_cb": errors.append})
    with pytest.raises(KafkaException):
        producer.list_topics(timeout=5)
    producer.poll(1)  # serve the error callback
    assert any(INVALID in error.str() for error in errors), [e.str() for e in errors]


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_kcat_over_sasl(request, pki, protocol):
    broker = request.getfixturevalue("sasl_ssl" if protocol == "SASL_SSL" else "sasl_plaintext")
    topic = f"sasl-kcat-{uuid.uuid4().hex[:6]}"
    settings = [
        "-X", f"security.protocol={protocol}",
        "-X", "sasl.mechanisms=PLAIN",
        "-X", "sasl.username=alice",
        "-X", "sasl.password=alice-secret",
    ]  # fmt: skip
    if protocol == "SASL_SSL":
        settings += ["-X", f"ssl.ca.location={pki.ca}"]
    lines = "".join(f"line-{i}\n" for i in range(50))
    subprocess.run(
        ["kcat", "-b", broker.bootstrap, *settings, "-P", "-t", topic],
        input=lines.encode(),
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        ["kcat", "-b", broker.bootstrap, *settings, "-C", "-t", topic, "-o", "beginning", "-e"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.decode() == lines
