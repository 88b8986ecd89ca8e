"""A Celery worker killed (SIGKILL) in the middle of a Spark load, for real: its spark-submit
lives on as an orphan holding the output's lock, and the load would say `running` forever.
Reading the load through the API reconciles it: it ends `failed` saying the worker is gone,
the orphaned Spark job is killed, and the same export launched again on a new worker runs to
the end with the output exact (nothing of the dead load duplicated or missing)."""

from __future__ import annotations

import signal
import time
import uuid

import pytest
import requests

from brokerd.client import NewTopic, SyncClient
from spark_jobs.launcher import group_alive
from tests.spark.conftest import produce_confluent
from tests.spark.helpers import parquet_records, topic_records

from .conftest import broker_admin_token_ref, running_celery_worker, running_dashboard
from .test_spark_browser import processes_of_load

RECORDS = 40_000
LOAD_TIMEOUT_S = 180


@pytest.fixture
def dashboard(broker, tmp_path_factory, redis_server):
    """A dashboard of its own (own database, own Redis database: its own Celery queue), so
    the worker this test kills is the only one that can take its loads."""
    redis_url = redis_server.rsplit("/", 1)[0] + "/3"
    with running_dashboard(
        tmp_path_factory,
        redis_url,
        broker.bootstrap,
        broker.props["zookeeper.connect"],
        broker_admin_token_ref(broker),
    ) as live:
        yield live


def api(dashboard, method: str, path: str = "", **kwargs) -> dict:
    response = requests.request(
        method,
        f"{dashboard.url}/api/v3/clusters/local/spark-loads{path}",
        headers={"Authorization": f"Token {dashboard.token}"},
        timeout=30,
        **kwargs,
    )
    assert response.status_code < 300, response.text
    return response.json()


def wait_for_load(dashboard, load_id: int, done, timeout: float = LOAD_TIMEOUT_S) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        load = api(dashboard, "GET", f"/{load_id}")
        if done(load):
            return load
        assert time.monotonic() < deadline, f"load {load_id} stuck: {load}"
        time.sleep(0.5)


def test_a_load_whose_worker_is_killed_fails_and_does_not_block_the_next(
    dashboard, broker, tmp_path
):
    topic = f"spark-lost-{uuid.uuid4().hex[:8]}"
    with SyncClient(broker.bootstrap) as client:
        client.admin.create_topics([NewTopic(topic, 2, 1, {})])
        produce_confluent(
            broker.bootstrap, topic, ((b"k%d" % i, b"v%d" % i) for i in range(RECORDS))
        )
        export = {"load_type": "export", "topic_name": topic, "output_path": f"exports/{topic}"}

        with running_celery_worker(dashboard.env, tmp_path / "worker-1.log") as worker:
            # Tasks of 400 records: 100 of them, so the job is mid-stage when the worker dies.
            first = api(dashboard, "POST", json={**export, "records_per_task": 400})["load_id"]
            running = wait_for_load(
                dashboard, first, lambda load: load["progress"]["tasks_done"] > 0
            )
            assert running["status"] == "running"
            job_pid = running["result"]["pid"]
            worker.send_signal(signal.SIGKILL)
            worker.wait(10)
            assert group_alive(job_pid), "spark-submit should outlive its worker (own session)"

        lost = api(dashboard, "GET", f"/{first}")  # reading it reconciles
        assert lost["status"] == "failed" and lost["result"]["worker_lost"] is True
        error = lost["result"]["error"]
        assert f"the Celery worker process running it (pid {worker.pid} on " in error
        assert "is gone; its Spark job was stopped" in error
        assert not group_alive(job_pid) and processes_of_load(first, topic) == []
        assert lost["progress"]["tasks_done"] < lost["progress"]["tasks_total"]

        with running_celery_worker(dashboard.env, tmp_path / "worker-2.log"):
            second = api(dashboard, "POST", json=export)["load_id"]
            done = wait_for_load(
                dashboard, second, lambda load: load["status"] not in ("queued", "running")
            )
        assert done["status"] == "succeeded", done["result"].get("error")
        assert done["result"]["rows"] == RECORDS
        assert parquet_records(done["output_path"]) == topic_records(client, topic)
