"""Every client nobody here wrote over every security protocol, and over every SASL mechanism:
Kafka's Java client (kafka-clients 3.9.2), confluent-kafka (librdkafka), kafka-python,
aiokafka and kcat each make a topic with an admin call (kcat: a metadata listing of the topic
it auto-creates), produce to it and consume it back in a consumer group, over

  - SSL with server TLS only (the listener's ssl.client.auth=none),
  - SSL with mutual TLS (another listener, ssl.client.auth=required),
  - SASL_PLAINTEXT and SASL_SSL, each with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512

One broker with all of those listeners (PLAIN users in the listeners' JAAS configs, the SCRAM
user made with `brokerd configs` on ZooKeeper before it starts), so a case costs only its
clients' round trips. The same broker refuses librdkafka with a wrong password or an unknown
user (Kafka's one message for both) and without a client certificate where one is required."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as CkNewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic as KpNewTopic

from tests.conftest import new_broker
from tests.harness import ROOT, free_port
from tests.sasl_support import INVALID, PLAIN_MODULE, plain_jaas
from tests.tls_certs import ssl_props

USER, PASSWORD = "alice", "alice-secret"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
CLIENTS = ("java", "confluent", "kafka-python", "aiokafka", "kcat")
COUNT = 10


@dataclass(frozen=True)
class Case:
    protocol: str  # SSL, SASL_PLAINTEXT or SASL_SSL
    mutual: bool = False  # SSL: present the client certificate (to the listener requiring it)
    mechanism: str | None = None

    @property
    def id(self) -> str:
        return (
            self.mechanism
            and f"{self.protocol}-{self.mechanism}"
            or ("SSL-mutual" if self.mutual else "SSL-server")
        )


def cases() -> list:
    runs = [Case("SSL"), Case("SSL", mutual=True)]
    runs += [
        Case(protocol, mechanism=mechanism)
        for protocol in ("SASL_PLAINTEXT", "SASL_SSL")
        for mechanism in MECHANISMS
    ]
    return [
        pytest.param(client, case, id=f"{client}-{case.id}") for client in CLIENTS for case in runs
    ]


@pytest.fixture(scope="module")
def broker(zookeeper, tmp_path_factory, pki):
    process = new_broker(zookeeper, tmp_path_factory, client_protocol="SSL")
    ports = {name: free_port() for name in ("MTLS", "SASL_PLAINTEXT", "SASL_SSL")}
    process.ports = {"SSL": process.port, **ports}
    process.props["listeners"] += "".join(f",{n}://127.0.0.1:{p}" for n, p in ports.items())
    process.props["listener.security.protocol.map"] += (
        ",MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
    )
    process.props.update(ssl_props(pki, **{"listener.name.mtls.ssl.client.auth": "required"}))
    for listener in ("sasl_plaintext", "sasl_ssl"):
        process.props[f"listener.name.{listener}.sasl.enabled.mechanisms"] = ",".join(MECHANISMS)
        process.props[f"listener.name.{listener}.plain.sasl.jaas.config"] = plain_jaas()
    process.props.update(
        {
            "num.partitions": "2",
            "offsets.topic.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
    )
    scram = ",".join(f"{m}=[iterations=4096,password={PASSWORD}]" for m in MECHANISMS[1:])
    done = subprocess.run(
        [
            sys.executable, "-m", "brokerd", "configs",
            "--zookeeper", process.props["zookeeper.connect"], "--alter",
            "--add-config", scram, "--entity-type", "users", "--entity-name", USER,
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    yield process.start()
    process.kill()


def bootstrap(broker, case: Case) -> str:
    listener = "MTLS" if case.mutual else case.protocol
    return f"127.0.0.1:{broker.ports[listener]}"


def values() -> list[str]:
    return [f"value-{i}" for i in range(COUNT)]


# One function per client: an admin call, produce COUNT values, consume them in a group. ---
def run_java(java, broker, pki, case: Case, topic: str, group: str) -> list[str]:
    settings = {"bootstrap.servers": bootstrap(broker, case), "security.protocol": case.protocol}
    if case.protocol != "SASL_PLAINTEXT":
        settings |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca)}
    if case.mutual:
        settings |= {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.client.keystore)}
    if case.mechanism:
        module = (
            PLAIN_MODULE
            if case.mechanism == "PLAIN"
            else ("org.apache.kafka.common.security.scram.ScramLoginModule")
        )
        settings |= {
            "sasl.mechanism": case.mechanism,
            "sasl.jaas.config": f'{module} required username="{USER}" password="{PASSWORD}";',
        }
    created = java.run(settings, "create-topic", topic)
    assert created.ok and created.words == ["partitions", "2"], created.line
    produced = java.run(settings, "produce", topic, str(COUNT))
    assert produced.ok, produced.line
    consumed = java.run(settings, "consume", topic, str(COUNT), group)
    assert consumed.ok, consumed.line
    return [f"value-{v[1:]}" for v in consumed.words[1].split(",")]  # the client sends v<i>


def librdkafka_settings(broker, pki, case: Case) -> dict[str, str]:
    settings = {"bootstrap.servers": bootstrap(broker, case), "security.protocol": case.protocol}
    if case.protocol != "SASL_PLAINTEXT":
        settings["ssl.ca.location"] = str(pki.ca)
    if case.mutual:
        settings["ssl.certificate.location"] = str(pki.client.cert)
        settings["ssl.key.location"] = str(pki.client.key)
    if case.mechanism:
        settings |= {
            "sasl.mechanisms": case.mechanism,
            "sasl.username": USER,
            "sasl.password": PASSWORD,
        }
    return settings


def run_confluent(java, broker, pki, case: Case, topic: str, group: str) -> list[str]:
    settings = librdkafka_settings(broker, pki, case)
    admin = AdminClient(settings)
    admin.create_topics([CkNewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer({**settings, "acks": "all"})
    for value in values():
        producer.produce(topic, value.encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**settings, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < COUNT and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                got.append(message.value().decode())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


def python_ssl_context(pki, case: Case) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if case.mutual:
        context.load_cert_chain(str(pki.client.cert), str(pki.client.key))
    return context


def python_settings(broker, pki, case: Case) -> dict:
    """kafka-python's and aiokafka's shared names."""
    settings: dict = {
        "bootstrap_servers": bootstrap(broker, case),
        "security_protocol": case.protocol,
    }
    if case.protocol != "SASL_PLAINTEXT":
        settings["ssl_context"] = python_ssl_context(pki, case)
    if case.mechanism:
        settings |= {
            "sasl_mechanism": case.mechanism,
            "sasl_plain_username": USER,
            "sasl_plain_password": PASSWORD,
        }
    return settings


def run_kafka_python(java, broker, pki, case: Case, topic: str, group: str) -> list[str]:
    settings = python_settings(broker, pki, case)
    admin = KafkaAdminClient(**settings)
    try:
        admin.create_topics([KpNewTopic(topic, 2, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(acks="all", **settings)
    for value in values():
        producer.send(topic, value.encode())
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        topic, group_id=group, auto_offset_reset="earliest", consumer_timeout_ms=60_000, **settings
    )
    got: list[str] = []
    try:
        for message in consumer:
            got.append(message.value.decode())
            if len(got) == COUNT:
                break
        consumer.commit()
    finally:
        consumer.close()
    return got


def run_aiokafka(java, broker, pki, case: Case, topic: str, group: str) -> list[str]:
    settings = python_settings(broker, pki, case)

    async def run() -> list[str]:
        admin = AIOKafkaAdminClient(**settings)
        await admin.start()
        try:
            await admin.create_topics([AioNewTopic(topic, 2, 1)])
        finally:
            await admin.close()
        producer = AIOKafkaProducer(acks="all", **settings)
        await producer.start()
        try:
            for value in values():
                await producer.send(topic, value.encode())
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", **settings)
        await consumer.start()
        got: list[str] = []
        try:
            async with asyncio.timeout(60):
                while len(got) < COUNT:
                    batches = await consumer.getmany(timeout_ms=500)
                    got += [r.value.decode() for records in batches.values() for r in records]
            await consumer.commit()
        finally:
            await consumer.stop()
        return got

    return asyncio.run(run())


def run_kcat(java, broker, pki, case: Case, topic: str, group: str) -> list[str]:
    settings = [
        arg
        for key, value in librdkafka_settings(broker, pki, case).items()
        if key != "bootstrap.servers"
        for arg in ("-X", f"{key}={value}")
    ]
    kcat = ["kcat", "-b", bootstrap(broker, case), *settings]
    lines = "".join(f"{value}\n" for value in values())
    subprocess.run([*kcat, "-P", "-t", topic], input=lines.encode(), check=True, timeout=60)
    listed = subprocess.run(
        [*kcat, "-L", "-t", topic], capture_output=True, text=True, check=True, timeout=60
    )
    assert f'topic "{topic}" with 2 partitions' in listed.stdout, listed.stdout
    consumed = subprocess.run(
        [*kcat, "-G", group, "-X", "auto.offset.reset=earliest", "-c", str(COUNT), "-f", "%s\n"]
        + [topic],
        capture_output=True,
        text=True,
        check=True,
        timeout=90,
    )
    return consumed.stdout.split()


RUNNERS = {
    "java": run_java,
    "confluent": run_confluent,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
    "kcat": run_kcat,
}


@pytest.mark.parametrize(("client", "case"), cases())
def test_client_over_protocol(broker, pki, request, client, case):
    java = request.getfixturevalue("java") if client == "java" else None
    topic, group = f"m-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    got = RUNNERS[client](java, broker, pki, case, topic, group)
    assert sorted(got) == sorted(values())


# Refusals ---------------------------------------------------------------------------------
def consume(config: dict, topic: str, count: int) -> list[bytes]:
    """confluent-kafka in a group of its own, from the earliest offset: up to `count`
    values within a minute."""
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


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", PASSWORD)])
def test_confluent_kafka_bad_credentials_are_refused_with_one_message(broker, pki, user, password):
    """PLAIN (SCRAM's refusals: tests/integration/test_sasl_scram.py)."""
    errors = []
    config = librdkafka_settings(broker, pki, Case("SASL_PLAINTEXT", mechanism="PLAIN"))
    config |= {"sasl.username": user, "sasl.password": password, "error_cb": errors.append}
    producer = Producer(config)
    with pytest.raises(KafkaException):
        producer.list_topics(timeout=5)
    producer.poll(1)  # serve the error callback
    assert any(INVALID in error.str() for error in errors), [e.str() for e in errors]


def test_confluent_kafka_without_a_certificate_is_refused(broker, pki):
    config = librdkafka_settings(broker, pki, Case("SSL", mutual=True))
    del config["ssl.certificate.location"], config["ssl.key.location"]
    producer = Producer({**config, "message.timeout.ms": 5000})
    with pytest.raises(KafkaException):
        producer.list_topics(timeout=5)
