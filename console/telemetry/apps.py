from __future__ import annotations

from django.apps import AppConfig


class TelemetryConfig(AppConfig):
    """What the control loops record about the cluster and about themselves, read by the dashboards,
    the alerts, the NodePool pages and /metrics. It imports no other console app, so every app can
    read it and the apps' imports point one way (see tests/telemetry/test_app_graph.py)."""

    name = "console.telemetry"
    label = "telemetry"
    verbose_name = "Telemetry"
    default_auto_field = "django.db.models.BigAutoField"
