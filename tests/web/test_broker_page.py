"""The broker page through Django's test client on a real broker: its log dir with the size
of the replicas a real producer filled (DescribeLogDirs) and the disk's usage, the
partitions it leads, links to and from its configs page; an unknown broker is a 404."""

from __future__ import annotations

import pytest
from django.test import Client
from kafka import KafkaProducer

from .conftest import make_user
from .test_live_groups import create_topic

pytestmark = pytest.mark.django_db(transaction=True)


def test_broker_page_shows_log_dirs_and_partitions(kafka_cluster, broker, topic_name):
    create_topic(broker.bootstrap, topic_name, 2)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    for i in range(200):
        producer.send(topic_name, b"x" * 100, partition=i % 2)
    producer.flush()
    producer.close()

    client = Client()
    client.force_login(make_user("bea", "viewer"))
    page = client.get(f"/clusters/local/brokers/{broker.broker_id}/")
    assert page.status_code == 200
    view = page.context["view"]
    assert view["up"] and view["address"] == broker.bootstrap
    [log_dir] = view["log_dirs"]
    assert log_dir["online"] and log_dir["error"] is None
    assert log_dir["path"] == broker.props["log.dirs"]
    assert log_dir["replicas"] >= 2 and log_dir["size_bytes"] >= 200 * 100
    assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
    led = [(p["topic_name"], p["partition_id"]) for p in view["led"]]
    assert (topic_name, 0) in led and (topic_name, 1) in led
    assert view["followed_count"] == 0
    html = page.content.decode()
    assert 'data-state="online"' in html and "follows no partition" in html
    assert f"/clusters/local/brokers/{broker.broker_id}/configs/" in html
    assert "KiB" in html or "MiB" in html  # sizes readable
    configs = client.get(f"/clusters/local/brokers/{broker.broker_id}/configs/")
    assert f'href="/clusters/local/brokers/{broker.broker_id}/"' in configs.content.decode()
    overview = client.get("/clusters/local/").content.decode()
    assert f'class="broker-page" href="/clusters/local/brokers/{broker.broker_id}/"' in overview
    assert client.get("/clusters/local/brokers/4242/").status_code == 404
