from __future__ import annotations

from django.apps import AppConfig


class DashboardsConfig(AppConfig):
    name = "console.dashboards"
    label = "dashboards"
    default_auto_field = "django.db.models.BigAutoField"
