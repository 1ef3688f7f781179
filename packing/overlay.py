"""Karpenter's NodeOverlay (karpenter.sh/v1alpha1): price and capacity adjustments per selected instance type.

An overlay selects the offerings whose labels (the instance type's labels, its `node.kubernetes.io/instance-type`,
and the offering's zone, capacity type and capacity reservation id) satisfy every one of its requirements; an
overlay without requirements selects every offering. Its `price` replaces the price of each offering it selects,
its `priceAdjustment` changes it ("+0.1" adds $0.10/h, "-10%" takes 10 % off; never below 0), and its `capacity`
sets extended resources on each type it selects an offering of (a hugepages resource also takes its size out of
the type's allocatable memory, as Karpenter does).

Several overlays on one offering or one resource are resolved as Karpenter does: overlays are ordered by weight,
highest first, and at equal weight the name later in the alphabet first; the first overlay in that order to set
an offering's price, or a type's resource, wins it, per offering and per resource (a lower weight never
overrides, and only fills what is left). An overlay that would set a price or a resource that an overlay of the
same weight already set is a conflict: it is not applied at all (Karpenter marks it ValidationSucceeded=False)
and is reported in OverlayResult.conflicts.

Applying is pure: the catalog passed in is not changed; types no overlay selects are returned as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from packing.instancetype import InstanceType, Offering
from packing.nodepool import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL
from packing.requirements import Requirements
from packing.resources import MEMORY, Resources

__all__ = [
    "CAPACITY_RESERVATION_ID_LABEL",
    "HUGEPAGES_PREFIX",
    "NodeOverlay",
    "OverlayConflict",
    "OverlayResult",
    "adjusted_price",
    "apply_overlays",
    "ordered",
    "resolve_overlays",
]

CAPACITY_RESERVATION_ID_LABEL = "karpenter.k8s.aws/capacity-reservation-id"
HUGEPAGES_PREFIX = "hugepages-"


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


@dataclass(frozen=True)
class OverlayConflict:
    """`overlay` was not applied: it sets what `winner`, of the same weight and first in Karpenter's order,
    already set on `instance_type` (`what`: "price" or a resource name)."""

    overlay: str
    winner: str
    instance_type: str
    what: str

    def __str__(self) -> str:
        return (
            f"NodeOverlay {self.overlay} not applied: it conflicts with {self.winner} (same weight) on the "
            f"{self.what} of {self.instance_type}"
        )


@dataclass(frozen=True)
class OverlayResult:
    types: list[InstanceType]
    conflicts: list[OverlayConflict]
    # per overlay name: how many offerings it priced and how many types it gave capacity to
    applied: Mapping[str, tuple[int, int]]


def ordered(overlays: Sequence[NodeOverlay]) -> list[NodeOverlay]:
    """Karpenter's OrderByWeight: higher weight first; at equal weight the name later in the alphabet first."""
    return sorted(overlays, key=lambda o: (o.weight, o.name), reverse=True)


def adjusted_price(price: float | None, overlay: NodeOverlay) -> float | None:
    """The offering's price under `overlay` (Karpenter's AdjustedPrice): the fixed price, or the adjustment
    ("+0.1", "-10%") applied to the price, never below 0. An unknown price stays unknown under an adjustment; a
    fixed price gives it one (an operator who states a price knows it)."""
    if overlay.price is not None:
        return overlay.price
    change = overlay.price_adjustment
    if not change or price is None:
        return price
    if change.endswith("%"):
        value = price * (1 + float(change[:-1]) / 100)
    else:
        value = price + float(change)
    return round(max(value, 0.0), 9)


def _offering_labels(it: InstanceType, off: Offering) -> dict[str, str]:
    labels = dict(it.labels)
    labels.setdefault(INSTANCE_TYPE_LABEL, it.name)
    labels[ZONE_LABEL] = off.zone
    labels[CAPACITY_TYPE_LABEL] = off.capacity_type
    if off.reservation is not None:
        labels[CAPACITY_RESERVATION_ID_LABEL] = off.reservation.id
    return labels


