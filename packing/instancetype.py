"""Instance types and their offerings (zone x capacity type x price x availability)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from packing.resources import Resources

__all__ = ["CAPACITY_TYPE_ON_DEMAND", "CAPACITY_TYPE_SPOT", "InstanceType", "Offering"]

CAPACITY_TYPE_SPOT = "spot"
CAPACITY_TYPE_ON_DEMAND = "on-demand"


@dataclass(frozen=True)
class Offering:
    zone: str
    capacity_type: str
    price: float | None
    available: bool = True
    price_source: str = ""


@dataclass(frozen=True)
class InstanceType:
    name: str
    capacity: Resources
    overhead: Resources
    # Zone and capacity type are deliberately absent: they belong to the offering, not the type.
    labels: Mapping[str, str] = field(default_factory=dict)
    offerings: tuple[Offering, ...] = ()

    @cached_property
    def allocatable(self) -> Resources:
        # computed once: the fields are frozen (cached_property stores it in the instance dict directly)
        return (self.capacity - self.overhead).clamp_nonnegative()

    def __hash__(self) -> int:
        return hash(self.name)
