"""1,000 topics and 1,000 consumer groups: the list API and the list pages answer with one
page and bounded work. Work is counted as Kafka requests the broker served (its /metrics),
which must follow the page size, not the number of topics or groups (no wall-clock asserts).

The topics are made with CreateTopics, 50 per request, one request after another; the
ZooKeeper reads each request costs the broker (its brokerd_zookeeper_reads counter) must
not grow with the number of topics that already exist.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.request

import pytest
from django.test import Client

from dashboard.core.admin_api import AdminApi

from .conftest import make_user, register, token_client, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

COUNT = 1000
BATCH = 50
ZK_READS = re.compile(r"^brokerd_zookeeper_reads_total ([0-9.e+]+)$", re.M)
REQUESTS = re.compile(r'^brokerd_requests_total\{api="([a-z_]+)",outcome="[a-z]+"\} ([0-9.e+]+)$', re.M)  # fmt: skip


@pytest.fixture(scope="module")
def big_broker(zookeeper, tmp_path_factory):
    """A broker holding 1,000 one-partition topics (made by CreateTopics) and 1,000 groups
    with a commit each. `process.zk_reads_per_batch`: ZooKeeper reads per CreateTopics of
    BATCH topics, by the number of topics that existed before it."""
    from brokerd.client.admin import AdminClient
    from brokerd.client.results import NewTopic
    from brokerd.client.sync import SyncClient
    from tests.conftest import new_broker

    process = new_broker(zookeeper, tmp_path_factory, num_partitions="1").start()
    topics = [f"scale-{i:04d}" for i in range(COUNT)]
    metrics = admin_url(process) + "/metrics"
    process.zk_reads_per_batch = {}
    with SyncClient(process.bootstrap) as client:
        admin = AdminClient(client.cluster)
        for start in range(0, COUNT, BATCH):
            before = settled_zookeeper_reads(metrics)
            batch = [NewTopic(t, 1, 1) for t in topics[start : start + BATCH]]
            client.run(admin.create_topics(batch))
            process.zk_reads_per_batch[start] = settled_zookeeper_reads(metrics) - before
        wait_until(lambda: leaders_elected(client, topics), 60, 0.5)

        async def commits():
            gate = asyncio.Semaphore(32)

            async def one(i: int):
                async with gate:  # a standalone commit creates the group
                    await admin.commit_offsets(f"group-{i:04d}", {(topics[i], 0): 0})

            await asyncio.gather(*(one(i) for i in range(COUNT)))

        client.run(commits())
    yield process
    process.kill()


def admin_url(process) -> str:
    """The broker's admin API base URL, from its registration in ZooKeeper."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=process.props["zookeeper.connect"])
    client.start(10)
    try:
        data, _ = client.get(f"/brokers/ids/{process.broker_id}")
    finally:
        client.stop()
        client.close()
    return json.loads(data)["admin_endpoint"]


def zookeeper_reads(metrics_url: str) -> int:
    with urllib.request.urlopen(metrics_url, timeout=10) as response:
        return int(float(ZK_READS.search(response.read().decode()).group(1)))


def settled_zookeeper_reads(metrics_url: str) -> int:
    """The read counter once it holds still (watch-triggered refreshes run after the answer)."""
    last = zookeeper_reads(metrics_url)
    for _ in range(100):
        time.sleep(0.2)
        now = zookeeper_reads(metrics_url)
        if now == last:
            return now
        last = now
    raise AssertionError(f"ZooKeeper reads never settled (at {last})")


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
        # One ListGroups, the coordinators looked up, then one DescribeGroups for all the
        # groups shown (one broker coordinates them all), whatever the page size.
        assert work.get("list_groups") == 1 and work.get("describe_groups") == 1, work
        assert sum(work.values()) <= 5, work
    after = api.get(f"{base}/consumer-groups?page_size=40&page_token=group-0979").json()
    assert len(after["data"]) == 20 and after["metadata"]["next"] is None

    browser = Client()
    browser.force_login(make_user("pager", "viewer"))
    html, work = requests_during(
        cluster, lambda: browser.get("/clusters/local/groups/?size=20").content.decode()
    )
    assert html.count('href="/clusters/local/groups/group-') == 20
    # The page's groups described in one DescribeGroups (one coordinator), not one each.
    assert "after=group-0019" in html and work.get("describe_groups") == 1, work
    assert work.get("offset_fetch") == 1, work
    html, work = requests_during(
        cluster, lambda: browser.get("/clusters/local/topics/?size=30").content.decode()
    )
    assert html.count('href="/clusters/local/topics/scale-') == 29 and "after=scale-0028" in html
    assert sum(work.values()) <= 5, work


def test_create_topics_reads_do_not_grow_with_existing_topics(big_broker):
    """A CreateTopics of 50 topics costs the same ZooKeeper reads with 100 topics in place as
    with 950: the broker reads what changed, never every topic again."""
    reads = big_broker.zk_reads_per_batch
    at_100, at_950 = reads[100], reads[COUNT - BATCH]
    assert at_950 <= at_100 * 1.25 + 20, reads
    # Per topic made: a handful of reads (assignment, state, config, and their watches),
    # nothing proportional to the 950 topics already there.
    assert at_950 <= 20 * BATCH, reads
