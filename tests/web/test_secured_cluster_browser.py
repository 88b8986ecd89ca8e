"""The platform against a secured cluster, in a real browser (Debian's chromium) on a live
daphne: the broker's only client listener is SASL_SSL with SCRAM-SHA-512 and the AclAuthorizer
is on; the dashboard is registered with a Kafka client .properties (the super user admin, the
test CA as a PEM trust store). An operator sees the overview live and the topic, then gives
alice a SCRAM-SHA-512 credential and a WRITE ACL from the Security page: confluent-kafka as
alice is refused the topic before the ACL and produces to it after. Screenshots are kept."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from playwright.sync_api import expect

from tests.conftest import new_broker
from tests.harness import ROOT
from tests.sasl_support import plain_jaas
from tests.tls_certs import ssl_props

from .conftest import ARTIFACTS, _manage, broker_admin_token_ref, running_dashboard
from .test_browser import LIVE_EXPECT_TIMEOUT_MS, chromium_context, log_in, submit_and_reload

SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
ADMIN_PASSWORD = "admin-secret"
ALICE_PASSWORD = "alice-browser-pw"


@pytest.fixture(scope="module")
def secured_broker(zookeeper, tmp_path_factory, pki):
    process = new_broker(
        zookeeper, tmp_path_factory, client_protocol="SASL_SSL", internal_protocol="SASL_PLAINTEXT"
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "brokerd",
            "configs",
            "--zookeeper",
            process.props["zookeeper.connect"],
            "--alter",
            "--add-config",
            f"SCRAM-SHA-512=[iterations=4096,password={ADMIN_PASSWORD}]",
            "--entity-type",
            "users",
            "--entity-name",
            "admin",
        ],  # fmt: skip
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=60,
    )
    process.props.update(
        ssl_props(pki),
        **{
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.internal.plain.sasl.jaas.config": plain_jaas(
                users={"admin": ADMIN_PASSWORD}
            ),
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:admin",
            "num.partitions": "1",
            "offsets.topic.num.partitions": "1",
        },
    )
    yield process.start()
    process.kill()


@pytest.fixture(scope="module")
def secured_dashboard(secured_broker, pki, tmp_path_factory, redis_server):
    with running_dashboard(
        tmp_path_factory,
        redis_server,
        secured_broker.bootstrap,
        secured_broker.props["zookeeper.connect"],
        broker_admin_token_ref(secured_broker),
    ) as dashboard:
        # `local` again, now with its client security settings (register_cluster updates).
        properties = tmp_path_factory.mktemp("client") / "client.properties"
        properties.write_text(
            "security.protocol=SASL_SSL\n"
            "sasl.mechanism=SCRAM-SHA-512\n"
            f'sasl.jaas.config={SCRAM_MODULE} required username="admin" '
            f'password="{ADMIN_PASSWORD}";\n'
            "ssl.truststore.type=PEM\n"
            f"ssl.truststore.location={pki.ca}\n"
        )
        _manage(
            dashboard.env,
            "register_cluster",
            "local",
            f"--bootstrap-servers={secured_broker.bootstrap}",
            f"--zookeeper-connect={secured_broker.props['zookeeper.connect']}",
            f"--admin-token-ref={broker_admin_token_ref(secured_broker)}",
            f"--command-config={properties}",
        )
        dashboard.broker = secured_broker
        yield dashboard


def alice_produce_error(broker, pki, topic: str) -> KafkaError | None:
    """One record as alice over SASL_SSL/SCRAM-SHA-512: the delivery error, or None."""
    outcome: list = []
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": ALICE_PASSWORD,
            "ssl.ca.location": str(pki.ca),
            "message.timeout.ms": 10000,
        }
    )
    producer.produce(topic, b"from-alice", on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(20)
    assert outcome, "no delivery report"
    return outcome[0]


def test_an_operator_runs_a_secured_cluster_from_the_browser(secured_dashboard, pki):
    broker = secured_dashboard.broker
    topic = f"secured-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(
        {
            "bootstrap.servers": broker.bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "admin",
            "sasl.password": ADMIN_PASSWORD,
            "ssl.ca.location": str(pki.ca),
        }
    )
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)

    with chromium_context(expect_timeout_ms=LIVE_EXPECT_TIMEOUT_MS) as context:
        page = context.new_page()
        log_in(page, secured_dashboard)
        # The overview, live over SASL_SSL.
        expect(page.locator("#live-status")).to_have_text("live")
        expect(page.locator("#topics")).to_contain_text(topic)
        page.screenshot(path=str(ARTIFACTS / "secured-overview.png"), full_page=True)
        page.goto(f"{secured_dashboard.url}/clusters/local/topics/{topic}/")
        expect(page.locator("#partitions tbody tr")).to_have_count(2)

        # A SCRAM user for alice, from the Security page (the authorizer is on: no
        # SECURITY_DISABLED, the ACL form is there).
        page.goto(f"{secured_dashboard.url}/clusters/local/security/")
        expect(page.locator("#acl-error")).to_have_count(0)
        page.fill("#user-form input[name=user_name]", "alice")
        page.select_option("#user-form select[name=mechanism]", "SCRAM-SHA-512")
        page.fill("#user-form input[name=password]", ALICE_PASSWORD)
        submit_and_reload(page, page.locator("#set-user"))
        expect(page.locator('#users tr[data-user="alice"]')).to_contain_text("SCRAM-SHA-512")
        assert ALICE_PASSWORD not in page.content()

        # alice authenticates but may not write yet.
        refused = alice_produce_error(broker, pki, topic)
        assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

        page.select_option("#acl-form select[name=resource_type]", "TOPIC")
        page.fill("#acl-form input[name=resource_name]", topic)
        page.fill("#acl-form input[name=principal]", "User:alice")
        page.select_option("#acl-form select[name=operation]", "WRITE")
        page.select_option("#acl-form select[name=permission]", "ALLOW")
        submit_and_reload(page, page.locator("#add-acl"))
        row = page.locator(f'#acls tr[data-principal="User:alice"][data-resource="TOPIC:{topic}"]')
        expect(row).to_contain_text("WRITE")
        page.screenshot(path=str(ARTIFACTS / "secured-security.png"), full_page=True)

    # The ACL made in the browser lets alice write (one broker: applied as it is stored).
    deadline = time.monotonic() + 30
    while (error := alice_produce_error(broker, pki, topic)) is not None:
        assert time.monotonic() < deadline, error
        time.sleep(0.5)
