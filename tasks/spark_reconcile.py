"""The beat task that ends Spark loads whose Celery worker died (dashboard/core/spark_reconcile.py
says how a dead load is found and ended)."""

from __future__ import annotations

from celery import shared_task

from dashboard.core.spark_reconcile import reconcile_loads

RECONCILE_TASK = "tasks.spark_reconcile.reconcile_spark_loads"


@shared_task(name=RECONCILE_TASK)
def reconcile_spark_loads() -> list[int]:
    """What beat runs every SPARK_RECONCILE_S."""
    return reconcile_loads()
