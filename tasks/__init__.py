"""Celery tasks of the platform: maintenance (retention, compaction), history samples, Spark
loads. The worker and beat start here (`celery -A tasks worker|beat`): `app` is the
platform's Celery app (dashboard/celery.py), with these task modules to load."""

from dashboard.celery import app

# tasks/ is not a Django app, so its modules are listed rather than discovered.
app.conf.include = [
    "tasks.maintenance",
    "tasks.history",
    "tasks.spark",
    "tasks.spark_reconcile",
]

__all__ = ["app"]
