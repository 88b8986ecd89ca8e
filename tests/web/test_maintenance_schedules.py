"""Maintenance schedules every N seconds or on a crontab, from the REST API and the page:
validated (4xx with the reason), audited, stored as django-celery-beat PeriodicTasks."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from dashboard.core import maintenance
from dashboard.core.models import AuditLog, MaintenanceSchedule

from .conftest import make_user

pytestmark = pytest.mark.django_db

API = "/api/v3/clusters/local/maintenance-schedules"


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("* * * *", "5 fields"),
        ("* * * * * *", "5 fields"),
        ("61 * * * *", "minute"),
        ("* 24 * * *", "hour"),
        ("* * 0 * *", "day_of_month"),
        ("* * * 13 *", "month_of_year"),
        ("* * * * funday", "day_of_week"),
        ("*/0 * * * *", "minute"),
        ("5-1 * * * *", "minute"),
    ],
)
def test_bad_crontabs_are_refused_with_the_field(expression, problem):
    with pytest.raises(ValueError, match=problem):
        maintenance.crontab_fields(expression)


def test_good_crontabs_map_to_celery_beat_fields():
    assert maintenance.crontab_fields("*/15 2-5 1,15 * mon-fri") == {
        "minute": "*/15",
        "hour": "2-5",
        "day_of_month": "1,15",
        "month_of_year": "*",
        "day_of_week": "mon-fri",
    }


def test_schedules_over_the_api(kafka_cluster, operator_api, viewer_api, topic_name):
    from django_celery_beat.models import PeriodicTask

    body = {"action": "retention", "topic_name": topic_name, "every_seconds": 600}
    created = operator_api.post(API, body, format="json")
    assert created.status_code == 201, created.json()
    schedule = created.json()
    assert schedule["kind"] == "KafkaMaintenanceSchedule"
    assert (schedule["every_seconds"], schedule["crontab"], schedule["enabled"]) == (
        600,
        None,
        True,
    )
    url = schedule["metadata"]["self"]

    # Switch to a crontab, then disable: the PeriodicTask follows.
    changed = operator_api.patch(url, {"crontab": " 30  3 * * sun "}, format="json")
    assert changed.status_code == 200, changed.json()
    assert (changed.json()["crontab"], changed.json()["every_seconds"]) == ("30 3 * * sun", None)
    task = PeriodicTask.objects.get(name=f"maintenance-schedule-{schedule['schedule_id']}")
    assert task.interval is None and task.crontab.hour == "3" and task.crontab.day_of_week == "sun"
    assert json.loads(task.args) == [schedule["schedule_id"]]
    operator_api.patch(url, {"enabled": False}, format="json")
    task.refresh_from_db()
    assert not task.enabled and task.crontab.minute == "30"  # timing kept

    listed = viewer_api.get(API).json()["data"]
    assert [(s["schedule_id"], s["crontab"], s["enabled"]) for s in listed] == [
        (schedule["schedule_id"], "30 3 * * sun", False)
    ]
    crontab_only = {"action": "compaction", "crontab": "0 * * * *"}
    assert operator_api.post(API, crontab_only, format="json").json()["topic_name"] is None

    # Bad input: 400 with the reason; viewers read only; unknown ids 404.
    for bad, field in [
        ({"action": "retention", "crontab": "61 * * * *"}, "crontab"),
        ({"action": "retention", "crontab": "* * *"}, "crontab"),
        ({"action": "retention", "every_seconds": 5}, "every_seconds"),
        ({"action": "retention"}, "non_field_errors"),
        ({"action": "retention", "every_seconds": 60, "crontab": "* * * * *"}, "non_field_errors"),
        ({"action": "retention", "every_seconds": 60, "partition_id": 0}, "partition_id"),
        ({"action": "sweep", "every_seconds": 60}, "action"),
    ]:
        refused = operator_api.post(API, bad, format="json")
        assert refused.status_code == 400, (bad, refused.json())
        assert field in refused.json()["errors"], refused.json()
    bad_patch = operator_api.patch(url, {"crontab": "* * * * someday"}, format="json")
    assert bad_patch.status_code == 400 and "day_of_week" in str(bad_patch.json())
    assert viewer_api.post(API, body, format="json").status_code == 403
    assert viewer_api.delete(url).status_code == 403
    assert operator_api.get(f"{API}/999999").status_code == 404

    assert operator_api.delete(url).status_code == 204
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()
    actions = list(
        AuditLog.objects.filter(action__startswith="maintenance.schedule")
        .order_by("timestamp")
        .values_list("action", "username", "succeeded")
    )
    assert actions == [
        ("maintenance.schedule.create", "otto", True),
        ("maintenance.schedule.update", "otto", True),
        ("maintenance.schedule.update", "otto", True),
        ("maintenance.schedule.create", "otto", True),
        ("maintenance.schedule.delete", "otto", True),
    ]


def timing(schedule_id: int) -> dict:
    return maintenance.schedule_timing(MaintenanceSchedule.objects.get(pk=schedule_id))


def test_crontab_schedules_from_the_page(kafka_cluster, topic_name):
    browser = Client()
    browser.force_login(make_user("ora", "operator"))
    form = {"action": "compaction", "topic": topic_name, "crontab": "0 4 * * *", "enabled": "on"}
    browser.post("/clusters/local/maintenance/schedules", form)
    (schedule,) = MaintenanceSchedule.objects.filter(topic=topic_name)
    assert maintenance.schedule_timing(schedule) == {"every_seconds": None, "crontab": "0 4 * * *"}
    page = browser.get("/clusters/local/maintenance/").content.decode()
    assert f'name="crontab" form="schedule-{schedule.pk}" value="0 4 * * *"' in page

    # Back to an interval from the row's form; a bad crontab is refused with its reason.
    update = f"/clusters/local/maintenance/schedules/{schedule.pk}"
    browser.post(update, {**form, "crontab": "", "every_seconds": "120"})
    assert timing(schedule.pk) == {"every_seconds": 120, "crontab": None}
    refused = browser.post(update, {**form, "crontab": "0 25 * * *"}, follow=True)
    assert "hour" in refused.content.decode()
    both = browser.post(update, {**form, "every_seconds": "60"}, follow=True)
    assert "either an interval" in both.content.decode()
    assert timing(schedule.pk) == {"every_seconds": 120, "crontab": None}
