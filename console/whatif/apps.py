from __future__ import annotations

from django.apps import AppConfig


class WhatIfConfig(AppConfig):
    name = "console.whatif"
    label = "whatif"
    verbose_name = "What-if and explanations"
    default_auto_field = "django.db.models.BigAutoField"
