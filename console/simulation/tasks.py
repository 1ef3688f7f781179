"""Celery task: one tick of the simulated world (beat runs it every few seconds)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.conf import settings

from console.simulation import services


def simulation_enabled() -> bool:
    return "simulated" in (getattr(settings, "LOADMASTER_CLUSTER", "simulated"),
                           getattr(settings, "LOADMASTER_CLOUD", "simulated"))


# Idempotent (every step fires on a due time kept in the database) and serialised by the state row
# lock, so an overlapping or repeated run is harmless; no retry, the next beat is the retry.
@shared_task(ignore_result=True, time_limit=60, soft_time_limit=50)
def tick() -> dict[str, Any] | None:
    if not simulation_enabled():
        return None
    return services.simulation_tick().as_dict()
