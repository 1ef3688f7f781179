"""Karpenter's NodeOverlay (karpenter.sh/v1alpha1): price and capacity adjustments per selected instance type.

Only the data type lives here so far; applying overlays to a catalog is issue 19's work."""

from __future__ import annotations

from dataclasses import dataclass, field

from packing.requirements import Requirements
from packing.resources import Resources

__all__ = ["NodeOverlay"]


@dataclass(frozen=True)
class NodeOverlay:
    """`price` replaces the offering price; `price_adjustment` is Karpenter's string form ("+0.1", "-0.05",
    "-10%", "+5%"); at most one of the two is set. `capacity` adds extended resources. Where several overlays
    select one type, the higher weight wins (ties by name, as Karpenter orders them)."""

    name: str
    requirements: Requirements
    price: float | None = None
    price_adjustment: str | None = None
    capacity: Resources = field(default_factory=Resources)
    weight: int = 0
