"""The maintenance page: schedules (django-celery-beat PeriodicTasks behind them) you can
create, edit, enable and delete; runs as they happen (pushed by the Celery tasks over
Channels); "run now". Changes need the operator role and are audited."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.exceptions import NON_FIELD_ERRORS
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from dashboard.core import audit, maintenance
from dashboard.core.live_updates import run_payload
from dashboard.core.models import Cluster, MaintenanceAction, MaintenanceRun, MaintenanceSchedule
from dashboard.core.roles import OPERATE_PERMISSION, VIEW_PERMISSION

from ..api.resources import TOPIC_NAME

RUNS_SHOWN = 50


class TargetForm(forms.Form):
    action = forms.ChoiceField(choices=MaintenanceAction.choices)
    topic = forms.RegexField(
        TOPIC_NAME.pattern, required=False, max_length=249, help_text="empty: every topic"
    )
    partition = forms.IntegerField(required=False, min_value=0, max_value=100_000)

    def clean(self):
        data = super().clean()
        if data.get("partition") is not None and not data.get("topic"):
            raise forms.ValidationError("a partition needs a topic")
        return data


class ScheduleForm(TargetForm):
    every_seconds = forms.IntegerField(
        required=False,
        min_value=10,
        max_value=31 * 86400,
        widget=forms.NumberInput(attrs={"placeholder": "3600"}),
    )
    crontab = forms.CharField(
        required=False,
        max_length=maintenance.CRONTAB_MAX_LENGTH,
        help_text="minute hour day-of-month month day-of-week, e.g. 30 3 * * sun",
    )
    enabled = forms.BooleanField(required=False, initial=True)

    def clean_crontab(self):
        expression = " ".join(self.cleaned_data["crontab"].split())
        if expression:
            try:
                maintenance.crontab_fields(expression)
            except ValueError as exc:
                raise forms.ValidationError(str(exc)) from None
        return expression or None

    def clean(self):
        data = super().clean()
        given = [f for f in ("every_seconds", "crontab") if data.get(f) is not None]
        if len(given) != 1 and not self.errors:
            raise forms.ValidationError("give either an interval (seconds) or a crontab")
        return data


def _schedule_rows(cluster: Cluster, failed: dict | None = None) -> list[dict]:
    """The schedules' rows; the row whose edit failed (`failed`: pk, error, typed) shows
    what was typed and the error beside it."""
    rows = []
    schedules = cluster.schedules.select_related(
        "periodic_task__interval", "periodic_task__crontab"
    ).order_by("pk")
    for schedule in schedules:
        task = schedule.periodic_task
        timing = maintenance.schedule_timing(schedule)
        values = {
            "action": schedule.action,
            "topic": schedule.topic,
            "partition": "" if schedule.partition is None else str(schedule.partition),
            "every_seconds": ""
            if timing["every_seconds"] is None
            else str(timing["every_seconds"]),
            "crontab": timing["crontab"] or "",
            "enabled": schedule.enabled,
        }
        error = warning = None
        if failed is not None and failed["pk"] == schedule.pk:
            typed = failed["typed"]
            values = {k: typed.get(k, "") for k in values}
            values["enabled"] = bool(typed.get("enabled"))
            error, warning = failed.get("error"), failed.get("warning")
        rows.append(
            {
                "schedule": schedule,
                **timing,
                "values": values,
                "error": error,
                "warning": warning,
                "last_run_at": task.last_run_at if task else None,
                "total_runs": task.total_run_count if task else 0,
            }
        )
    return rows


def _render(
    request,
    cluster: Cluster,
    status: int = 200,
    *,
    schedule_form: forms.Form | None = None,
    schedule_warning: str | None = None,
    run_form: forms.Form | None = None,
    failed_row: dict | None = None,
):
    runs = MaintenanceRun.objects.filter(cluster=cluster).select_related("cluster", "requested_by")
    return render(
        request,
        "live/maintenance.html",
        {
            "cluster": cluster,
            "schedules": _schedule_rows(cluster, failed_row),
            "runs": [
                {**run_payload(r), "started_at": r.started_at, "finished_at": r.finished_at}
                for r in runs[:RUNS_SHOWN]
            ],
            "schedule_form": schedule_form or ScheduleForm(),
            "schedule_warning": schedule_warning,
            "run_form": run_form or TargetForm(),
        },
        status=status,
    )


@permission_required(VIEW_PERMISSION, raise_exception=True)
def page(request, cluster_id: str):
    return _render(request, get_object_or_404(Cluster, name=cluster_id))


def form_errors(form: forms.Form) -> str:
    """A form's errors in one line: "topic: Enter a valid value.; partition: ..."."""
    texts = []
    for field, errors in form.errors.items():
        label = "" if field == NON_FIELD_ERRORS else f"{field.replace('_', ' ')}: "
        texts.append(label + " ".join(errors))
    return "; ".join(texts)


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def run_now(request, cluster_id: str):
    cluster = get_object_or_404(Cluster, name=cluster_id)
    form = TargetForm(request.POST)
    if not form.is_valid():
        return _render(request, cluster, 400, run_form=form)
    data = form.cleaned_data
    run = maintenance.create_run(
        cluster, data["action"], data["topic"], data["partition"], user=request.user
    )
    try:
        maintenance.enqueue(run)
        outcome, ok = f"run {run.pk} queued", True
        messages.success(request, f"Run {run.pk} queued: its outcome appears below as it happens.")
    except Exception as exc:  # the queue (Redis) is down: say so on the run itself
        outcome, ok = f"could not queue run {run.pk}: {exc}", False
        messages.error(request, outcome)
    audit.record(request.user, f"maintenance.run.{data['action']}", data["topic"] or "*",
                 cluster=cluster, details={**data, "run": run.pk}, succeeded=ok, result=outcome)  # fmt: skip
    return redirect("maintenance", cluster.name)


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def schedule_save(request, cluster_id: str, schedule_id: int | None = None):
    """Creates or updates a schedule. A refusal renders the page again (HTTP 400) with the
    error beside the form and what was typed; a schedule doing what another already does is
    saved only once the operator confirms it ("Add anyway" / "Save anyway")."""
    cluster = get_object_or_404(Cluster, name=cluster_id)
    if schedule_id is not None:
        get_object_or_404(MaintenanceSchedule, pk=schedule_id, cluster=cluster)
    form = ScheduleForm(request.POST)

    def refused(error: str | None = None, warning: str | None = None):
        if schedule_id is None:
            return _render(request, cluster, 400, schedule_form=form, schedule_warning=warning)
        row = {"pk": schedule_id, "typed": request.POST, "error": error, "warning": warning}
        return _render(request, cluster, 400, failed_row=row)

    if not form.is_valid():
        return refused(error=form_errors(form))
    data = form.cleaned_data
    duplicates = maintenance.duplicate_schedules(
        cluster, data["action"], data["topic"], data["partition"], exclude_pk=schedule_id
    )
    if duplicates and not request.POST.get("allow_duplicate"):
        return refused(warning=maintenance.duplicate_warning(duplicates))
    if schedule_id is None:
        schedule = MaintenanceSchedule(cluster=cluster, created_by=request.user)
    else:
        schedule = get_object_or_404(MaintenanceSchedule, pk=schedule_id, cluster=cluster)
    schedule.action, schedule.topic = data["action"], data["topic"] or ""
    schedule.partition, schedule.enabled = data["partition"], data["enabled"]
    schedule.save()
    maintenance.sync_periodic_task(schedule, data["every_seconds"], data["crontab"])
    action = "maintenance.schedule.create" if schedule_id is None else "maintenance.schedule.update"
    audit.record(request.user, action, f"schedule {schedule.pk}", cluster=cluster,
                 details={**data, "duplicates": [d.pk for d in duplicates]},
                 succeeded=True, result="ok")  # fmt: skip
    verb = "added" if schedule_id is None else "saved"
    note = (
        f" (it repeats {', '.join(f'schedule {d.pk}' for d in duplicates)})" if duplicates else ""
    )
    messages.success(
        request, f"{maintenance.describe_schedule(schedule).capitalize()} {verb}{note}."
    )
    return redirect("maintenance", cluster.name)


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def schedule_delete(request, cluster_id: str, schedule_id: int):
    cluster = get_object_or_404(Cluster, name=cluster_id)
    schedule = get_object_or_404(MaintenanceSchedule, pk=schedule_id, cluster=cluster)
    maintenance.delete_schedule(schedule)
    audit.record(request.user, "maintenance.schedule.delete", f"schedule {schedule_id}",
                 cluster=cluster, succeeded=True, result="ok")  # fmt: skip
    messages.success(request, f"Schedule {schedule_id} deleted.")
    return redirect("maintenance", cluster.name)
