"""The consumer groups list searched and sorted on the server, beyond the page shown, with
each group's topics and total lag (issue 17: "the groups list shows state, members, topics
and total lag"), on a real broker with standalone commits."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from .conftest import make_user
from .test_groups_api import commit
from .test_live_groups import create_topic, produce

pytestmark = pytest.mark.django_db


def listed(client: Client, query: str) -> tuple[list[str], str]:
    html = client.get(f"/clusters/local/groups/?{query}").content.decode()
    return re.findall(r'<tr data-group="([^"]+)">', html), html


def test_groups_are_searched_and_sorted_by_lag_on_the_server(
    group_cluster, group_broker, topic_name
):
    other = f"{topic_name}-b"
    create_topic(group_broker.bootstrap, topic_name, 1)
    create_topic(group_broker.bootstrap, other, 1)
    produce(group_broker.bootstrap, topic_name, 10)
    produce(group_broker.bootstrap, other, 4)
    prefix = f"lst-{topic_name}"
    lags = {"a": 7, "b": 1, "c": 9, "d": 4}  # lag on topic_name; d also lags 4 on `other`
    for suffix, lag in lags.items():
        offsets = {(topic_name, 0): 10 - lag}
        if suffix == "d":
            offsets[(other, 0)] = 0
        commit(group_broker, f"{prefix}-{suffix}", offsets)
    client = Client()
    client.force_login(make_user("gus", "viewer"))

    # By total lag, largest first, two a page: the order covers every matching group.
    first, html = listed(client, f"q={prefix}&sort=lag&dir=desc&size=2")
    assert first == [f"{prefix}-c", f"{prefix}-d"]  # 9, then 4 + 4
    assert "4 groups matching" in html
    row = re.search(rf'<tr data-group="{prefix}-d">.*?</tr>', html, re.S).group(0)
    assert 'class="lag" data-value="8"' in row and topic_name in row and other in row
    assert 'aria-sort="descending" data-key="lag"' in html
    next_link = re.search(r'id="next-page" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    second, _ = listed(client, next_link.lstrip("?"))
    assert second == [f"{prefix}-a", f"{prefix}-b"]
    ascending, _ = listed(client, f"q={prefix}&sort=lag&dir=asc&size=10")
    assert ascending == [f"{prefix}-{s}" for s in "badc"]

    # By topics (d has two), by id both ways, and the search narrows the list.
    by_topics, _ = listed(client, f"q={prefix}&sort=topics&dir=desc&size=1")
    assert by_topics == [f"{prefix}-d"]
    by_id_desc, _ = listed(client, f"q={prefix}&sort=group&dir=desc&size=10")
    assert by_id_desc == [f"{prefix}-{s}" for s in "dcba"]
    only, html = listed(client, f"q={prefix}-C")  # case-insensitive
    assert only == [f"{prefix}-c"] and "1 group matching" in html
    none, html = listed(client, f"q=nothing-{topic_name}")
    assert none == [] and "no consumer groups matching" in html


def test_sorting_many_groups_batches_the_requests(group_cluster, group_broker, topic_name):
    """Sorted by lag, every matching group is described and its offsets read: one
    DescribeGroups and one OffsetFetch for all of them (one coordinator here), counted by
    the broker (its /metrics), not one of each per group."""
    from tests.integration.test_admin_api import admin_for, metric_samples

    create_topic(group_broker.bootstrap, topic_name, 1)
    produce(group_broker.bootstrap, topic_name, 3)
    prefix = f"many-{topic_name}"
    groups = [f"{prefix}-{i:02d}" for i in range(12)]
    for i, group in enumerate(groups):
        commit(group_broker, group, {(topic_name, 0): i % 4})
    admin = admin_for(group_broker)

    def served() -> dict[str, float]:
        counts: dict[str, float] = {}
        for (name, labels), value in metric_samples(admin.get("/metrics", token=None)[1]).items():
            if name == "brokerd_requests_total":
                api = dict(labels)["api"]
                counts[api] = counts.get(api, 0) + value
        return counts

    client = Client()
    client.force_login(make_user("batch", "viewer"))
    before = served()
    shown, html = listed(client, f"q={prefix}&sort=lag&dir=desc&size=5")
    after = served()
    work = {api: n - before.get(api, 0) for api, n in after.items() if n > before.get(api, 0)}
    assert "12 groups matching" in html and len(shown) == 5
    assert shown[0].endswith(("-00", "-04", "-08"))  # lag 3: committed at 0
    assert work.get("describe_groups") == 1 and work.get("offset_fetch") == 1, work
    assert work.get("find_coordinator", 0) <= 1, work
