"""Which instance types the fleet's commitments and capacity reservations cover, and at what price (issue 19): the
catalog page's and the NodePool page's "Covered by" column.

For each type: each Reserved Instance and Savings Plan in force that covers it (packing.commitmentpricing's rules:
CommitmentBook.units, AWS's order of application) and each capacity reservation of it the metrics loop saw in its
last minute (telemetry.CommitmentSample: the reservations the EC2NodeClasses select, as last synced). What is left
of each is that minute's (the live nodes' use): unknown until a minute is recorded. The effective price is the
marginal price of one more node on the bill: 0 while what is left holds the node whole, the on-demand price times
the uncovered share when it holds part of it, on-demand once nothing is left; on a reservation with a free
instance 0 (the reservation is billed whether used or not). The plan rate is what a Savings Plan charges against
its commitment for the node (on-demand x (1 - rate)).

It reads only this app's rows and telemetry's, so the fleet and catalog pages can import it without an import
cycle between the apps (tests/telemetry/test_app_graph.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Max

from console.commitments.models import Commitment
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
            if self.left is None:
                return None
            return 0.0 if self.left >= 1 else self.on_demand   # full: the node launches on-demand
        if self.left is None or self.on_demand is None:
            return None
        if self.left >= self.units_per_node:
            return 0.0
        return self.on_demand * (1.0 - max(0.0, self.left) / self.units_per_node)


def _on_demand(it: api.InstanceType, zone: str | None) -> float | None:
    prices = [o.list_price if o.list_price is not None else o.price for o in it.offerings
              if o.capacity_type == ON_DEMAND and o.coverage is None and (zone is None or o.zone == zone)]
    return min((p for p in prices if p is not None), default=None)


def _last_minute() -> list[CommitmentSample]:
    at = CommitmentSample.objects.aggregate(m=Max("at"))["m"]
    return [] if at is None else list(CommitmentSample.objects.filter(at=at))


def stored_commitments() -> list[api.Commitment]:
    """The Commitment rows as the engine reads them (console.adapters.commitments, without the shared module): a
    row the engine cannot read is left out."""
    out = []
    for row in Commitment.objects.all():
        try:
            out.append(row.to_packing())
        except api.InputError:
            continue
    return out


def coverage_by_type(types: Iterable[api.InstanceType], *, now: datetime,
                     commitments: Sequence[api.Commitment] | None = None) -> dict[str, list[TypeCoverage]]:
    """{type name: what covers it}, only the types something covers; `commitments` default to the stored ones."""
    book = api.CommitmentBook(stored_commitments() if commitments is None else commitments, now)
    minute = _last_minute()
    left = {(r.kind, r.name): r.left for r in minute}
    reservations: dict[str, list[CommitmentSample]] = {}
    for r in minute:
        if r.kind in (CommitmentSample.RESERVATION, CommitmentSample.CAPACITY_BLOCK) and r.instance_type:
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
        for r in sorted(reservations.get(it.name, []), key=lambda r: r.name):
            rows.append(TypeCoverage(r.name, r.kind, r.zone, "instances", 1.0, _on_demand(it, r.zone or None), None,
                                     r.left))
        if rows:
            out[it.name] = rows
    return out
