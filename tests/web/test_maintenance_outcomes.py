"""Maintenance outcomes in words, and schedules that would repeat another one.

Runs ask a real broker (the session's), through the Celery task's function called here; the
maintenance page is driven through Django's test client: a refused form is rendered again
(HTTP 400) with the error or the duplicate warning beside it and what was typed still in it.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from dashboard.core.live_updates import summarize
from dashboard.core.maintenance import create_run
from dashboard.core.models import MaintenanceAction, MaintenanceRun, MaintenanceSchedule, RunStatus
from tasks import maintenance

from .conftest import make_user
from .test_live_groups import create_topic

pytestmark = pytest.mark.django_db(transaction=True)


def ran(cluster, action: str, topic: str = "") -> MaintenanceRun:
    run = create_run(cluster, action, topic)
    maintenance.run_maintenance(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


def test_a_policy_that_excludes_the_action_is_skipped_in_words(kafka_cluster, broker, topic_name):
    compacted, deleted = f"{topic_name}-c", f"{topic_name}-d"
    create_topic(broker.bootstrap, compacted, 1, {"cleanup.policy": "compact"})
    create_topic(broker.bootstrap, deleted, 1, {"cleanup.policy": "delete"})

    # Retention on a compact-only topic: skipped, as the README promises; no broker is asked.
    run = ran(kafka_cluster, MaintenanceAction.RETENTION, compacted)
    assert run.result["brokers"] == {} and run.result["partitions"] == []
    assert [s["topic"] for s in run.result["skipped"]] == [compacted]
    assert summarize(run) == f"skipped: {compacted}: cleanup.policy=compact excludes retention"

    # Compaction on a delete topic: the same, the other way round.
    run = ran(kafka_cluster, MaintenanceAction.COMPACTION, deleted)
    assert summarize(run) == f"skipped: {deleted}: cleanup.policy=delete excludes compaction"

    # A run on a topic whose policy has both applies.
    both = f"{topic_name}-b"
    create_topic(broker.bootstrap, both, 1, {"cleanup.policy": "compact,delete"})
    run = ran(kafka_cluster, MaintenanceAction.RETENTION, both)
    assert run.result["skipped"] == [] and list(run.result["brokers"]) == ["1"]
    assert summarize(run).startswith("nothing to delete") and "(1 partition)" in summarize(run)

    # Every topic: the brokers apply retention, the compact-only topics are named as skipped.
    run = ran(kafka_cluster, MaintenanceAction.RETENTION)
    skipped = {s["topic"]: s["reason"] for s in run.result["skipped"]}
    assert skipped[compacted] == "cleanup.policy=compact excludes retention"
    assert deleted not in skipped and both not in skipped
    assert "skipped: " in summarize(run) and "cleanup.policy=compact excludes retention" in (
        summarize(run)
    )


def _run(action: str, result: dict) -> MaintenanceRun:
    return MaintenanceRun(action=action, result=result)


def test_summaries_say_what_was_done():
    totals = {"segments_deleted": 3, "bytes_freed": 3 * 1024 * 1024 // 2, "records_removed": 0,
              "bytes_removed": 0}  # fmt: skip
    run = _run("retention", {"totals": totals, "partitions": [{}, {}], "skipped": []})
    assert summarize(run) == "3 segments deleted, 1.5 MiB freed (2 partitions)"
    totals = {**totals, "records_removed": 12_345, "bytes_removed": 2048}
    skipped = [
        {"broker_id": 1, "topic": f"t{i}", "reason": f"t{i} is not compacted (cleanup.policy "
         "has no compact); nothing to do"} for i in range(5)
    ]  # fmt: skip
    run = _run("compaction", {"totals": totals, "partitions": [{}], "skipped": skipped})
    assert summarize(run) == (
        "12,345 records removed, 2.0 KiB freed (1 partition); "
        "skipped: t0, t1, t2 and 2 more: cleanup.policy excludes compaction (no compact)"
    )
    assert summarize(_run("retention", {})) == ""  # not finished yet


def _post(client: Client, url: str, **form) -> object:
    return client.post(url, {"action": "retention", "enabled": "on", **form})


def test_a_duplicate_schedule_is_saved_only_once_confirmed(kafka_cluster, topic_name):
    client = Client()
    client.force_login(make_user("olga", "operator"))
    url = "/clusters/local/maintenance/schedules"
    first = _post(client, url, topic=topic_name, every_seconds="600")
    assert first.status_code == 302
    (existing,) = MaintenanceSchedule.objects.filter(topic=topic_name)

    # The same target again (another timing): a warning beside the form, nothing saved, the
    # typed values kept, and an "Add anyway" button.
    again = _post(client, url, topic=topic_name, crontab="30 3 * * sun")
    assert again.status_code == 400
    html = again.content.decode()
    warning = re.search(r'<p id="new-schedule-warning"[^>]*>([^<]*)</p>', html).group(1)
    assert f"schedule {existing.pk} (Enforce retention on {topic_name}, every 600 s)" in warning
    assert "already does this" in warning
    assert f'value="{topic_name}"' in html and 'value="30 3 * * sun"' in html
    assert 'id="new-schedule-anyway"' in html
    assert MaintenanceSchedule.objects.filter(topic=topic_name).count() == 1

    # Another partition or action is no duplicate; a confirmed duplicate is saved, and says so.
    assert (
        _post(client, url, topic=topic_name, partition="0", every_seconds="60").status_code == 302
    )
    confirmed = _post(client, url, topic=topic_name, crontab="30 3 * * sun", allow_duplicate="1")
    assert confirmed.status_code == 302
    page = client.get("/clusters/local/maintenance/").content.decode()
    assert f"(it repeats schedule {existing.pk})" in page
    assert MaintenanceSchedule.objects.filter(topic=topic_name).count() == 3

    # Editing a schedule into another one's target warns in its row, with what was typed.
    other = _post(client, url, topic=f"{topic_name}-x", every_seconds="60")
    assert other.status_code == 302
    moved = MaintenanceSchedule.objects.get(topic=f"{topic_name}-x")
    edit = _post(client, f"{url}/{moved.pk}", topic=topic_name, every_seconds="120")
    assert edit.status_code == 400
    row = re.search(rf'<tr data-schedule="{moved.pk}">.*?</tr>', edit.content.decode(), re.S)
    assert "already does this" in row.group(0) and 'value="120"' in row.group(0)
    moved.refresh_from_db()
    assert moved.topic == f"{topic_name}-x"


def test_a_refused_form_keeps_what_was_typed(kafka_cluster, topic_name):
    client = Client()
    client.force_login(make_user("oleg", "operator"))
    refused = _post(client, "/clusters/local/maintenance/schedules", topic=topic_name,
                    crontab="61 * * * *")  # fmt: skip
    assert refused.status_code == 400
    html = refused.content.decode()
    error = re.search(r'<p id="new-schedule-error"[^>]*>([^<]*)</p>', html).group(1)
    assert "crontab" in error and "minute" in error
    assert f'value="{topic_name}"' in html and 'value="61 * * * *"' in html
    # "Run now" with a partition but no topic: the error beside that form.
    run = client.post("/clusters/local/maintenance/run", {"action": "retention", "partition": "1"})
    assert run.status_code == 400
    assert re.search(
        r'<p id="run-now-error"[^>]*>[^<]*a partition needs a topic', run.content.decode()
    )
    assert not MaintenanceRun.objects.filter(cluster=kafka_cluster).exists()


def test_the_api_warns_of_a_duplicate_schedule(kafka_cluster, operator_api, topic_name):
    api = "/api/v3/clusters/local/maintenance-schedules"
    body = {"action": "compaction", "topic_name": topic_name, "every_seconds": 600}
    first = operator_api.post(api, body, format="json")
    assert first.status_code == 201 and first.json()["warnings"] == []
    again = operator_api.post(api, {**body, "every_seconds": 60}, format="json")
    assert again.status_code == 201
    (warning,) = again.json()["warnings"]
    assert f"schedule {first.json()['schedule_id']} (Run compaction on {topic_name}" in warning


def test_runs_show_their_times_and_an_empty_state(kafka_cluster, broker, topic_name):
    client = Client()
    client.force_login(make_user("tim", "viewer"))
    assert "no runs yet" in client.get("/clusters/local/maintenance/").content.decode()
    create_topic(broker.bootstrap, topic_name, 1, {"cleanup.policy": "compact"})
    run = ran(kafka_cluster, MaintenanceAction.RETENTION, topic_name)
    html = client.get("/clusters/local/maintenance/").content.decode()
    row = re.search(rf'<tr data-run="{run.pk}".*?</tr>', html, re.S).group(0)
    assert row.count("<time datetime=") == 2 and " UTC</time>" in row and " ago)" in row
    assert "cleanup.policy=compact excludes retention" in row and "no runs yet" not in html
