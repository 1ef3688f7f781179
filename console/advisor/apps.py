from __future__ import annotations

from django.apps import AppConfig


class AdvisorConfig(AppConfig):
    name = "console.advisor"
    label = "advisor"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from console.advisor.services import alert_evaluate
        from console.alerts.models import AlertRule
        from console.alerts.services import rule_evaluator_register

        rule_evaluator_register(kind=AlertRule.ADVISOR, evaluator=alert_evaluate)
