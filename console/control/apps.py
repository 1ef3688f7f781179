from __future__ import annotations

from django.apps import AppConfig


class ControlConfig(AppConfig):
    name = "console.control"
    label = "control"
    verbose_name = "Control loops"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from console.control.coverage_card import coverage_card
        from console.control.ondemand_card import on_demand_card
        from console.fleet.views import nodepool_card_register

        nodepool_card_register(name="on_demand_share", card=on_demand_card)
        nodepool_card_register(name="coverage", card=coverage_card)
