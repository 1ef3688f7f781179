"""Which instance types the fleet's commitments and capacity reservations cover, and at what price (issue 19): the
catalog page's and the NodePool page's "Covered by" column.

For each type: each Reserved Instance and Savings Plan in force that covers it (packing.commitmentpricing's rules:
CommitmentBook.units, AWS's order of application) and each capacity reservation of it an EC2NodeClass selects
(console/control CapacityReservationStatus, the last sync). What is left of each is the metrics loop's last minute
(telemetry.CommitmentSample, the live nodes' use): unknown until a minute is recorded. The effective price is the
engine's marginal price of one more node: 0 while what is left holds the node whole, the on-demand price times the
uncovered share when it holds part of it, on-demand once nothing is left; a reservation's is Karpenter's reserved
offering price (the reservation is paid for whether used or not). The plan rate is what a Savings Plan charges
against its commitment for the node (on-demand x (1 - rate)).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Max

from console import adapters
from console.control.models import CapacityReservationStatus
from console.control.reservations import RESERVED_PRICE_DIVISOR
from console.telemetry.models import CommitmentSample
from packing import api

ON_DEMAND = "on-demand"


@dataclass(frozen=True)
class TypeCoverage:
    by: str                        # the commitment's name or the reservation's id
    kind: str                      # a CommitmentSample kind
    zone: str                      # "" for every zone
    unit: str                      # "instances", "normalized units", "$/h"
    units_per_node: float          # what one node of the type takes of it
    on_demand: float | None        # the type's on-demand list price
    plan_rate: float | None        # a Savings Plan's charge for the node against its commitment
    left: float | None             # at the last recorded minute; None: not recorded yet (unknown)

    @property
    def kind_display(self) -> str:
        return dict(CommitmentSample.KINDS).get(self.kind, self.kind)

    @property
    def effective_price(self) -> float | None:
        """The marginal price of one more node of the type on this commitment now; None when unknown."""
        if self.kind in (CommitmentSample.RESERVATION, CommitmentSample.CAPACITY_BLOCK):
            if self.left is not None and self.left < 1:
                return None if self.on_demand is None else self.on_demand   # full: the node launches on-demand
            return None if self.on_demand is None else self.on_demand / RESERVED_PRICE_DIVISOR
        if self.left is None or self.on_demand is None:
            return None
        if self.left >= self.units_per_node:
            return 0.0
        return self.on_demand * (1.0 - max(0.0, self.left) / self.units_per_node)


def _on_demand(it: api.InstanceType, zone: str | None) -> float | None:
    prices = [o.list_price if o.list_price is not None else o.price for o in it.offerings
              if o.capacity_type == ON_DEMAND and o.coverage is None and (zone is None or o.zone == zone)]
    return min((p for p in prices if p is not None), default=None)


def _left_now() -> dict[tuple[str, str], float]:
    at = CommitmentSample.objects.aggregate(m=Max("at"))["m"]
    if at is None:
        return {}
    return {(s.kind, s.name): s.left for s in CommitmentSample.objects.filter(at=at)}


def coverage_by_type(types: Iterable[api.InstanceType], *, now: datetime,
                     commitments: Sequence[api.Commitment] | None = None) -> dict[str, list[TypeCoverage]]:
    """{type name: what covers it}, only the types something covers; `commitments` default to the stored ones."""
    book = api.CommitmentBook(adapters.commitments() if commitments is None else commitments, now)
    left = _left_now()
    reservations: dict[str, list[CapacityReservationStatus]] = {}
    seen: set[str] = set()
    for r in CapacityReservationStatus.objects.order_by("reservation_id", "-synced_at"):
        if r.reservation_id not in seen:
            seen.add(r.reservation_id)
            reservations.setdefault(r.instance_type, []).append(r)
    out: dict[str, list[TypeCoverage]] = {}
    for it in types:
        rows: list[TypeCoverage] = []
        for pool in book.pools:
            c = pool.c
            od = _on_demand(it, c.zone)
            if od is None and c.kind != api.CommitmentKind.RESERVED_INSTANCES:
                continue  # a Savings Plan covers a share of the on-demand price: no price, nothing to cover
            units = book.units(c, it.name, dict(it.labels), c.zone or "", od or 0.0)
            if units is None or (units <= 0 and c.kind == api.CommitmentKind.RESERVED_INSTANCES):
                continue
            plan_rate = units if c.kind != api.CommitmentKind.RESERVED_INSTANCES else None
            rows.append(TypeCoverage(c.name, c.kind.value, c.zone or "", pool.unit, units, od, plan_rate,
                                     left.get((c.kind.value, c.name))))
        for r in reservations.get(it.name, []):
            block = r.type == CapacityReservationStatus.CAPACITY_BLOCK
            kind = CommitmentSample.CAPACITY_BLOCK if block else CommitmentSample.RESERVATION
            rows.append(TypeCoverage(r.reservation_id, kind, r.zone, "instances", 1.0, _on_demand(it, r.zone), None,
                                     float(max(0, r.available))))
        if rows:
            out[it.name] = rows
    return out


def nodepool_types(*, nodepool: object, types: Iterable[api.InstanceType]) -> list[api.InstanceType]:
    """The types a NodePool's requirements admit (its labels' requirements compatible with the pool's)."""
    pools = adapters.cluster_inputs(pods=(), nodes=(), nodepools=[nodepool]).nodepools
    if not pools:
        return []
    reqs = pools[0].requirements
    return [it for it in types if reqs.compatible(api.Requirements.from_labels(it.labels))]
