"""A secured cluster registered with a Kafka client's .properties: the platform connects over
SASL_SSL (PLAIN) and mutual TLS, keeps the password and the private key encrypted at rest,
never shows them back, and answers 502 with a message when its stored credentials are wrong.
Real brokers with TLS and SASL listeners; the REST API through Django's test client."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from dashboard.core.client_properties import ClientPropertiesError, read_client_properties
from dashboard.core.models import Cluster
from tests.conftest import new_broker
from tests.sasl_support import PLAIN_MODULE, sasl_listener_props
from tests.tls_certs import ssl_props

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "alice-secret"


@pytest.fixture(scope="module")
def sasl_ssl_broker(zookeeper, tmp_path_factory, pki):
    process = new_broker(
        zookeeper, tmp_path_factory, client_protocol="SASL_SSL", num_partitions="1"
    )
    process.props.update(ssl_props(pki))
    process.props.update(sasl_listener_props("SASL_SSL"))
    yield process.start()
    process.kill()


@pytest.fixture(scope="module")
def mtls_broker(zookeeper, tmp_path_factory, pki):
    props = ssl_props(pki)
    props["ssl.client.auth"] = "required"
    process = new_broker(
        zookeeper, tmp_path_factory, client_protocol="SSL", num_partitions="1", **props
    )
    yield process.start()
    process.kill()


def register(name, broker, properties_text: str, tmp_path):
    properties = tmp_path / f"{name}.properties"
    properties.write_text(properties_text)
    call_command(
        "register_cluster",
        name,
        f"--bootstrap-servers={broker.bootstrap}",
        f"--command-config={properties}",
    )
    return Cluster.objects.get(name=name)


def sasl_ssl_properties(pki, password: str = PASSWORD) -> str:
    return (
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=PLAIN\n"
        f'sasl.jaas.config={PLAIN_MODULE} required username="alice" password="{password}";\n'
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={pki.ca}\n"
    )


def test_sasl_ssl_cluster_is_reached_with_its_client_properties(
    sasl_ssl_broker, pki, viewer_api, tmp_path
):
    cluster = register("secured", sasl_ssl_broker, sasl_ssl_properties(pki), tmp_path)
    assert (cluster.security_protocol, cluster.sasl_mechanism) == ("SASL_SSL", "PLAIN")

    brokers = viewer_api.get("/api/v3/clusters/secured/brokers")
    assert brokers.status_code == 200, brokers.content
    assert [b["broker_id"] for b in brokers.json()["data"]] == [1]

    # Never shown back: not in the API, not in the database's plain columns.
    listing = viewer_api.get("/api/v3/clusters").content.decode()
    assert PASSWORD not in listing and "sealed" not in listing
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM core_cluster")
        stored = repr(cursor.fetchall())
    assert PASSWORD not in stored and "alice" in stored
    assert cluster.client_security().sasl_password == PASSWORD  # unsealed when connecting


def test_wrong_stored_password_is_a_502_with_a_message(sasl_ssl_broker, pki, viewer_api, tmp_path):
    register("wrong", sasl_ssl_broker, sasl_ssl_properties(pki, "not-it"), tmp_path)
    answer = viewer_api.get("/api/v3/clusters/wrong/brokers")
    assert answer.status_code in (502, 503), answer.content
    assert answer.json()["message"]


def test_mutual_tls_with_an_encrypted_key_and_its_password(mtls_broker, pki, viewer_api, tmp_path):
    # librdkafka's names for the key, encrypted with a password (Kafka's ssl.key.password).
    properties = (
        "security.protocol=SSL\n"
        f"ssl.ca.location={pki.ca}\n"
        f"ssl.certificate.location={pki.server.cert}\n"
        f"ssl.key.location={pki.encrypted_key}\n"
        f"ssl.key.password={pki.key_password}\n"
    )
    cluster = register("mutual", mtls_broker, properties, tmp_path)
    assert cluster.ssl_key_sealed and "PRIVATE KEY" not in cluster.ssl_key_sealed
    brokers = viewer_api.get("/api/v3/clusters/mutual/brokers")
    assert brokers.status_code == 200, brokers.content

    # Without the client certificate the broker refuses the handshake: no 500.
    register("no-cert", mtls_broker, f"security.protocol=SSL\nssl.ca.location={pki.ca}\n", tmp_path)
    refused = viewer_api.get("/api/v3/clusters/no-cert/brokers")
    assert refused.status_code in (502, 503), refused.content


@pytest.mark.parametrize(
    "text, complaint",
    [
        ("security.protocol=SASL_SSL\nsasl.username=a\nsasl.password=b\n", "GSSAPI"),
        ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n", "needs a user"),
        ("security.protocol=SSL\nssl.truststore.type=JKS\nssl.truststore.location=/x\n", "PEM"),
        ("security.protocol=KERBEROS\n", "security.protocol"),
        ("security.protocol=SSL\nssl.ca.location=/nonexistent/ca.pem\n", "cannot read"),
    ],
)
def test_unusable_client_properties_are_refused_with_a_reason(text, complaint):
    with pytest.raises(ClientPropertiesError, match=complaint):
        read_client_properties(text)


def test_register_cluster_reports_bad_properties_and_stores_nothing(tmp_path):
    properties = tmp_path / "bad.properties"
    properties.write_text("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n")
    with pytest.raises(CommandError, match="not supported"):
        call_command(
            "register_cluster", "bad", "--bootstrap-servers=127.0.0.1:1",
            f"--command-config={properties}",
        )  # fmt: skip
    assert not Cluster.objects.filter(name="bad").exists()


def test_a_database_copy_alone_does_not_reveal_the_password(settings, tmp_path):
    cluster = Cluster(name="sealed", bootstrap_servers="127.0.0.1:1")
    cluster.set_sasl_password(PASSWORD)
    assert PASSWORD not in cluster.sasl_password_sealed
    settings.SECRET_KEY = "another-installation"
    from dashboard.core.cluster_secrets import ClusterSecretError

    with pytest.raises(ClusterSecretError, match="enter the secret again"):
        Cluster(
            name="x",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_username="alice",
            sasl_password_sealed=cluster.sasl_password_sealed,
        ).client_security()
