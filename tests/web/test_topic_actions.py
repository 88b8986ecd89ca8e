"""The topic pages' forms through Django's test client on a real broker, checked with real
clients: the configs page (sources, Kafka's documentation, set and reset of overrides with
the broker's refusal in Kafka's words beside the form), the create form with replication and
configs, add partitions, delete after typing the name; viewers get 403 for each change."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
from django.test import Client

from dashboard.core.models import AuditLog

from .conftest import make_user, wait_until
from .test_live_groups import create_topic

pytestmark = pytest.mark.django_db(transaction=True)
TOPIC_OVERRIDE = ConfigSource.DYNAMIC_TOPIC_CONFIG.value


def describe(bootstrap: str, topic: str) -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([resource])[resource].result(15)


def logged_in(role: str, name: str) -> Client:
    client = Client()
    client.force_login(make_user(name, role))
    return client


def test_configs_page_shows_sources_and_documentation(kafka_cluster, broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 1, {"retention.ms": "3600000"})
    page = logged_in("viewer", "vic").get(f"/clusters/local/topics/{topic_name}/configs/")
    assert page.status_code == 200
    rows = {r["name"]: r for r in page.context["rows"]}
    retention = rows["retention.ms"]
    assert retention["value"] == "3600000" and retention["source_label"] == "topic override"
    # What an override hides: the broker's value among its synonyms (here Kafka's default).
    policy = rows["cleanup.policy"]
    assert not policy["is_override"] and policy["value"] == "delete"
    assert rows["cleanup.policy"]["source_label"] in ("default", "broker (server.properties)")
    # Kafka's documentation line of each config, from DescribeConfigs include_documentation.
    assert "retain a log" in rows["retention.ms"]["documentation"]
    assert all(r["documentation"] for r in rows.values())
    html = page.content.decode()
    assert 'data-config="retention.ms" data-source="DYNAMIC_TOPIC_CONFIG"' in html
    assert "config-edit" not in html  # a viewer sees no forms
    topic_page = logged_in("viewer", "vic2").get(f"/clusters/local/topics/{topic_name}/")
    assert f"/clusters/local/topics/{topic_name}/configs/" in topic_page.content.decode()


def test_operator_sets_and_resets_an_override(kafka_cluster, broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 1)
    url = f"/clusters/local/topics/{topic_name}/configs/"
    viewer = logged_in("viewer", "val")
    assert viewer.post(url, {"name": "retention.ms", "value": "1000"}).status_code == 403

    operator = logged_in("operator", "oli")
    # The broker refuses a value: its words beside the form, what was typed kept.
    refused = operator.post(url, {"name": "retention.ms", "value": "soon", "action": "set"})
    assert refused.status_code == 400
    html = refused.content.decode()
    # The broker's own message and Kafka's error name, never the client's repr.
    assert "retention.ms: invalid long value &#x27;soon&#x27; (INVALID_CONFIG)" in html
    assert "ConfigResource" not in html
    assert refused.context["edit"]["value"] == "soon"
    assert 'value="soon" aria-label="value of retention.ms" aria-invalid="true"' in html
    assert describe(broker.bootstrap, topic_name)["retention.ms"].source != TOPIC_OVERRIDE
    unknown = operator.post(url, {"name": "no.such.config", "value": "1", "action": "set"})
    assert unknown.status_code == 400 and 'id="config-form-error"' in unknown.content.decode()

    done = operator.post(url, {"name": "retention.ms", "value": "7200000", "action": "set"})
    assert done.status_code == 302 and done.url == url
    entry = describe(broker.bootstrap, topic_name)["retention.ms"]
    assert (entry.value, entry.source) == ("7200000", TOPIC_OVERRIDE)
    shown = operator.get(url)
    assert f"{topic_name}: retention.ms set to 7200000." in shown.content.decode()
    assert {r["name"]: r for r in shown.context["rows"]}["retention.ms"]["is_override"]

    reset = operator.post(url, {"name": "retention.ms", "value": "", "action": "reset"})
    assert reset.status_code == 302
    entry = describe(broker.bootstrap, topic_name)["retention.ms"]
    assert entry.source != TOPIC_OVERRIDE and entry.value == "604800000"
    logged = AuditLog.objects.filter(action="topic.configs.alter", target=topic_name)
    assert [(a.succeeded, a.details["operation"]) for a in logged.order_by("pk")] == [
        (False, "SET"),
        (False, "SET"),
        (True, "SET"),
        (True, "DELETE"),
    ]


def test_create_add_partitions_and_delete_from_the_forms(kafka_cluster, broker, topic_name):
    operator = logged_in("operator", "ora")
    assert (
        logged_in("viewer", "vix")
        .post("/clusters/local/topics/create", {"topic_name": topic_name})
        .status_code
        == 403
    )
    # Refusals keep what was typed beside the form: ours, then the broker's.
    form = {"topic_name": topic_name, "partitions": "2", "replication_factor": "1",
            "configs": "cleanup.policy=compact\nbroken line"}  # fmt: skip
    bad = operator.post("/clusters/local/topics/create", form)
    assert bad.status_code == 400
    html = bad.content.decode()
    assert "config line 2 is not &#x27;name=value&#x27;" in html
    assert f'value="{topic_name}"' in html and "cleanup.policy=compact\nbroken line" in html
    form["configs"] = "cleanup.policy=sometimes"
    refused = operator.post("/clusters/local/topics/create", form)
    assert refused.status_code == 400
    assert "(INVALID_CONFIG)" in refused.content.decode()
    form.update(replication_factor="3", configs="")  # one broker
    refused = operator.post("/clusters/local/topics/create", form)
    assert "(INVALID_REPLICATION_FACTOR)" in refused.content.decode()

    form.update(replication_factor="1", configs="cleanup.policy=compact\nretention.ms=60000")
    made = operator.post("/clusters/local/topics/create", form)
    assert made.status_code == 302 and made.url == f"/clusters/local/topics/{topic_name}/"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = admin.list_topics(topic_name, timeout=15).topics[topic_name]
    assert len(topic.partitions) == 2
    assert [len(p.replicas) for p in topic.partitions.values()] == [1, 1]
    configs = describe(broker.bootstrap, topic_name)
    assert configs["cleanup.policy"].value == "compact"
    assert (configs["retention.ms"].value, configs["retention.ms"].source) == (
        "60000",
        TOPIC_OVERRIDE,
    )
    page = operator.get(made.url)
    assert f"Topic {topic_name} created." in page.content.decode()

    # Add partitions: fewer than now is Kafka's refusal, in its words; then 2 -> 4.
    url = f"/clusters/local/topics/{topic_name}/partitions"
    fewer = operator.post(url, {"partitions": "1"})
    assert fewer.status_code == 400 and "(INVALID_PARTITIONS)" in fewer.content.decode()
    assert 'id="add-partitions-error"' in fewer.content.decode()
    grown = operator.post(url, {"partitions": "4"})
    assert grown.status_code == 302
    topic = admin.list_topics(topic_name, timeout=15).topics[topic_name]
    assert len(topic.partitions) == 4

    # Delete: only after typing the name.
    url = f"/clusters/local/topics/{topic_name}/delete"
    assert logged_in("viewer", "vio").post(url, {"confirm": topic_name}).status_code == 403
    wrong = operator.post(url, {"confirm": topic_name[:-1]})
    assert wrong.status_code == 400 and "to delete it" in wrong.content.decode()
    assert f'value="{topic_name[:-1]}"' in wrong.content.decode()
    assert topic_name in admin.list_topics(timeout=15).topics
    gone = operator.post(url, {"confirm": topic_name})
    assert gone.status_code == 302 and gone.url == "/clusters/local/topics/"
    wait_until(lambda: topic_name not in admin.list_topics(timeout=15).topics, 30)
    actions = AuditLog.objects.filter(target=topic_name, succeeded=True).order_by("pk")
    assert [a.action for a in actions] == [
        "topic.create",
        "topic.partitions.create",
        "topic.delete",
    ]


def test_topic_list_counts_records_and_searches(kafka_cluster, broker, topic_name):
    from kafka import KafkaProducer

    create_topic(broker.bootstrap, topic_name, 2)
    create_topic(broker.bootstrap, f"{topic_name}-other", 1)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(1234):
        producer.send(topic_name, b"v%d" % i, partition=i % 2)
    producer.flush()
    producer.close()
    viewer = logged_in("viewer", "vsearch")
    page = viewer.get("/clusters/local/topics/", {"q": topic_name.upper()})  # any case
    rows = {r["name"]: r for r in page.context["rows"]}
    assert set(rows) == {topic_name, f"{topic_name}-other"}
    mine = rows[topic_name]
    assert (mine["partitions"], mine["replication"], mine["under_replicated"]) == (2, 1, 0)
    assert mine["records"] == 1234 and rows[f"{topic_name}-other"]["records"] == 0
    assert '<td class="records">1,234</td>' in page.content.decode()
    none = viewer.get("/clusters/local/topics/", {"q": f"{topic_name}-nothing"})
    assert none.context["rows"] == [] and "no topics matching" in none.content.decode()


def test_broker_configs_page_sets_and_resets_a_dynamic_config(kafka_cluster, broker):
    url = "/clusters/local/brokers/1/configs/"
    page = logged_in("viewer", "vbroker").get(url)
    rows = {r["name"]: r for r in page.context["rows"]}
    assert rows["log.dirs"]["source_label"] == "server.properties"
    assert rows["log.dirs"]["is_read_only"] and rows["log.retention.hours"]["documentation"]
    assert "config-edit" not in page.content.decode()
    assert logged_in("viewer", "vb2").post(url, {"name": "x", "value": "1"}).status_code == 403
    operator = logged_in("operator", "obroker")
    name = "log.cleaner.threads"
    refused = operator.post(url, {"name": name, "value": "many", "action": "set"})
    assert refused.status_code == 400  # the broker's words, beside the form
    assert (
        "log.cleaner.threads: invalid int value &#x27;many&#x27; (INVALID_"
        in refused.content.decode()
    )
    assert 'value="many"' in refused.content.decode()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    try:
        done = operator.post(url, {"name": name, "value": "2", "action": "set"})
        assert done.status_code == 302
        entry = admin.describe_configs([resource])[resource].result(15)[name]
        assert (entry.value, entry.source) == ("2", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
        assert f"Broker 1: {name} set to 2." in operator.get(url).content.decode()
    finally:
        reset = operator.post(url, {"name": name, "value": "", "action": "reset"})
    assert reset.status_code == 302
    entry = admin.describe_configs([resource])[resource].result(15)[name]
    assert entry.source != ConfigSource.DYNAMIC_BROKER_CONFIG.value
