"""SSL listeners: Kafka's ssl.* configs, server and mutual TLS, principals, plaintext on an
SSL port, large fetches through TLS, stores reloaded from disk. Real broker processes and a
throwaway CA (tests/tls_certs.py); clients: kafka-python, brokerd.client, raw TLS sockets."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import ssl
import threading
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer

from brokerd.client.cluster import Cluster
from brokerd.client.connection import ClientSecurity
from brokerd.config import BrokerConfig, ConfigError
from brokerd.security.principal import PrincipalMapper, PrincipalMappingError
from brokerd.security.tls import TlsConfigError, openssl_cipher_name, server_context
from tests.conftest import new_broker
from tests.integration.wire import WireClient, request
from tests.tls_certs import ssl_props

API_VERSIONS = request(18, 3, client_software_name="t", client_software_version="1")


@pytest.fixture(scope="module")
def tls_broker(zookeeper, tmp_path_factory, pki):
    """Server-side TLS only (ssl.client.auth=none, Kafka's default)."""
    process = new_broker(
        zookeeper, tmp_path_factory, client_protocol="SSL", num_partitions="1", **ssl_props(pki)
    ).start()
    yield process
    process.kill()


@pytest.fixture(scope="module")
def mtls_broker(zookeeper, tmp_path_factory, pki):
    """Mutual TLS required on the SSL listener through its listener prefix (the global
    ssl.client.auth stays none), with a key store file of its own the tests may replace."""
    base = tmp_path_factory.mktemp("mtls-keystore")
    keystore = base / "keystore.pem"
    shutil.copy(pki.server.keystore, keystore)
    props = ssl_props(pki)
    props["listener.name.ssl.ssl.keystore.location"] = str(keystore)
    props["listener.name.ssl.ssl.client.auth"] = "required"
    process = new_broker(
        zookeeper, tmp_path_factory, client_protocol="SSL", num_partitions="1", **props
    ).start()
    process.keystore = keystore
    yield process
    process.kill()


def client_context(pki, identity=None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if identity is not None:
        context.load_cert_chain(str(identity.cert), str(identity.key))
    return context


class TlsWireClient(WireClient):
    def __init__(self, bootstrap: str, context: ssl.SSLContext, timeout: float = 10):
        super().__init__(bootstrap, timeout)
        self.sock = context.wrap_socket(self.sock, server_hostname="127.0.0.1")


def answers_api_versions(bootstrap: str, context: ssl.SSLContext) -> bool:
    """True if a TLS connection with `context` gets an ApiVersions answer; False if the
    broker refuses it (handshake alert, or the connection closed unanswered)."""
    try:
        with TlsWireClient(bootstrap, context) as client:
            return client.call(API_VERSIONS).error_code == 0
    except (ssl.SSLError, ConnectionError, OSError):
        return False


# Clients ---------------------------------------------------------------------------------
def large_records_producer(tls_broker, pki, linger_ms: int) -> KafkaProducer:
    """kafka-python over SSL, with room for batches and requests of records of ~300 KB."""
    return KafkaProducer(
        bootstrap_servers=tls_broker.bootstrap,
        security_protocol="SSL",
        ssl_cafile=str(pki.ca),
        batch_size=1_000_000,
        linger_ms=linger_ms,
        max_request_size=2_000_000,
    )


def test_kafka_python_produces_and_consumes_large_batches_over_ssl(tls_broker, pki):
    """Fetch responses larger than the TLS chunk (256 KiB) come through whole: records of
    100 KiB, read back in 1 MiB fetches."""
    values = [bytes([i]) * 100_000 for i in range(40)]
    producer = large_records_producer(tls_broker, pki, linger_ms=50)
    for value in values:
        producer.send("tls-large", value)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        "tls-large",
        bootstrap_servers=tls_broker.bootstrap,
        security_protocol="SSL",
        ssl_cafile=str(pki.ca),
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
        max_partition_fetch_bytes=1_048_576,
    )
    got = [message.value for message in consumer]
    consumer.close()
    assert got == values


def test_concurrent_tls_producers_each_store_their_own_bytes(tls_broker, pki):
    """Every TLS connection of a listener is decrypted into one shared buffer of the event
    loop (listener._TlsReadProtocol): four producers sending random records larger than it
    (300 KB > 256 KiB) at once each get exactly their own bytes stored."""
    payloads = {f"tls-concurrent-{n}": [os.urandom(300_000) for _ in range(8)] for n in range(4)}
    failures: list[BaseException] = []

    def produce(topic: str, values: list[bytes]) -> None:
        try:
            producer = large_records_producer(tls_broker, pki, linger_ms=20)
            for value in values:
                producer.send(topic, value)
            producer.flush(timeout=60)
            producer.close()
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=produce, args=item) for item in payloads.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures
    assert not any(thread.is_alive() for thread in threads)
    for topic, values in payloads.items():
        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=tls_broker.bootstrap,
            security_protocol="SSL",
            ssl_cafile=str(pki.ca),
            auto_offset_reset="earliest",
            consumer_timeout_ms=30_000,  # with nothing more to read: ends the loop
            max_partition_fetch_bytes=1_048_576,
        )
        got = []
        for message in consumer:
            got.append(message.value)
            if len(got) == len(values):
                break
        consumer.close()
        assert got == values, topic


