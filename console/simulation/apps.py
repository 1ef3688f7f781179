from __future__ import annotations

from django.apps import AppConfig


class SimulationAppConfig(AppConfig):
    name = "console.simulation"
    label = "simulation"
    verbose_name = "Simulation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from console.simulation import checks  # noqa: F401 - registers the settings check
