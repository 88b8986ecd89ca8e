"""The console tells the two kinds of consumer groups apart (issue 18: "the dashboard showing
both kinds; the lag pages work for both"): a KIP-848 group of a confluent-kafka member with
`group.protocol=consumer` and a classic group of a classic confluent-kafka member, both
consuming and committing, are labelled "consumer" and "classic" on the groups list, the
group page and in REST, and each group page shows its lag and which member owns what."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from tests.compat.group_support import Member, group_story, wait_for
from tests.compat.test_groups_clients import committed

from .conftest import make_user
from .test_live_groups import create_topic, produce

pytestmark = pytest.mark.django_db(transaction=True)


def _row(html: str, group: str) -> str:
    found = re.search(rf"<tr[^>]*><td[^>]*><a [^>]*>{re.escape(group)}</a></td>.*?</tr>", html)
    assert found, f"{group} not listed"
    return found.group(0)


def test_groups_list_page_and_rest_label_classic_and_consumer_groups(
    group_cluster, group_broker, topic_name
):
    bootstrap = group_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    produce(bootstrap, topic_name, 6, partition=0)
    produce(bootstrap, topic_name, 4, partition=1)
    new_group, classic_group = f"kip848-{topic_name}", f"classic-{topic_name}"
    members = [
        Member(
            "confluent",
            bootstrap,
            new_group,
            topic_name,
            module="tests.compat.consumer_protocol_member",
            commit=True,
            client_id="new-kind",
        ),
        Member("confluent", bootstrap, classic_group, topic_name, commit=True, client_id="old"),
    ]
    try:
        for group in (new_group, classic_group):
            wait_for(
                lambda group=group: committed(bootstrap, group, topic_name, 2) == {0: 6, 1: 4},
                90,
                f"{group} consumed and committed everything",
                lambda: group_story(members, group_broker.output),
            )
        browser = Client()
        browser.force_login(make_user("tess", "viewer"))

        listing = browser.get("/clusters/local/groups/?size=500").content.decode()
        assert '<td class="group-type">consumer</td>' in _row(listing, new_group)
        assert '<td class="group-type">classic</td>' in _row(listing, classic_group)

        for group, kind, client in ((new_group, "consumer", "new-kind"), (classic_group, "classic", "old")):  # fmt: skip
            page = browser.get(f"/clusters/local/groups/{group}/").content.decode()
            assert 'id="group-type" title="' in page and f">{kind}</span>" in page, page
            lag = re.search(
                rf'<tr data-partition="{re.escape(topic_name)}:0">(.*?)</tr>', page
            ).group(1)
            # Each cell's text (ids sit in a .long-id span).
            cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", lag)]
            # Topic, partition, committed, HW, lag, consumer (a member id), client.
            assert cells[2:5] == ["6", "6", "0"], cells
            assert cells[5] and cells[6] == client, cells

            rest = browser.get(f"/api/v3/clusters/local/consumer-groups/{group}")
            assert rest.status_code == 200, rest.content[:300]
            assert json.loads(rest.content)["type"] == kind.upper()
    finally:
        for m in members:
            m.terminate()