def test_brokerd_client_speaks_tls(tls_broker, pki):
    security = ClientSecurity("SSL", ssl_cafile=str(pki.ca))

    async def metadata():
        async with Cluster(tls_broker.bootstrap, security=security) as cluster:
            await cluster.refresh_metadata()
            return sorted(cluster.metadata.brokers)

    assert asyncio.run(metadata()) == [1]


def test_plaintext_bytes_on_an_ssl_port_close_that_connection_only(tls_broker, pki):
    with TlsWireClient(tls_broker.bootstrap, client_context(pki)) as secure:
        assert secure.call(API_VERSIONS).error_code == 0
        with WireClient(tls_broker.bootstrap) as plain:
            plain.send(API_VERSIONS)
            assert plain.is_closed_by_peer(wait=10)
        assert secure.call(API_VERSIONS).error_code == 0
    assert "TLS handshake with 127.0.0.1" in tls_broker.output


def test_mutual_tls_required_refuses_a_client_without_a_trusted_certificate(mtls_broker, pki):
    assert not answers_api_versions(mtls_broker.bootstrap, client_context(pki))
    assert not answers_api_versions(mtls_broker.bootstrap, client_context(pki, pki.stranger))
    assert answers_api_versions(mtls_broker.bootstrap, client_context(pki, pki.client))
    # kafka-python with a client certificate (ssl_certfile/ssl_keyfile) produces.
    producer = KafkaProducer(
        bootstrap_servers=mtls_broker.bootstrap,
        security_protocol="SSL",
        ssl_cafile=str(pki.ca),
        ssl_certfile=str(pki.client.cert),
        ssl_keyfile=str(pki.client.key),
    )
    producer.send("tls-mutual", b"v").get(timeout=20)
    producer.close()


def test_renewed_certificates_are_served_without_a_restart(mtls_broker, pki, tmp_path):
    """Replacing the key store file: new connections get the new certificate."""
    from tests.tls_certs import _issue

    ca = (pki.ca.with_suffix(".key"), pki.ca)
    renewed = _issue(tmp_path, "renewed", "/O=brokerd tests/CN=renewed", ca, san="IP:127.0.0.1")
    context = client_context(pki, pki.client)

    def served_common_name() -> str:
        with TlsWireClient(mtls_broker.bootstrap, context) as client:
            subject = dict(rdn[0] for rdn in client.sock.getpeercert()["subject"])
            return subject["commonName"]

    assert served_common_name() == "localhost"
    mtls_broker.keystore.write_bytes(renewed.keystore.read_bytes())
    deadline = time.monotonic() + 15
    while served_common_name() != "renewed":
        assert time.monotonic() < deadline, "the renewed certificate was never served"
        time.sleep(0.3)
    assert "reloaded its key and trust stores" in mtls_broker.output


