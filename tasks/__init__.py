"""Celery tasks of the platform: maintenance (retention, compaction), history samples, Spark
loads. `tasks.celery.app` is the Celery app (imported here so `celery -A tasks` finds it)."""

from .celery import app as celery_app

__all__ = ["celery_app"]
