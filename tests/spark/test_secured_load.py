"""Spark loads from the platform against a secured cluster (SASL_SSL with SCRAM-SHA-512 and a
CA of its own): the Celery task hands the job the cluster's client properties in a private
file for its lifetime only, the export reads every record, an import writes through the same
settings, and no password appears in the load's result or log."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import new_broker
from tests.harness import ROOT
from tests.tls_certs import make_pki, ssl_props
from tests.web.conftest import channel_layer_on_redis, redis_server  # noqa: F401 - fixtures

from .helpers import parquet_records

PASSWORD = "spark-secret-pw"


@pytest.fixture(scope="module")
def secured_broker(zookeeper, tmp_path_factory):
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    process = new_broker(
        zookeeper, tmp_path_factory, client_protocol="SASL_SSL", num_partitions="2"
    )
    created = subprocess.run(
        [sys.executable, "-m", "brokerd", "configs",
         "--zookeeper", process.props["zookeeper.connect"], "--alter",
         "--add-config", f"SCRAM-SHA-512=[password={PASSWORD}]",
         "--entity-type", "users", "--entity-name", "loader"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    process.props.update(ssl_props(pki))
    process.props["listener.name.sasl_ssl.sasl.enabled.mechanisms"] = "SCRAM-SHA-512"
    process.pki = pki
    yield process.start()
    process.kill()


def settings_of(broker) -> dict[str, str]:
    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "loader",
        "sasl.password": PASSWORD,
        "ssl.ca.location": str(broker.pki.ca),
    }


@pytest.fixture
def secured_cluster(transactional_db, secured_broker):
    from dashboard.core.models import Cluster

    cluster = Cluster(
        name="secured",
        bootstrap_servers=secured_broker.bootstrap,
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="loader",
        ssl_ca_pem=secured_broker.pki.ca.read_text(),
    )
    cluster.set_sasl_password(PASSWORD)
    cluster.full_clean()
    cluster.save()
    return cluster


@pytest.mark.timeout(600)  # two spark-submit runs
def test_export_and_import_loads_reach_a_sasl_ssl_cluster(
    secured_broker,
    secured_cluster,
    settings,
    tmp_path,
    channel_layer_on_redis,  # noqa: F811
):
    from dashboard.core.models import SparkLoad
    from tasks.spark import run_spark_load

    settings.VAR_DIR = tmp_path / "var"
    settings.SPARK_MASTER = "local[2]"
    client_settings = settings_of(secured_broker)
    admin = AdminClient(client_settings)
    topic, copy = f"sec-{uuid.uuid4().hex[:6]}", f"sec-copy-{uuid.uuid4().hex[:6]}"
    for name in (topic, copy):
        admin.create_topics([NewTopic(name, 2, 1)])[name].result(30)
    producer = Producer(client_settings)
    for i in range(500):
        producer.produce(topic, f"v{i}".encode(), f"k{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0

    export = SparkLoad.objects.create(
        cluster=secured_cluster, topic=topic, output=str(tmp_path / "out")
    )
    assert run_spark_load(export.id)["status"] == "succeeded", SparkLoad.objects.get(
        pk=export.id
    ).result
    export.refresh_from_db()
    assert export.result["rows"] == 500
    rows = parquet_records(tmp_path / "out")
    assert sorted(value for _, _, _, value in rows) == sorted(f"v{i}".encode() for i in range(500))
    assert "--command-config" in export.result["command"]
    assert PASSWORD not in repr(export.result) and PASSWORD not in open(export.log_path).read()
    assert not any((tmp_path / "var" / "spark-secrets").iterdir())  # removed with the job

    # Back in through the same settings: the Parquet files written into another topic.
    load_in = SparkLoad.objects.create(
        cluster=secured_cluster,
        topic=copy,
        output=str(tmp_path / "out"),
        direction=SparkLoad.Direction.IMPORT,
        range={"format": "parquet", "key_column": "key", "value_column": "value"},
    )
    assert run_spark_load(load_in.id)["status"] == "succeeded", SparkLoad.objects.get(
        pk=load_in.id
    ).result
    consumer = Consumer({**client_settings, "group.id": copy, "auto.offset.reset": "earliest"})
    consumer.subscribe([copy])
    values: set[bytes] = set()
    deadline = time.monotonic() + 120  # a group join first, on a loaded machine
    while len(values) < 500 and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is not None and not message.error():
            values.add(message.value())
    consumer.close()
    assert values == {f"v{i}".encode() for i in range(500)}
