"""The marginal cost of one more node under the fleet's commitments (Reserved Instances, Savings Plans).

The model (docs/commitments.md has it in full):

- Commitments apply in AWS's order: Reserved Instances first (zonal, then regional by instance type, then
  size-flexible by family), then EC2 Instance Savings Plans, then Compute Savings Plans; by name within each.
  A node takes one commitment at most.
- The existing fleet (Nodes and in-flight NodeClaims on on-demand capacity, by name) uses them first.
- A Reserved Instance covers `count` instances of its type; a size-flexible one (`instance_family`) covers
  normalized units: count x the factor of `instance_type`'s size (or count units without a type), a node of
  the family takes its size's factor (AWS's normalization factors, NORMALIZATION_FACTORS).
- A Savings Plan covers on-demand usage of the families or types it has a rate for: a node takes its on-demand
  price x (1 - rate) dollars of the hourly commitment. A type with no rate is not covered.
- What one more node adds to the bill: 0 while the commitment's rest holds the node whole; when the rest
  covers only a fraction f of it, the on-demand price x (1 - f) (the uncovered share is billed on-demand);
  on-demand once nothing is left.

`priced_catalog` gives the solve the commitments' shares as limited on-demand offerings at those marginal
prices (packing.instancetype.Coverage; the solve keeps each within its rest, packing.scheduling.reservations),
so the packer and the bounds price alike; `settle_plan` then works out each NodeClaim's effective price,
what covers it, and each commitment's use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from packing.commitments import Commitment, CommitmentKind
from packing.instancetype import CAPACITY_TYPE_ON_DEMAND, Coverage, InstanceType, Offering
from packing.nodepool import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL, ExistingNodeSpec
from packing.scheduling.results import CommitmentUse, Results

__all__ = [
    "NORMALIZATION_FACTORS",
    "CommitmentBook",
    "existing_prices",
    "family_and_size",
    "priced_catalog",
    "settle_plan",
]

# Regional Reserved Instances' normalization factor per instance size, from AWS's "Amazon EC2 Reserved
# Instances and Other AWS Reservation Models" whitepaper, "Maximizing Utilization with Size Flexibility in
# Regional Reserved Instances", Table 3
# (https://docs.aws.amazon.com/whitepapers/latest/cost-optimization-reservation-models/maximizing-utilization-with-size-flexibility-in-regional-reserved-instances.html).
# A size not in the table (metal, sizes the table does not list) is not covered by a size-flexible RI.
NORMALIZATION_FACTORS: dict[str, float] = {
    "nano": 0.25,
    "micro": 0.5,
    "small": 1.0,
    "medium": 2.0,
    "large": 4.0,
    "xlarge": 8.0,
    "2xlarge": 16.0,
    "4xlarge": 32.0,
    "8xlarge": 64.0,
    "9xlarge": 72.0,
    "10xlarge": 80.0,
    "12xlarge": 96.0,
    "16xlarge": 128.0,
    "24xlarge": 192.0,
    "32xlarge": 256.0,
}

_FAMILY_LABEL = "karpenter.k8s.aws/instance-family"
_SIZE_LABEL = "karpenter.k8s.aws/instance-size"
_EPS = 1e-9


def family_and_size(name: str, labels: dict[str, str] | None = None) -> tuple[str, str]:
    """An instance type's family and size: its labels when it has them, else its name ("m5.large")."""
    labels = labels or {}
    fam, _, size = name.partition(".")
    return labels.get(_FAMILY_LABEL, fam), labels.get(_SIZE_LABEL, size)


def _order(c: Commitment) -> tuple[int, str]:
    """AWS's order of application (docs/commitments.md)."""
    if c.kind == CommitmentKind.RESERVED_INSTANCES:
        rank = 0 if c.zone else (1 if c.instance_family is None else 2)
    elif c.kind == CommitmentKind.EC2_INSTANCE_SAVINGS_PLAN:
        rank = 3
    else:
        rank = 4
    return rank, c.name


