"""Celery tasks: thin wrappers that call one service each (the loops arrive with issue 6)."""

from __future__ import annotations

import socket

from celery import shared_task
from django.utils import timezone

from console.fleet.models import Heartbeat


@shared_task(ignore_result=True, time_limit=30)
def heartbeat() -> None:
    Heartbeat.objects.update_or_create(
        name="beat", defaults={"at": timezone.now(), "worker": socket.gethostname()})
