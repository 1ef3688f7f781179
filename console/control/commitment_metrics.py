"""The commitments' minute (issue 19, "Where operators see it"): for the metrics loop, which live nodes the
Reserved Instances and Savings Plans cover and how much of each the nodes use, the capacity reservations' used and
free instances, and what the unused part of each costs per hour (telemetry.CommitmentSample).

The nodes take their commitments as the engine's existing fleet does (packing.commitmentpricing.CommitmentBook:
AWS's order of application, on-demand nodes by name, one commitment per node); a node covered for a fraction f of
its units has f of its price paid by the commitment (covered_per_hour) and the rest left in its effective cost, so
the sample's cost_per_hour = effective_cost_per_hour + the covered_per_hour of every commitment.

Unused $/h: a Savings Plan's unused hourly commitment (it bills whether used or not); a Reserved Instance's unused
instances (or normalized units) at the covered type's on-demand price, the value the bill pays without a node to use
it; an On-Demand Capacity Reservation's free instances at the type's on-demand price (AWS bills a reservation at
the On-Demand rate whether instances run in it or not); unknown (null) for a Capacity Block (paid up front, its
price not recorded) and wherever the type's on-demand price is not in the catalog.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from console.control.live_cluster import NodeRow
from console.control.models import CapacityReservationStatus
from console.control.reservations import LABEL_RESERVATION_ID
from console.telemetry.models import CommitmentSample
from packing.api import (
    CAPACITY_TYPE_ON_DEMAND,
    NORMALIZATION_FACTORS,
    Commitment,
    CommitmentBook,
    CommitmentKind,
    InstanceType,
    family_and_size,
)


@dataclass
class CommitmentMinute:
    """What record() found: each node's effective price (its price less the share a commitment pays) and the
    rows written."""

    effective: dict[str, float] = field(default_factory=dict)
    samples: list[CommitmentSample] = field(default_factory=list)


def _dollars(value: float) -> Decimal:
    return Decimal(str(round(value, 6)))


def _money(value: float | None) -> Decimal | None:
    return None if value is None else _dollars(value)


def on_demand_price(types: Mapping[str, InstanceType], itype: str, zone: str | None) -> float | None:
    """The catalog's on-demand list price of a type (in `zone`, else its lowest over zones); None when unknown."""
    it = types.get(itype)
    if it is None:
        return None
    prices = [o.list_price if o.list_price is not None else o.price for o in it.offerings
              if o.capacity_type == CAPACITY_TYPE_ON_DEMAND and o.coverage is None and o.price is not None
              and (zone is None or o.zone == zone)]
    return min((p for p in prices if p is not None), default=None)


def _unused_value(c: Commitment, left: float, types: Mapping[str, InstanceType]) -> float | None:
    if c.kind != CommitmentKind.RESERVED_INSTANCES:
        return left  # $/h of hourly commitment
    if left <= 0:
        return 0.0
    if c.instance_type is None:
        return None  # a size-flexible RI of normalized units with no size: no type to price a unit by
    od = on_demand_price(types, c.instance_type, c.zone)
    if od is None:
        return None
    if c.instance_family is None:
        return left * od
    factor = NORMALIZATION_FACTORS.get(family_and_size(c.instance_type)[1])
    return None if not factor else left / factor * od


def commitments_cover(nodes: Sequence[NodeRow], catalog: Sequence[InstanceType],
                      commitments: Iterable[Commitment], now: datetime,
                      ) -> tuple[dict[str, tuple[str, float]], list[tuple[Commitment, str, float, float]]]:
    """Which live node each commitment covers: {node: (commitment, covered fraction)}, and per commitment (in
    AWS's order) (commitment, unit, total, used)."""
    book = CommitmentBook(commitments, now)
    types = {t.name: t for t in catalog}
    covered: dict[str, tuple[str, float]] = {}
    for n in sorted(nodes, key=lambda n: n.name):
        if n.capacity_type != CAPACITY_TYPE_ON_DEMAND:
            continue
        it = types.get(n.instance_type)
        od = on_demand_price(types, n.instance_type, n.zone) if it is not None else None
        if it is None or od is None:
            continue
        hit = book.cover(it.name, dict(it.labels), n.zone, od)
        if hit is not None:
            covered[n.name] = (hit[0].c.name, book.consume(*hit, existing=True))
    uses = [(p.c, p.unit, p.total, p.used_by_existing) for p in book.pools]
    return covered, uses


def record(*, nodes: Sequence[NodeRow], catalog: Sequence[InstanceType], commitments: Iterable[Commitment],
           at: datetime) -> CommitmentMinute:
    """Write this minute's CommitmentSample rows (replacing any of the same minute) and return each node's
    effective price."""
    types = {t.name: t for t in catalog}
    covered, uses = commitments_cover(nodes, catalog, commitments, at)
    out = CommitmentMinute()
    paid: dict[str, float] = {}
    count: dict[str, int] = {}
    for n in nodes:
        if n.price is None:
            continue
        name, frac = covered.get(n.name, ("", 0.0))
        out.effective[n.name] = n.price * (1.0 - frac)
        if name:
            paid[name] = paid.get(name, 0.0) + n.price * frac
            count[name] = count.get(name, 0) + 1
    CommitmentSample.objects.filter(at=at).delete()
    rows = [CommitmentSample(at=at, kind=c.kind.value, name=c.name, unit=unit, total=total, used=used,
                             covered_nodes=count.get(c.name, 0), covered_per_hour=_dollars(paid.get(c.name, 0.0)),
                             unused_per_hour=_money(_unused_value(c, max(0.0, total - used), types)))
            for c, unit, total, used in uses]
    on_reservation: dict[str, int] = {}
    for n in nodes:
        rid = ((n.claim.labels or {}) if n.claim is not None else {}).get(LABEL_RESERVATION_ID)
        if rid:
            on_reservation[rid] = on_reservation.get(rid, 0) + 1
    seen: set[str] = set()
    # one row per reservation: several EC2NodeClasses may select the same one; the latest sync speaks for it
    for r in CapacityReservationStatus.objects.order_by("reservation_id", "-synced_at"):
        if r.reservation_id in seen:
            continue
        seen.add(r.reservation_id)
        block = r.type == CapacityReservationStatus.CAPACITY_BLOCK
        od = None if block else on_demand_price(types, r.instance_type, r.zone)
        free = max(0, r.available)
        rows.append(CommitmentSample(
            at=at, kind=CommitmentSample.CAPACITY_BLOCK if block else CommitmentSample.RESERVATION,
            name=r.reservation_id, instance_type=r.instance_type, zone=r.zone, unit="instances",
            total=float(r.total), used=float(max(0, r.total - free)),
            covered_nodes=on_reservation.get(r.reservation_id, 0),
            unused_per_hour=_money(None if od is None else free * od)))
    out.samples = CommitmentSample.objects.bulk_create(rows)
    return out


def prune(*, before: datetime) -> int:
    deleted, _ = CommitmentSample.objects.filter(at__lt=before).delete()
    return deleted
