"""1,000 topics and 1,000 consumer groups: the list API and the list pages answer with one
page and bounded work. Work is counted as Kafka requests the broker served (its /metrics),
which must follow the page size, not the number of topics or groups (no wall-clock asserts).

The topics are written to ZooKeeper the way `kafka-topics.sh --zookeeper` did (config, then
assignment; the controller elects their leaders): the broker's CreateTopics currently re-reads
every topic on each topic change, so 1,000 of them one batch after another take minutes.
"""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request

import pytest
from django.test import Client

from dashboard.core.admin_api import AdminApi

from .conftest import make_user, register, token_client, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

COUNT = 1000
BATCH = 100
REQUESTS = re.compile(r'^brokerd_requests_total\{api="([a-z_]+)",outcome="[a-z]+"\} ([0-9.e+]+)$', re.M)  # fmt: skip


@pytest.fixture(scope="module")
def big_broker(zookeeper, tmp_path_factory):
    """A broker holding 1,000 one-partition topics and 1,000 groups with a commit each."""
    from brokerd.client.sync import SyncClient
    from tests.conftest import new_broker

    process = new_broker(zookeeper, tmp_path_factory, num_partitions="1").start()
    topics = [f"scale-{i:04d}" for i in range(COUNT)]
    write_topics_to_zookeeper(process.props["zookeeper.connect"], topics)
    with SyncClient(process.bootstrap) as client:
        wait_until(lambda: leaders_elected(client, topics), 120, 0.5)

        from brokerd.client.admin import AdminClient

        admin = AdminClient(client.cluster)

        async def commits():
            gate = asyncio.Semaphore(32)

            async def one(i: int):
                async with gate:  # a standalone commit creates the group
                    await admin.commit_offsets(f"group-{i:04d}", {(topics[i], 0): 0})

            await asyncio.gather(*(one(i) for i in range(COUNT)))

        client.run(commits())
    yield process
    process.kill()


def write_topics_to_zookeeper(connect: str, topics: list[str]) -> None:
    from kazoo.client import KazooClient

    from brokerd.coordination import zk

    client = KazooClient(hosts=connect)
    client.start(10)
    try:
        for start in range(0, len(topics), BATCH):
            batch = client.transaction()
            for topic in topics[start : start + BATCH]:
                config = zk.entity_config({})
                assignment = zk.topic_assignment(zk.new_kafka_uuid(), {0: [1]})
                batch.create(zk.topic_config_path(topic), json.dumps(config).encode())
                batch.create(zk.topic_path(topic), json.dumps(assignment).encode())
            assert all(r is not Exception and not isinstance(r, Exception) for r in batch.commit())
    finally:
        client.stop()
        client.close()


def leaders_elected(client, topics: list[str]) -> bool:
    metadata = client.run(client.cluster.refresh_metadata())
    return all(
        t in metadata.topics and metadata.topics[t].partitions.get(0) is not None
        and metadata.topics[t].partitions[0].leader == 1
        for t in topics
    )  # fmt: skip


def served_requests(cluster) -> dict[str, float]:
    """Kafka requests the broker has served so far, per API (from its /metrics)."""
    base = AdminApi(cluster).endpoints()[1]
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
        text = response.read().decode()
    counts: dict[str, float] = {}
    for api, value in REQUESTS.findall(text):
        counts[api] = counts.get(api, 0) + float(value)
    return counts


def requests_during(cluster, call) -> tuple[object, dict[str, float]]:
    before = served_requests(cluster)
    result = call()
    after = served_requests(cluster)
    return result, {
        api: n - before.get(api, 0) for api, n in after.items() if n > before.get(api, 0)
    }


def test_topic_and_group_lists_stay_bounded_with_1000_of_each(big_broker):
    cluster = register(big_broker)
    api = token_client(make_user("scaler", "viewer"))
    base = "/api/v3/clusters/local"

    page, work = requests_during(cluster, lambda: api.get(f"{base}/topics?page_size=25").json())
    shown = ["__consumer_offsets"] + [f"scale-{i:04d}" for i in range(24)]
    assert [t["topic_name"] for t in page["data"]] == shown
    assert page["metadata"]["next"].endswith("page_size=25&page_token=scale-0023")
    assert sum(work.values()) <= 5, work  # ApiVersions and Metadata: no per-topic requests
    last = api.get(f"{base}/topics?page_size=25&page_token=scale-0989").json()
    assert len(last["data"]) == 10 and last["metadata"]["next"] is None

    for size in (10, 40):
        page, work = requests_during(
            cluster, lambda s=size: api.get(f"{base}/consumer-groups?page_size={s}").json()
        )
        assert [g["consumer_group_id"] for g in page["data"]] == [f"group-{i:04d}" for i in range(size)]  # fmt: skip
        assert all(g["state"] == "EMPTY" for g in page["data"])
        # One ListGroups, then per group shown a coordinator lookup and a DescribeGroups.
        assert work.get("list_groups") == 1 and work.get("describe_groups") == size, work
        assert sum(work.values()) <= 2 * size + 5, work
    after = api.get(f"{base}/consumer-groups?page_size=40&page_token=group-0979").json()
    assert len(after["data"]) == 20 and after["metadata"]["next"] is None

    browser = Client()
    browser.force_login(make_user("pager", "viewer"))
    html, work = requests_during(
        cluster, lambda: browser.get("/clusters/local/groups/?size=20").content.decode()
    )
    assert html.count('href="/clusters/local/groups/group-') == 20
    assert "after=group-0019" in html and work.get("describe_groups") == 20, work
    html, work = requests_during(
        cluster, lambda: browser.get("/clusters/local/topics/?size=30").content.decode()
    )
    assert html.count('href="/clusters/local/topics/scale-') == 29 and "after=scale-0028" in html
    assert sum(work.values()) <= 5, work
