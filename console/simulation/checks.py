"""A system check, so a bad LOADMASTER_SIM_* value stops `manage.py check`/runserver/celery at start-up
with the variable's name instead of failing the first tick."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured


@checks.register()
def simulation_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from console.simulation.config import SimulationConfig

    try:
        SimulationConfig.from_settings()
    except ImproperlyConfigured as e:
        return [checks.Error(str(e), id="simulation.E001")]
    return []
