"""Instance types and their offerings (zone x capacity type x price x availability)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import cached_property

from packing.resources import Resources

__all__ = [
    "CAPACITY_TYPE_ON_DEMAND",
    "CAPACITY_TYPE_RESERVED",
    "CAPACITY_TYPE_SPOT",
    "Coverage",
    "InstanceType",
    "Offering",
    "Reservation",
    "ReservationType",
]

CAPACITY_TYPE_SPOT = "spot"
CAPACITY_TYPE_ON_DEMAND = "on-demand"
# Karpenter's third capacity type (v1.3+): an On-Demand Capacity Reservation or a Capacity Block
CAPACITY_TYPE_RESERVED = "reserved"


class ReservationType(StrEnum):
    """karpenter.k8s.aws/capacity-reservation-type"""

    DEFAULT = "default"
    CAPACITY_BLOCK = "capacity-block"


@dataclass(frozen=True)
class Reservation:
    """The reservation behind a `reserved` offering: one zone, one instance type, a count of free instances.

    `available` is what is left to launch into now (AvailableInstanceCount); a solve never places more
    NodeClaims on one reservation id than that, across all its claims and the in-flight ones."""

    id: str
    available: int
    capacity: int | None = None  # TotalInstanceCount, when known
    ends: datetime | None = None  # EndDate (always set for a Capacity Block)
    type: ReservationType = ReservationType.DEFAULT
    interruptible: bool = False
    owner_id: str = ""
    # the EC2NodeClasses whose capacityReservationSelectorTerms select it: only NodePools of one of them launch
    # into it (Karpenter resolves reservations per NodeClass); empty = any pool (a plan file names no NodeClass)
    node_classes: frozenset[str] = frozenset()

    def serves(self, node_class: str) -> bool:
        """Whether a NodePool of this NodeClass may launch into the reservation."""
        return not self.node_classes or node_class in self.node_classes


@dataclass(frozen=True)
class Coverage:
    """A commitment's share of an on-demand offering (packing.commitmentpricing): the offering is the same
    capacity, billed against the commitment `pool` (its name) while `budget` lasts; one node takes `units` of it
    (instances, normalized units or $/h at the plan rate)."""

    pool: str
    budget: float
    units: float


@dataclass(frozen=True)
class Offering:
    zone: str
    capacity_type: str
    price: float | None
    available: bool = True
    price_source: str = ""
    # set only on capacity_type == CAPACITY_TYPE_RESERVED offerings
    reservation: Reservation | None = None
    # the NodeOverlays that set its price or its type's capacity (packing.overlay), by name
    overlays: tuple[str, ...] = ()
    # set on the offerings the engine prices at their marginal cost (reserved, or covered by a commitment):
    # `price` is then what one more node adds to the bill, `list_price` what the offering lists at
    list_price: float | None = None
    coverage: Coverage | None = None

    @property
    def limited(self) -> bool:
        """Whether a solve may place only so many nodes on it (a reservation's free count, a commitment's rest)."""
        return self.reservation is not None or self.coverage is not None


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