def test_a_key_store_altered_as_a_dynamic_broker_config_is_served(tls_broker, pki, tmp_path):
    """Kafka's way to rotate a listener's certificate: kafka-configs --alter --entity-type
    brokers --entity-name <id> --add-config listener.name.<l>.ssl.keystore.location=<new
    file> (IncrementalAlterConfigs, here from confluent-kafka over the SSL listener itself):
    new connections get the new certificate, without a restart."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    from tests.tls_certs import _issue

    ca = (pki.ca.with_suffix(".key"), pki.ca)
    rotated = _issue(tmp_path, "rotated", "/O=brokerd tests/CN=rotated", ca, san="IP:127.0.0.1")

    def served_common_name() -> str:
        with TlsWireClient(tls_broker.bootstrap, client_context(pki)) as client:
            subject = dict(rdn[0] for rdn in client.sock.getpeercert()["subject"])
            return subject["commonName"]

    assert served_common_name() == "localhost"
    admin = AdminClient(
        {
            "bootstrap.servers": tls_broker.bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca),
        }
    )
    resource = ConfigResource(
        ConfigResource.Type.BROKER,
        str(tls_broker.broker_id),
        incremental_configs=[
            ConfigEntry(
                "listener.name.ssl.ssl.keystore.location",
                str(rotated.keystore),
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    try:
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(30)
        deadline = time.monotonic() + 15
        while served_common_name() != "rotated":
            assert time.monotonic() < deadline, "the altered key store was never served"
            time.sleep(0.3)
    finally:  # the module's other tests expect the first certificate again
        resource = ConfigResource(
            ConfigResource.Type.BROKER,
            str(tls_broker.broker_id),
            incremental_configs=[
                ConfigEntry(
                    "listener.name.ssl.ssl.keystore.location",
                    None,
                    incremental_operation=AlterConfigOpType.DELETE,
                )
            ],
        )
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(30)
    deadline = time.monotonic() + 15
    while served_common_name() != "localhost":
        assert time.monotonic() < deadline, "the static key store did not come back"
        time.sleep(0.3)


# Configs and principals (real handshakes in this process) ----------------------------------
BASE = {"broker.id": "1", "zookeeper.connect": "127.0.0.1:1", "log.dirs": "/tmp/unused"}


def _config(**props) -> BrokerConfig:
    return BrokerConfig({**BASE, **props})


def handshake_principal(context: ssl.SSLContext, client: ssl.SSLContext, rules: str) -> str:
    """Accept one TLS connection with `context`; the principal its peer maps to."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    result: dict = {}

    def accept():
        conn, _ = listener.accept()
        with context.wrap_socket(conn, server_side=True) as tls:
            try:
                result["principal"] = PrincipalMapper(rules).principal(tls.getpeercert())
            except PrincipalMappingError as exc:
                result["error"] = exc
            tls.sendall(b"x")

    thread = threading.Thread(target=accept)
    thread.start()
    with client.wrap_socket(
        socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1"
    ) as tls:
        tls.recv(1)
    thread.join(10)
    listener.close()
    if "error" in result:
        raise result["error"]
    return result["principal"]


def test_principal_is_the_certificate_dn_mapped_by_the_rules(pki):
    context = server_context(_config(**ssl_props(pki, **{"ssl.client.auth": "requested"})), "SSL")
    alice = client_context(pki, pki.client)
    assert handshake_principal(context, alice, "DEFAULT") == "User:CN=alice,OU=eng,O=brokerd tests"
    rules = r"RULE:^CN=(.*?),OU=ops,.*$/$1-ops/U, RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/L, DEFAULT"
    assert handshake_principal(context, alice, rules) == "User:alice@eng"
    bob = client_context(pki, pki.other_client)
    assert handshake_principal(context, bob, rules) == "User:BOB-OPS"
    # requested, and the client has no certificate: anonymous.
    assert handshake_principal(context, client_context(pki), rules) == "User:ANONYMOUS"
    with pytest.raises(PrincipalMappingError):
        handshake_principal(context, alice, "RULE:^CN=nobody,.*$/x/")


