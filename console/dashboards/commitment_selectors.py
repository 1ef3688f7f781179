"""Reads for the Commitments dashboard (issue 19): the Reserved Instances', Savings Plans' and capacity
reservations' use over time (telemetry.CommitmentSample, one row per commitment and minute, written by the metrics
loop: console/control/commitment_metrics.py) and the cluster's effective cost next to its list cost
(MetricSample.effective_cost_per_hour).

Windows up to a day draw every minute; longer ones the mean of each hour. The commitment rows are kept as long as
the minute samples (LOADMASTER_METRICS_MINUTE_RETENTION_DAYS), so a 30-day window shows what is left of them.
Unknown stays unknown: a minute without an effective cost, a commitment whose unused part has no price, is a gap
(None), never $0."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Avg, Count, Max
from django.db.models.functions import TruncHour

from console.backends.aws_reservations import CAPACITY_BLOCK_LEAD_TIME
from console.control.models import CapacityReservationStatus
from console.dashboards.selectors import DEFAULT_WINDOW, is_long, window_start
from console.telemetry.models import CommitmentSample, MetricSample

__all__ = ["CommitmentNow", "CommitmentSeries", "CostPoint", "commitment_series", "commitments_by_kind",
           "commitments_now", "cost_points"]


@dataclass
class CommitmentSeries:
    """One commitment's or reservation's minutes (or hourly means) in the window."""

    kind: str
    name: str
    unit: str
    at: list[datetime] = field(default_factory=list)
    total: list[float] = field(default_factory=list)
    used: list[float] = field(default_factory=list)
    covered_per_hour: list[float] = field(default_factory=list)
    unused_per_hour: list[float | None] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.name} ({dict(CommitmentSample.KINDS).get(self.kind, self.kind)})"

    @property
    def utilization(self) -> list[float | None]:
        """used ÷ total in %, None for a commitment of nothing."""
        return [100 * u / t if t > 0 else None for u, t in zip(self.used, self.total, strict=True)]


@dataclass(frozen=True)
class CostPoint:
    at: datetime
    cost: float
    effective: float | None   # None: not recorded that minute (unknown)

    @property
    def covered(self) -> float | None:
        """$/h of the list cost the commitments paid."""
        return None if self.effective is None else max(0.0, self.cost - self.effective)


def _f(value: Any) -> float | None:
    return None if value is None else float(value)


def commitment_series(*, window: str = DEFAULT_WINDOW, now: datetime) -> list[CommitmentSeries]:
    """Every commitment and reservation seen in the window, by kind then name."""
    qs = CommitmentSample.objects.filter(at__gt=window_start(window, now), at__lte=now)
    rows: Any
    if is_long(window):
        # the hour's mean; an hour with some minutes of unknown unused $/h averages the known ones only when all
        # are known (Count of values = count of rows), else it is unknown
        rows = (qs.annotate(hour=TruncHour("at")).values("kind", "name", "unit", "hour")
                .annotate(t=Avg("total"), u=Avg("used"), c=Avg("covered_per_hour"), x=Avg("unused_per_hour"),
                          n=Count("id"), nx=Count("unused_per_hour"))
                .order_by("kind", "name", "hour"))
        points = [(r["kind"], r["name"], r["unit"], r["hour"], r["t"], r["u"], r["c"],
                   r["x"] if r["nx"] == r["n"] else None) for r in rows]
    else:
        rows = qs.order_by("kind", "name", "at").values_list(
            "kind", "name", "unit", "at", "total", "used", "covered_per_hour", "unused_per_hour")
        points = list(rows)
    by: dict[tuple[str, str], CommitmentSeries] = {}
    for kind, name, unit, at, total, used, covered, unused in points:
        s = by.setdefault((kind, name), CommitmentSeries(kind, name, unit))
        s.at.append(at)
        s.total.append(float(total))
        s.used.append(float(used))
        s.covered_per_hour.append(float(covered or 0))
        s.unused_per_hour.append(_f(unused))
    return list(by.values())


def cost_points(*, window: str = DEFAULT_WINDOW, now: datetime) -> list[CostPoint]:
    """The whole cluster's list and effective cost per minute (or hourly means: an hour with a minute of unknown
    effective cost has an unknown effective mean, the list mean then taken over the same minutes)."""
    qs = MetricSample.objects.filter(nodepool="", at__gt=window_start(window, now), at__lte=now)
    if not is_long(window):
        return [CostPoint(at, float(cost), _f(eff))
                for at, cost, eff in qs.order_by("at").values_list("at", "cost_per_hour", "effective_cost_per_hour")]
    rows = (qs.annotate(hour=TruncHour("at")).values("hour")
            .annotate(c=Avg("cost_per_hour"), e=Avg("effective_cost_per_hour"), n=Count("id"),
                      ne=Count("effective_cost_per_hour")).order_by("hour"))
    return [CostPoint(r["hour"], float(r["c"]), _f(r["e"]) if r["ne"] == r["n"] else None) for r in rows]


@dataclass(frozen=True)
class CommitmentNow:
    """The last recorded minute: its rows, and the totals the tiles show."""

    at: datetime | None
    rows: list[CommitmentSample]
    cost: float | None
    effective: float | None

    @property
    def covered(self) -> float:
        return sum(float(r.covered_per_hour) for r in self.rows)

    @property
    def unused_known(self) -> float:
        return sum(float(r.unused_per_hour) for r in self.rows if r.unused_per_hour is not None)

    @property
    def unused_unknown(self) -> int:
        """How many rows have something unused whose price is unknown (their $ is not in unused_known)."""
        return sum(1 for r in self.rows if r.unused_per_hour is None and r.left > 0)

    @property
    def coverage(self) -> float | None:
        """The share (%) of the list cost the commitments paid; None when the cost or the effective cost is
        unknown or zero."""
        if self.cost is None or self.effective is None or self.cost <= 0:
            return None
        return 100 * (self.cost - self.effective) / self.cost


def commitments_now() -> CommitmentNow:
    at = CommitmentSample.objects.aggregate(m=Max("at"))["m"]
    sample = MetricSample.objects.filter(nodepool="").order_by("-at").first()
    if at is None:
        return CommitmentNow(None, [], None if sample is None else float(sample.cost_per_hour),
                             None if sample is None else _f(sample.effective_cost_per_hour))
    rows = list(CommitmentSample.objects.filter(at=at).order_by("kind", "name"))
    same = MetricSample.objects.filter(nodepool="", at=at).first()
    return CommitmentNow(at, rows, None if same is None else float(same.cost_per_hour),
                         None if same is None else _f(same.effective_cost_per_hour))


def commitments_by_kind(series: list[CommitmentSeries]) -> tuple[list[datetime], dict[str, list[float]]]:
    """(times, {kind: Σ covered $/h at each time}) for Reserved Instances and Savings Plans (the coverage chart's
    stacks); a reservation's nodes are not priced as covered, its use is its utilization."""
    series = [s for s in series if s.kind not in (CommitmentSample.RESERVATION, CommitmentSample.CAPACITY_BLOCK)]
    times = sorted({t for s in series for t in s.at})
    out: dict[str, dict[datetime, float]] = defaultdict(dict)
    for s in series:
        for t, c in zip(s.at, s.covered_per_hour, strict=True):
            out[s.kind][t] = out[s.kind].get(t, 0.0) + c
    return times, {kind: [v.get(t, 0.0) for t in times] for kind, v in out.items()}


@dataclass(frozen=True)
class BlockWindow:
    """A Capacity Block as the commitments page shows it: its window, when its nodes start to be drained (the
    Capacity Block loop's lead time before the end), and whether that is now."""

    reservation_id: str
    nodeclass: str
    instance_type: str
    zone: str
    available: int
    total: int
    starts: datetime | None
    ends: datetime | None
    drain_from: datetime | None
    state: str


def capacity_blocks(*, now: datetime) -> list[BlockWindow]:
    """The Capacity Blocks the EC2NodeClasses' last reservation sync found (console.control's status rows)."""
    out = []
    for r in CapacityReservationStatus.objects.filter(type=CapacityReservationStatus.CAPACITY_BLOCK).order_by(
            "ends", "reservation_id"):
        drain = r.ends - CAPACITY_BLOCK_LEAD_TIME if r.ends is not None else None
        state = ("ended" if r.ends is not None and now >= r.ends else "draining" if drain is not None and now >= drain
                 else "active" if r.starts is None or now >= r.starts else "not started")
        out.append(BlockWindow(r.reservation_id, r.nodeclass_name, r.instance_type, r.zone, r.available, r.total,
                               r.starts, r.ends, drain, state))
    return out