@dataclass
class _Pool:
    c: Commitment
    total: float
    unit: str
    left: float
    used_by_existing: float = 0.0
    used_by_plan: float = 0.0


class CommitmentBook:
    """The commitments of one run, what each node would take of them and what is left of each."""

    def __init__(self, commitments: Iterable[Commitment], at: datetime | None = None) -> None:
        self.pools: list[_Pool] = []
        for c in sorted(commitments, key=_order):
            if at is not None and ((c.starts is not None and at < c.starts) or (c.ends is not None and at >= c.ends)):
                continue
            if c.kind == CommitmentKind.RESERVED_INSTANCES:
                total, unit = float(c.count), "instances"
                if c.instance_family is not None:
                    unit = "normalized units"
                    if c.instance_type is not None:
                        nf = NORMALIZATION_FACTORS.get(family_and_size(c.instance_type)[1])
                        total = c.count * nf if nf is not None else 0.0
            else:
                total, unit = float(c.hourly_commitment or 0.0), "$/h"
            self.pools.append(_Pool(c, total, unit, total))

    def __bool__(self) -> bool:
        return bool(self.pools)

    @staticmethod
    def units(c: Commitment, type_name: str, labels: dict[str, str], zone: str, od_price: float) -> float | None:
        """What one on-demand node of this type in this zone takes of `c`; None when `c` does not cover it."""
        if c.zone is not None and c.zone != zone:
            return None
        fam, size = family_and_size(type_name, labels)
        if c.kind == CommitmentKind.RESERVED_INSTANCES:
            if c.instance_family is not None:
                return NORMALIZATION_FACTORS.get(size) if fam == c.instance_family else None
            return 1.0 if type_name == c.instance_type else None
        rate = c.rates.get(type_name, c.rates.get(fam))
        if rate is None:
            return None
        if c.kind == CommitmentKind.EC2_INSTANCE_SAVINGS_PLAN and c.instance_family not in (None, fam):
            return None
        return od_price * (1.0 - rate)

    def cover(self, type_name: str, labels: dict[str, str], zone: str, od_price: float) -> tuple[_Pool, float] | None:
        """The first commitment (in AWS's order) with something left that covers the node, and the units the
        node takes of it; the node's effective price is od_price x (1 - min(1, left / units))."""
        for p in self.pools:
            u = self.units(p.c, type_name, labels, zone, od_price)
            if u is not None and u > _EPS and p.left > _EPS:
                return p, u
        return None

    def consume(self, pool: _Pool, units: float, *, existing: bool) -> float:
        """Take up to `units` of the pool; returns the fraction of the node covered."""
        taken = min(pool.left, units)
        pool.left -= taken
        if existing:
            pool.used_by_existing += taken
        else:
            pool.used_by_plan += taken
        return taken / units if units > _EPS else 1.0

    def use_existing(self, nodes: Sequence[ExistingNodeSpec], catalog: Sequence[InstanceType]) -> dict[str, float]:
        """The existing fleet's on-demand nodes take their commitments first (by name); returns the effective
        price of each node a commitment covers (what removing it takes off the bill)."""
        out: dict[str, float] = {}
        types = {it.name: it for it in catalog}
        for n in sorted(nodes, key=lambda n: n.name):
            if n.labels.get(CAPACITY_TYPE_LABEL) != CAPACITY_TYPE_ON_DEMAND:
                continue
            it = types.get(n.labels.get(INSTANCE_TYPE_LABEL, ""))
            zone = n.labels.get(ZONE_LABEL, "")
            od = _on_demand_price(it, zone) if it is not None else None
            if it is None or od is None:
                continue
            hit = self.cover(it.name, dict(it.labels), zone, od)
            if hit is not None:
                frac = self.consume(*hit, existing=True)
                out[n.name] = round(od * (1.0 - frac), 9) if frac < 1.0 else 0.0
        return out

    def uses(self) -> list[CommitmentUse]:
        return [
            CommitmentUse(p.c.name, p.c.kind.value, p.unit, p.total, p.used_by_existing, p.used_by_plan)
            for p in self.pools
        ]


