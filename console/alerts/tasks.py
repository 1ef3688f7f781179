from __future__ import annotations

from celery import shared_task

from console.alerts import services


@shared_task(name="console.alerts.tasks.evaluate_alerts", ignore_result=True)
def evaluate_alerts() -> int:
    # Thin: all logic lives in services so it is tested without Celery.
    return services.evaluate_all()