def _sets_price(o: NodeOverlay) -> bool:
    return o.price is not None or o.price_adjustment is not None


def resolve_overlays(types: Sequence[InstanceType], overlays: Sequence[NodeOverlay]) -> OverlayResult:
    """The catalog with `overlays` applied, the conflicts that kept some of them out, and what each applied."""
    if not overlays:
        return OverlayResult(list(types), [], {})
    order = ordered(overlays)
    labels = [[_offering_labels(it, off) for off in it.offerings] for it in types]
    # per type index: per offering index, the overlay that priced it; per resource, the overlay that set it
    price_owner: dict[tuple[int, int], NodeOverlay] = {}
    capacity_owner: dict[tuple[int, str], NodeOverlay] = {}
    conflicts: list[OverlayConflict] = []
    applied: dict[str, tuple[int, int]] = {}
    for ov in order:
        priced: list[tuple[int, int]] = []
        sized: list[tuple[int, str]] = []
        conflict: OverlayConflict | None = None
        for ti, it in enumerate(types):
            selected = [oi for oi, lab in enumerate(labels[ti]) if ov.requirements.matches(lab)]
            if not selected:
                continue
            if _sets_price(ov):
                for oi in selected:
                    owner = price_owner.get((ti, oi))
                    if owner is None:
                        priced.append((ti, oi))
                    elif owner.weight == ov.weight and conflict is None:
                        conflict = OverlayConflict(ov.name, owner.name, it.name, "price")
            for key in ov.capacity:
                owner = capacity_owner.get((ti, key))
                if owner is None:
                    sized.append((ti, key))
                elif owner.weight == ov.weight and conflict is None:
                    conflict = OverlayConflict(ov.name, owner.name, it.name, key)
            if conflict is not None:
                break
        if conflict is not None:
            conflicts.append(conflict)  # all or nothing, as Karpenter: none of its values is applied
            continue
        for k in priced:
            price_owner[k] = ov
        for r in sized:
            capacity_owner[r] = ov
        if priced or sized:
            applied[ov.name] = (len(priced), len({ti for ti, _ in sized}))
    touched = {ti for ti, _ in price_owner} | {ti for ti, _ in capacity_owner}
    out: list[InstanceType] = []
    for ti, it in enumerate(types):
        out.append(_overlaid(ti, it, price_owner, capacity_owner) if ti in touched else it)
    return OverlayResult(out, conflicts, applied)


def _overlaid(
    ti: int,
    it: InstanceType,
    price_owner: Mapping[tuple[int, int], NodeOverlay],
    capacity_owner: Mapping[tuple[int, str], NodeOverlay],
) -> InstanceType:
    sizes = {key: ov for (t, key), ov in capacity_owner.items() if t == ti}
    offerings = []
    for oi, off in enumerate(it.offerings):
        ov = price_owner.get((ti, oi))
        names = sorted({o.name for o in sizes.values()} | ({ov.name} if ov is not None else set()))
        if ov is not None:
            # price_source keeps saying where the price it adjusts came from ("estimate" is shown as such)
            off = dataclasses.replace(off, price=adjusted_price(off.price, ov))
        if names:
            off = dataclasses.replace(off, overlays=tuple(names))
        offerings.append(off)
    capacity, overhead = it.capacity, it.overhead
    if sizes:
        values = capacity.as_dict()
        hugepages = 0
        for key, ov in sizes.items():
            values[key] = ov.capacity[key]
            if key.startswith(HUGEPAGES_PREFIX):
                hugepages += ov.capacity[key]
        capacity = Resources(values)
        if hugepages:
            overhead = overhead + Resources({MEMORY: hugepages})
    return dataclasses.replace(it, capacity=capacity, overhead=overhead, offerings=tuple(offerings))


def apply_overlays(types: Sequence[InstanceType], overlays: Sequence[NodeOverlay]) -> list[InstanceType]:
    """`types` with `overlays` applied (resolve_overlays without the report)."""
    if not overlays:
        return list(types)
    return resolve_overlays(types, overlays).types
