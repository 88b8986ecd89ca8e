"""A Spark export launched from the platform reads read_committed unless it asks for
read_uncommitted (REST `isolation_level`, the launch form's choice): the job gets the data
source's `kafka.isolation.level` option; an ingest refuses the field; a bad value is a 400."""

from __future__ import annotations

import pytest

from tasks.spark import job_arguments

from .test_spark_api import BASE, celery_queue, make_topic  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_isolation_level_reaches_the_job(
    kafka_cluster,
    broker,
    operator_api,
    celery_queue,  # noqa: F811
    topic_name,
):
    from dashboard.core.models import SparkLoad

    make_topic(broker, topic_name)

    def launch(**extra):
        body = {"load_type": "export", "topic_name": topic_name, "output_path": "iso", **extra}
        return operator_api.post(BASE, body, format="json")

    default = launch()
    assert default.status_code == 202, default.json()
    arguments = job_arguments(SparkLoad.objects.get(pk=default.json()["load_id"]))[1]
    assert not any("kafka.isolation.level" in a for a in arguments)  # default: committed

    uncommitted = launch(isolation_level="read_uncommitted")
    assert uncommitted.status_code == 202, uncommitted.json()
    load = SparkLoad.objects.get(pk=uncommitted.json()["load_id"])
    assert load.range == {"isolation_level": "read_uncommitted"}
    assert uncommitted.json()["options"] == {"isolation_level": "read_uncommitted"}
    arguments = job_arguments(load)[1]
    assert arguments[-2:] == ["--option", "kafka.isolation.level=read_uncommitted"]

    bad = launch(isolation_level="sometimes")
    assert bad.status_code == 400 and "isolation_level" in bad.json()["errors"]
    ingest = operator_api.post(
        BASE,
        {"load_type": "ingest", "topic_name": topic_name, "input_path": "x",
         "isolation_level": "read_committed"},
        format="json",
    )  # fmt: skip
    assert ingest.status_code == 400 and "isolation_level" in ingest.json()["errors"]
