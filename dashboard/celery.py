"""The Celery app: Redis as broker (settings.CELERY_BROKER_URL, from REDIS_URL), Django's
settings under the CELERY_ namespace, and django-celery-beat's DatabaseScheduler so schedules
live in the database and operators edit them from the maintenance page.

It lives with the Django project, as Celery's Django layout has it: the dashboard queues tasks
through it by name (dashboard/core/maintenance.py, spark_loads.py) without importing them, and
the worker and beat load it through tasks/ (`celery -A tasks worker|beat`), which registers the
task modules.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

app = Celery("brokerd_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")


def queue_task(name: str, *args: object):
    """Queue the task registered under `name` (in tasks/) as its own apply_async would:
    results ignored as CELERY_TASK_IGNORE_RESULT says, and no retrying when the queue (Redis)
    is unreachable: the error is raised for the caller to report. The AsyncResult."""
    return app.send_task(
        name, args=list(args), retry=False, ignore_result=app.conf.task_ignore_result
    )