def test_inline_pem_and_an_encrypted_key_load(pki):
    key_text = pki.encrypted_key.read_text()
    chain = pki.server.cert.read_text() + pki.ca.read_text()
    props = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": chain,
        "ssl.keystore.key": key_text,
        "ssl.key.password": pki.key_password,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": pki.ca.read_text(),
        "ssl.client.auth": "required",
    }
    context = server_context(_config(**props), "SSL")
    assert handshake_principal(context, client_context(pki, pki.client), "DEFAULT").startswith(
        "User:CN=alice"
    )
    with pytest.raises(TlsConfigError, match="key store"):
        server_context(_config(**{**props, "ssl.key.password": "wrong"}), "SSL")


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"ssl.keystore.type": "JKS"}, "JKS is not supported; use PEM"),
        ({"ssl.keystore.password": "x"}, "cannot be specified with PEM"),
        ({"ssl.client.auth": "maybe"}, "ssl.client.auth"),
        ({"ssl.enabled.protocols": "TLSv1.2,SSLv3"}, "SSLv3 not supported"),
        ({"ssl.cipher.suites": "TLS_NO_SUCH_WITH_CIPHER"}, "ssl.cipher.suites"),
        ({"ssl.keystore.location": "/nonexistent.pem"}, "cannot load the key store"),
    ],
)
def test_bad_tls_configs_are_refused_with_kafkas_names(pki, props, message):
    with pytest.raises(ConfigError, match=message):
        server_context(_config(**{**ssl_props(pki), **props}), "SSL")


def test_a_listener_prefix_overrides_the_global_config(pki):
    config = _config(**ssl_props(pki, **{"listener.name.secure.ssl.enabled.protocols": "TLSv1.3"}))
    assert server_context(config, "SECURE").minimum_version == ssl.TLSVersion.TLSv1_3
    assert server_context(config, "SSL").minimum_version == ssl.TLSVersion.TLSv1_2


def handshake_completes(context: ssl.SSLContext, client: ssl.SSLContext) -> bool:
    """One TLS handshake between `client` and a server with `context`; whether it worked
    (the server side's failure is caught on its thread, the client's here)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def accept():
        conn, _ = listener.accept()
        try:
            with context.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(b"x")
        except (ssl.SSLError, OSError):
            conn.close()

    thread = threading.Thread(target=accept)
    thread.start()
    try:
        raw = socket.create_connection(("127.0.0.1", port))
        with client.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return tls.recv(1) == b"x"
    except (ssl.SSLError, OSError):
        return False
    finally:
        thread.join(10)
        listener.close()


def test_enabled_protocols_refuse_an_older_client_in_a_real_handshake(pki):
    """ssl.enabled.protocols=TLSv1.3: a client that speaks at most TLS 1.2 fails the
    handshake; a TLS 1.3 client is served (and with the default TLSv1.2,TLSv1.3 both are)."""
    only13 = server_context(
        _config(**ssl_props(pki, **{"ssl.enabled.protocols": "TLSv1.3"})), "SSL"
    )
    old_client = client_context(pki)
    old_client.maximum_version = ssl.TLSVersion.TLSv1_2
    assert not handshake_completes(only13, old_client)
    assert handshake_principal(only13, client_context(pki), "DEFAULT") == "User:ANONYMOUS"
    both = server_context(
        _config(**ssl_props(pki, **{"ssl.enabled.protocols": "TLSv1.2,TLSv1.3"})), "SSL"
    )
    assert handshake_principal(both, old_client, "DEFAULT") == "User:ANONYMOUS"


def test_java_cipher_suite_names_are_understood(pki):
    assert openssl_cipher_name("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256") == (
        "ECDHE-RSA-AES128-GCM-SHA256"
    )
    assert openssl_cipher_name("TLS_RSA_WITH_AES_256_GCM_SHA384") == "AES256-GCM-SHA384"
    props = ssl_props(pki, **{"ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"})
    context = server_context(_config(**props), "SSL")
    tls12 = [c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"]
    assert tls12 == ["ECDHE-RSA-AES256-GCM-SHA384"]


def test_a_broker_with_a_bad_key_store_does_not_start(zookeeper, tmp_path_factory, pki):
    process = new_broker(
        zookeeper,
        tmp_path_factory,
        client_protocol="SSL",
        **ssl_props(pki, **{"ssl.keystore.type": "JKS"}),
    )
    with pytest.raises(RuntimeError, match="PEM"):
        process.start(timeout=30)
    process.kill()
