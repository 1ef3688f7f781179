"""The Celery application. Its configuration lives in settings (CELERY_* names)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

app = Celery("loadmaster")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
