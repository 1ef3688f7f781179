from __future__ import annotations

from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "console.alerts"
    label = "alerts"
    default_auto_field = "django.db.models.BigAutoField"
