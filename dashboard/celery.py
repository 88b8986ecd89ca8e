"""The Celery app: Redis as broker (settings.CELERY_BROKER_URL, from REDIS_URL), Django's
settings under the CELERY_ namespace, and django-celery-beat's DatabaseScheduler so schedules
live in the database and operators edit them from the maintenance page.

    celery -A tasks worker -l info
    celery -A tasks beat -l info      (the scheduler comes from CELERY_BEAT_SCHEDULER)
"""

from __future__ import annotations

import importlib.util
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

app = Celery("brokerd_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")

# tasks/ is not a Django app, so its modules are listed; spark.py belongs to the Spark loads
# and is included once it exists.
_MODULES = ["tasks.maintenance", "tasks.history", "tasks.spark", "tasks.spark_reconcile"]
app.conf.include = [m for m in _MODULES if importlib.util.find_spec(m) is not None]
