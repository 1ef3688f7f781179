"""History tasks: thin, each builds the backend and calls one service."""

from __future__ import annotations

from celery import shared_task

from console.backends.factory import cluster_backend
from console.history import services


@shared_task(ignore_result=True, time_limit=60, soft_time_limit=50)
def observe() -> None:
    services.history_observe(cluster=cluster_backend())


@shared_task(ignore_result=True, time_limit=120, soft_time_limit=100)
def record_prices() -> None:
    services.history_record_prices()


@shared_task(ignore_result=True, time_limit=600, soft_time_limit=540)
def prune() -> None:
    services.history_prune()
