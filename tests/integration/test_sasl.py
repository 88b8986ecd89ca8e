"""SASL_PLAINTEXT listeners with PLAIN, as Kafka's SaslServerAuthenticator speaks it: the
handshake (v0 raw tokens, v1 SaslAuthenticate), the pre-authentication gate, failures
answered alike after a delay, connections.max.reauth.ms. Real broker processes; clients:
kafka-python and raw wire requests."""

from __future__ import annotations

import struct
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError

from brokerd.config import BrokerConfig, ConfigError
from brokerd.security.sasl.jaas import JaasConfigError, parse_jaas_config
from brokerd.security.sasl.settings import SaslServerSettings
from tests.conftest import new_broker
from tests.integration.wire import WireClient, request
from tests.sasl_support import INVALID, plain_jaas, sasl_broker

API_VERSIONS = request(18, 3, client_software_name="t", client_software_version="1")
METADATA = request(
    3, 12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
)


@pytest.fixture(scope="module")
def sasl(zookeeper, tmp_path_factory):
    process = sasl_broker(new_broker, zookeeper, tmp_path_factory, num_partitions="1")
    yield process
    process.kill()


@pytest.fixture(scope="module")
def reauth(zookeeper, tmp_path_factory):
    process = sasl_broker(
        new_broker, zookeeper, tmp_path_factory, props={"connections.max.reauth.ms": "1500"}
    )
    yield process
    process.kill()


def handshake(client: WireClient, mechanism: str = "PLAIN", version: int = 1):
    return client.call(request(17, version, mechanism=mechanism))


def authenticate(client: WireClient, user: str, password: str, version: int = 2):
    token = f"\0{user}\0{password}".encode()
    return client.call(request(36, version, auth_bytes=token))


def test_api_versions_advertises_sasl_handshake_and_authenticate(sasl):
    with WireClient(sasl.bootstrap) as client:
        keys = {
            k.api_key: (k.min_version, k.max_version) for k in client.call(API_VERSIONS).api_keys
        }
    assert keys[17] == (0, 1)
    assert keys[36] == (0, 2)


def test_kafka_python_produces_and_consumes_with_plain(sasl):
    settings = dict(
        bootstrap_servers=sasl.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password="alice-secret",
    )
    producer = KafkaProducer(**settings)
    for i in range(20):
        producer.send("sasl-kafka-python", f"m{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        "sasl-kafka-python",
        auto_offset_reset="earliest",
        consumer_timeout_ms=10000,
        group_id="sasl-group",
        **settings,
    )
    values = []
    for message in consumer:
        values.append(message.value)
        if len(values) == 20:
            break
    consumer.close()
    assert values == [f"m{i}".encode() for i in range(20)]


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "alice-secret")])
def test_wrong_password_and_unknown_user_fail_alike_and_close(sasl, user, password):
    with WireClient(sasl.bootstrap) as client:
        assert handshake(client).error_code == 0
        response = authenticate(client, user, password)
        assert response.error_code == 58  # SASL_AUTHENTICATION_FAILED
        assert response.error_message == INVALID
        assert client.is_closed_by_peer()


def test_kafka_python_with_a_wrong_password_cannot_connect(sasl):
    refused_before = sasl.output.count(INVALID)
    with pytest.raises(KafkaError):
        KafkaProducer(
            bootstrap_servers=sasl.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password="not-hers",
            max_block_ms=3000,
        )
    assert sasl.output.count(INVALID) > refused_before  # refused, not unreachable


def test_unsupported_mechanism_gets_the_enabled_list_and_closes(sasl):
    with WireClient(sasl.bootstrap) as client:
        response = handshake(client, "SCRAM-SHA-512")
        assert response.error_code == 33  # UNSUPPORTED_SASL_MECHANISM
        assert list(response.mechanisms) == ["PLAIN"]
        assert client.is_closed_by_peer()


def test_a_request_before_authentication_closes_the_connection_unanswered(sasl):
    with WireClient(sasl.bootstrap) as client:
        assert client.call(API_VERSIONS).error_code == 0
        client.send(METADATA)
        assert client.is_closed_by_peer()
    with WireClient(sasl.bootstrap) as client:  # between handshake and authenticate too
        assert handshake(client).error_code == 0
        client.send(METADATA)
        assert client.is_closed_by_peer()


def test_handshake_v0_exchanges_raw_tokens(sasl):
    with WireClient(sasl.bootstrap) as client:
        assert handshake(client, version=0).error_code == 0
        token = b"\0alice\0alice-secret"
        client.send_raw(struct.pack(">i", len(token)) + token)
        assert client.read_frame() == b""  # PLAIN's empty server token, length-framed
        assert client.call(METADATA).brokers
    with WireClient(sasl.bootstrap) as client:  # a wrong password: closed, nothing said
        assert handshake(client, version=0).error_code == 0
        token = b"\0alice\0wrong"
        client.send_raw(struct.pack(">i", len(token)) + token)
        assert client.is_closed_by_peer()


