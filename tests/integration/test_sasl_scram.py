"""SCRAM-SHA-256/512 on a SASL_PLAINTEXT listener: users created with `brokerd configs`
against ZooKeeper before the broker starts (as kafka-configs.sh --zookeeper), stored in
Kafka's format; librdkafka (confluent-kafka, kcat) and kafka-python authenticate, bad
credentials and unknown users are refused alike. Plus RFC 7677's SCRAM-SHA-256 example."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest
from confluent_kafka import KafkaException, Producer
from kafka import KafkaConsumer, KafkaProducer
from kazoo.client import KazooClient

from brokerd.security.sasl.scram import ScramClient, ScramCredential, salted_password
from tests.compat.test_security_matrix import consume
from tests.conftest import new_broker
from tests.harness import ROOT
from tests.sasl_support import sasl_broker

MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"


def brokerd_configs(zk_connect: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "brokerd", "configs", "--zookeeper", zk_connect, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def scram(zookeeper, tmp_path_factory):
    process = new_broker(zookeeper, tmp_path_factory, client_protocol="SASL_PLAINTEXT")
    zk_connect = process.props["zookeeper.connect"]
    for user, password in (("alice", "alice-secret"), ("bob", "bob-secret")):
        done = brokerd_configs(
            zk_connect,
            "--alter",
            "--add-config",
            f"SCRAM-SHA-256=[iterations=8192,password={password}],"
            f"SCRAM-SHA-512=[password={password}]",
            "--entity-type",
            "users",
            "--entity-name",
            user,
        )
        assert done.returncode == 0, done.stderr
    process.kill()  # never started; only its ZooKeeper chroot was used
    started = sasl_broker(
        new_broker,
        zookeeper,
        tmp_path_factory,
        props={
            "zookeeper.connect": zk_connect,
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": MECHANISMS,
        },
        num_partitions="1",
    )
    started.zk_connect = zk_connect
    yield started
    started.kill()


def librdkafka(broker, mechanism, user="alice", password="alice-secret") -> dict:
    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def test_credentials_are_stored_in_kafkas_format_without_the_password(scram, zookeeper):
    zk = KazooClient(hosts=scram.zk_connect)
    zk.start(timeout=15)
    try:
        data, _ = zk.get("/config/users/alice")
        changes = zk.get_children("/config/changes")
    finally:
        zk.stop()
    node = json.loads(data)
    assert node["version"] == 1
    assert set(node["config"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert b"alice-secret" not in data
    sha256 = ScramCredential.from_text(node["config"]["SCRAM-SHA-256"])
    assert sha256.iterations == 8192
    assert ScramCredential.from_text(node["config"]["SCRAM-SHA-512"]).iterations == 4096
    assert len(sha256.stored_key) == 32
    assert any(c.startswith("config_change_") for c in changes)
    described = brokerd_configs(
        scram.zk_connect, "--describe", "--entity-type", "users", "--entity-name", "alice"
    )
    assert "SCRAM-SHA-256=iterations=8192" in described.stdout


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_produces_and_consumes_with_scram(scram, mechanism):
    config = librdkafka(scram, mechanism)
    topic = f"scram-{uuid.uuid4().hex[:6]}"
    producer = Producer({**config, "acks": "all"})
    values = [f"v{i}".encode() for i in range(100)]
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    assert consume(config, topic, len(values)) == values


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "x")])
def test_bad_scram_credentials_are_refused_alike(scram, user, password):
    errors = []
    config = librdkafka(scram, "SCRAM-SHA-256", user, password)
    producer = Producer({**config, "error_cb": errors.append})
    with pytest.raises(KafkaException):
        producer.list_topics(timeout=5)
    producer.poll(1)
    message = (
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-256"
    )
    assert any(message in error.str() for error in errors), [e.str() for e in errors]


def test_kafka_python_with_scram_sha_512(scram):
    settings = dict(
        bootstrap_servers=scram.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="bob",
        sasl_plain_password="bob-secret",
    )
    producer = KafkaProducer(**settings)
    producer.send("scram-kafka-python", b"hello").get(30)
    producer.close()
    consumer = KafkaConsumer(
        "scram-kafka-python", auto_offset_reset="earliest", consumer_timeout_ms=10000, **settings
    )
    assert next(iter(consumer)).value == b"hello"
    consumer.close()


def test_kcat_with_scram_sha_256(scram):
    settings = [
        "-X", "security.protocol=SASL_PLAINTEXT",
        "-X", "sasl.mechanisms=SCRAM-SHA-256",
        "-X", "sasl.username=bob",
        "-X", "sasl.password=bob-secret",
    ]  # fmt: skip
    topic = f"scram-kcat-{uuid.uuid4().hex[:6]}"
    lines = "".join(f"line-{i}\n" for i in range(20))
    subprocess.run(
        ["kcat", "-b", scram.bootstrap, *settings, "-P", "-t", topic],
        input=lines.encode(),
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        ["kcat", "-b", scram.bootstrap, *settings, "-C", "-t", topic, "-o", "beginning", "-e"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.decode() == lines


def test_rfc7677_example():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil")
    client._nonce = "rOprNGfwEbeRWgbNEkqO"
    client._first_bare = "n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert client.start() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert client.evaluate(server_first) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert client.evaluate(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None
    assert len(salted_password("SCRAM-SHA-256", "pencil", b"salt", 4096)) == 32


def test_admin_alters_and_describes_scram_credentials(scram):
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(librdkafka(scram, "PLAIN", "admin", "admin-secret"))
    sha256 = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    done = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("carol", sha256, b"carol-secret")]
    )
    done["carol"].result(30)
    described = admin.describe_user_scram_credentials(["carol"])["carol"].result(30)
    infos = [(i.mechanism, i.iterations) for i in described.scram_credential_infos]
    assert infos == [(ScramMechanism.SCRAM_SHA_256, 8192)]
    # carol authenticates with the credential the admin call stored.
    producer = Producer(librdkafka(scram, "SCRAM-SHA-256", "carol", "carol-secret"))
    assert producer.list_topics(timeout=10).brokers
    everyone = admin.describe_user_scram_credentials().result(30)
    assert {"alice", "bob", "carol"} <= set(everyone)

    with pytest.raises(KafkaException, match="does not exist"):
        admin.describe_user_scram_credentials(["nobody"])["nobody"].result(30)
    too_few = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 100)
    with pytest.raises(KafkaException, match="Too few iterations"):
        admin.alter_user_scram_credentials([UserScramCredentialUpsertion("dave", too_few, b"x")])[
            "dave"
        ].result(30)

    admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)]
    )["carol"].result(30)
    with pytest.raises(KafkaException, match="does not exist"):
        admin.describe_user_scram_credentials(["carol"])["carol"].result(30)
    refused = Producer(librdkafka(scram, "SCRAM-SHA-256", "carol", "carol-secret"))
    with pytest.raises(KafkaException):
        refused.list_topics(timeout=5)
