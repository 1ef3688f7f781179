"""The NodePool page's coverage card: the instance types the pool admits that a commitment or reservation covers.
Registered with the fleet's NodePool page from console.control's AppConfig.ready (the fleet and the commitments app
import no adapter code for it)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from console.fleet.models import NodePool


def coverage_card(pool: NodePool) -> dict[str, Any]:
    """The instance types the pool admits (their labels compatible with its requirements) that a commitment or
    reservation covers (console/commitments/coverage.py)."""
    from console import adapters
    from console.commitments import coverage
    from packing import api

    try:
        (engine_pool,) = adapters.cluster_inputs(pods=(), nodes=(), nodepools=[pool]).nodepools
        types = [it for it in adapters.instance_types()
                 if engine_pool.requirements.compatible(api.Requirements.from_labels(it.labels))]
    except Exception as exc:  # noqa: BLE001 - a pool the engine cannot read: the page shows the rest
        return {"rows": None, "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"rows": coverage.coverage_by_type(types, now=timezone.now()), "error": ""}