def test_authenticated_connection_serves_requests_and_refuses_a_second_authenticate(sasl):
    with WireClient(sasl.bootstrap) as client:
        assert client.call(API_VERSIONS).error_code == 0
        assert handshake(client).error_code == 0
        assert authenticate(client, "admin", "admin-secret").error_code == 0
        assert client.call(METADATA).brokers
        assert authenticate(client, "admin", "admin-secret").error_code == 34  # ILLEGAL_SASL_STATE


def test_session_expires_without_reauthentication(reauth):
    with WireClient(reauth.bootstrap) as client:
        assert handshake(client).error_code == 0
        response = authenticate(client, "alice", "alice-secret")
        assert response.session_lifetime.total_seconds() * 1000 == 1500
        assert client.call(METADATA).brokers
        time.sleep(2)
        client.send(METADATA)
        assert client.is_closed_by_peer()


def test_reauthentication_extends_the_session_and_keeps_the_principal(reauth):
    with WireClient(reauth.bootstrap) as client:
        assert handshake(client).error_code == 0
        assert authenticate(client, "alice", "alice-secret").error_code == 0
        time.sleep(1)
        assert handshake(client).error_code == 0
        assert authenticate(client, "alice", "alice-secret").error_code == 0
        time.sleep(1)  # past the first session's end, inside the second
        assert client.call(METADATA).brokers
        assert handshake(client).error_code == 0
        response = authenticate(client, "admin", "admin-secret")  # another principal
        assert response.error_code == 58
        assert client.is_closed_by_peer()


# Settings, checked when the listener starts -----------------------------------------------
BASE = {
    "broker.id": "0",
    "zookeeper.connect": "127.0.0.1:1",
    "listeners": "SASL_PLAINTEXT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093",
    "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
}


def test_listener_settings_are_read_with_kafka_names():
    config = BrokerConfig(
        {
            **BASE,
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(),
        }
    )
    settings = SaslServerSettings.for_listener(config, "SASL_PLAINTEXT")
    assert settings.mechanisms == ("PLAIN",)
    assert settings.plain_users == {"admin": "admin-secret", "alice": "alice-secret"}
    assert settings.failed_authentication_delay_ms == 100


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({}, "GSSAPI not supported"),  # Kafka's default mechanism
        ({"sasl.enabled.mechanisms": "PLAIN"}, "plain.sasl.jaas.config is not set"),
        (
            {
                "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": "PlainLoginModule required",
            },
            "not terminated by semicolon",
        ),
    ],
)
def test_bad_listener_settings_are_refused(props, message):
    with pytest.raises(ConfigError, match=message):
        SaslServerSettings.for_listener(BrokerConfig({**BASE, **props}), "SASL_PLAINTEXT")


def test_jaas_config_syntax():
    module = parse_jaas_config(
        "/* broker */ org.apache.kafka.common.security.plain.PlainLoginModule Required\n"
        '  username = "admin" password="with \\"quote\\" and ; semicolon" // comment\n'
        "  user_bob=bare-word;"
    )
    assert module.control_flag == "required"
    assert module.options == {
        "username": "admin",
        "password": 'with "quote" and ; semicolon',
        "user_bob": "bare-word",
    }
    for bad in ["", "a required x=1; b required y=2;", 'a bogus x="1";', 'a required x="1"']:
        with pytest.raises(JaasConfigError):
            parse_jaas_config(bad)


def test_shutdown_does_not_wait_on_a_connection_that_never_authenticated(
    zookeeper, tmp_path_factory
):
    process = sasl_broker(new_broker, zookeeper, tmp_path_factory)
    try:
        with WireClient(process.bootstrap) as idle:
            assert handshake(idle).error_code == 0  # then nothing: mid-authentication
            assert process.terminate() == 0
            assert idle.is_closed_by_peer()
        assert "still owed responses" not in process.output  # closed, not given up on
    finally:
        process.kill()


def test_describe_configs_never_shows_the_jaas_passwords(sasl):
    from tests.integration.wire import nested

    resource = nested(
        32, 4, "DescribeConfigsResource", resource_type=4, resource_name="1",
        configuration_keys=None,
    )  # fmt: skip
    with WireClient(sasl.bootstrap) as client:
        assert handshake(client).error_code == 0
        assert authenticate(client, "admin", "admin-secret").error_code == 0
        response = client.call(
            request(32, 4, resources=(resource,), include_synonyms=True,
                    include_documentation=False)
        )  # fmt: skip
    configs = {c.name: c for c in response.results[0].configs}
    jaas = configs["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert jaas.is_sensitive and jaas.value is None
    leaked = [c.name for c in configs.values() if c.value and "secret" in c.value]
    leaked += [
        s.name for c in configs.values() for s in c.synonyms if s.value and "secret" in s.value
    ]
    assert not leaked