def _on_demand_price(it: InstanceType, zone: str) -> float | None:
    for o in it.offerings:
        if o.zone == zone and o.capacity_type == CAPACITY_TYPE_ON_DEMAND and o.coverage is None and o.price is not None:
            return o.list_price if o.list_price is not None else o.price
    return None


def existing_prices(
    commitments: Iterable[Commitment],
    nodes: Sequence[ExistingNodeSpec],
    catalog: Sequence[InstanceType],
    at: datetime | None = None,
) -> dict[str, float]:
    """The effective price of each existing node a commitment covers (0 when wholly covered): what removing
    the node takes off the bill, the commitment billing on."""
    return CommitmentBook(commitments, at).use_existing(nodes, catalog)


def priced_catalog(
    catalog: Sequence[InstanceType],
    commitments: Iterable[Commitment],
    existing: Sequence[ExistingNodeSpec],
    at: datetime | None = None,
) -> list[InstanceType]:
    """The catalog with, next to each on-demand offering a commitment covers, that commitment's share of it:
    an on-demand offering at the marginal price (0 while its rest holds a node whole, else on-demand x the
    uncovered fraction), limited to the rest (Coverage). The existing fleet's use comes off first."""
    book = CommitmentBook(commitments, at)
    if not book:
        return list(catalog)
    book.use_existing(existing, catalog)
    out: list[InstanceType] = []
    for it in catalog:
        extra: list[Offering] = []
        for o in it.offerings:
            if o.capacity_type != CAPACITY_TYPE_ON_DEMAND or o.price is None or o.coverage is not None:
                continue
            for p in book.pools:
                u = book.units(p.c, it.name, dict(it.labels), o.zone, o.price)
                if u is None or u <= _EPS or p.left <= _EPS:
                    continue
                share = min(1.0, p.left / u)
                price = round(o.price * (1.0 - share), 9) if share < 1.0 else 0.0
                extra.append(
                    dataclasses.replace(
                        o,
                        price=price,
                        list_price=o.price,
                        coverage=Coverage(p.c.name, p.left, u if share >= 1.0 else p.left),
                    )
                )
        out.append(dataclasses.replace(it, offerings=(*it.offerings, *extra)) if extra else it)
    return out


def settle_plan(
    res: Results,
    catalog: Sequence[InstanceType],
    commitments: Iterable[Commitment],
    existing: Sequence[ExistingNodeSpec],
    at: datetime | None = None,
) -> None:
    """Each NodeClaim's effective price and what covers it, and each commitment's use (Results.commitments):
    the existing fleet first, then the claims the solve placed on a commitment's share, then the other
    on-demand claims (in plan order) take what is left, partly where the rest does not hold them whole."""
    book = CommitmentBook(commitments, at)
    if not book:
        return
    book.use_existing(existing, catalog)
    types = {it.name: it for it in catalog}
    by_name = {p.c.name: p for p in book.pools}
    rest = []
    for c in res.nodeclaims:
        if c.effective_price_per_hour is None:
            c.effective_price_per_hour = c.price_per_hour
        if c.covered_by and c.covered_by[0] in by_name:
            it = types[c.instance_type]
            pool = by_name[c.covered_by[0]]
            u = book.units(pool.c, it.name, dict(it.labels), c.zone, c.price_per_hour)
            frac = book.consume(pool, u or 0.0, existing=False)
            c.effective_price_per_hour = round(c.price_per_hour * (1.0 - frac), 9) if frac < 1.0 else 0.0
        elif c.capacity_type == CAPACITY_TYPE_ON_DEMAND:
            rest.append(c)
    for c in rest:
        it = types[c.instance_type]
        hit = book.cover(it.name, dict(it.labels), c.zone, c.price_per_hour)
        if hit is None:
            continue
        frac = book.consume(*hit, existing=False)
        c.effective_price_per_hour = round(c.price_per_hour * (1.0 - frac), 9) if frac < 1.0 else 0.0
        c.covered_by = [hit[0].c.name]
    res.commitments = book.uses()
