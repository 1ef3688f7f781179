from __future__ import annotations

from django.apps import AppConfig


class AdvisorConfig(AppConfig):
    name = "console.advisor"
    label = "advisor"
    default_auto_field = "django.db.models.BigAutoField"
