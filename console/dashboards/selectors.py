"""Every figure the dashboards draw, computed from MetricSample, NodeClaim and Decision rows.

Views and charts only draw what these return. Rollup: windows of a day or less read the 1-minute
samples; longer windows aggregate them per hour in SQL (TruncHour + Avg/Sum/Count, which SQLite and
PostgreSQL both run), so 30 days of a big cluster come back as at most 720 rows per series."""

from __future__ import annotations

import calendar
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Avg, Count, DateTimeField, Func, IntegerField, Max, Q, Sum
from django.db.models.functions import ExtractMinute, TruncHour
from django.utils import timezone

from console.control.models import MetricSample
from console.fleet.models import Decision, NodeClaim
from packing.quantity import QuantityError, parse_quantity

WINDOWS: dict[str, timedelta] = {
    "1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30),
}
DEFAULT_WINDOW = "24h"
# Up to this window we draw every minute; beyond it, hourly means.
MINUTE_RESOLUTION_UP_TO = timedelta(hours=24)


class HourBucket(Func):
    """The UTC hour of a timestamp, in native SQL. Django's TruncHour runs a Python function per row
    on SQLite (≈7 µs each: 300 ms for 30 days of one pool); SQLite stores UTC text, so the hour is
    its first 13 characters. PostgreSQL has date_trunc; other backends fall back to TruncHour."""

    output_field = DateTimeField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="(substr(%(expressions)s, 1, 13) || ':00:00')", **extra)

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="date_trunc('hour', %(expressions)s)", **extra)

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        if "template" not in extra:
            return compiler.compile(TruncHour(*self.source_expressions))
        return super().as_sql(compiler, connection, **extra)


class MinuteOfHour(Func):
    """The minute of a timestamp, native on SQLite and PostgreSQL (see HourBucket)."""

    output_field = IntegerField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="CAST(substr(%(expressions)s, 15, 2) AS INTEGER)", **extra)

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="CAST(EXTRACT(MINUTE FROM %(expressions)s) AS INTEGER)", **extra)

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        if "template" not in extra:
            return compiler.compile(ExtractMinute(*self.source_expressions))
        return super().as_sql(compiler, connection, **extra)


def parse_window(value: str | None) -> str:
    return value if value in WINDOWS else DEFAULT_WINDOW


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _f(value: Any) -> float:
    return float(value or 0)


@dataclass(frozen=True)
class Point:
    """One point of the cluster's (or one pool's) history: a minute, or the mean of an hour."""

    at: datetime
    cost: float
    on_demand: float
    nodes: float
    spot_nodes: float
    cpu_allocatable: float
    cpu_requested: float
    memory_allocatable: float
    memory_requested: float
    pods: float
    pods_pending: float
    estimated: bool

    @property
    def cpu_efficiency(self) -> float | None:
        return _ratio(self.cpu_requested, self.cpu_allocatable)

    @property
    def memory_efficiency(self) -> float | None:
        return _ratio(self.memory_requested, self.memory_allocatable)

    @property
    def savings(self) -> float:
        return self.on_demand - self.cost

    @property
    def stranded(self) -> float:
        """$/h of allocatable nobody requested, aggregated: the share of the pool that neither CPU nor
        memory needs (the binding resource decides), times the pool's cost. An estimate from totals;
        the per-node figure is in node_view()."""
        eff = max(self.cpu_efficiency or 0.0, self.memory_efficiency or 0.0)
        return self.cost * max(0.0, 1.0 - min(eff, 1.0))


_NUMERIC = ("cost_per_hour", "on_demand_cost_per_hour", "nodes", "spot_nodes", "cpu_allocatable",
            "cpu_requested", "memory_allocatable", "memory_requested", "pods", "pods_pending")


def _point(row: dict[str, Any], at: datetime, estimated: bool) -> Point:
    g = row.get
    return Point(at=at, cost=_f(g("cost_per_hour")), on_demand=_f(g("on_demand_cost_per_hour")),
                 nodes=_f(g("nodes")), spot_nodes=_f(g("spot_nodes")),
                 cpu_allocatable=_f(g("cpu_allocatable")), cpu_requested=_f(g("cpu_requested")),
                 memory_allocatable=_f(g("memory_allocatable")), memory_requested=_f(g("memory_requested")),
                 pods=_f(g("pods")), pods_pending=_f(g("pods_pending")), estimated=estimated)


EFFICIENCY_FIELDS = ("cpu_allocatable", "cpu_requested", "memory_allocatable", "memory_requested")


def history(*, nodepool: str = "", window: str = DEFAULT_WINDOW, now: datetime | None = None) -> list[Point]:
    return histories(pools=[nodepool], window=window, now=now)[nodepool]


def histories(*, pools: list[str], window: str = DEFAULT_WINDOW, now: datetime | None = None,
              fields: tuple[str, ...] = _NUMERIC) -> dict[str, list[Point]]:
    """The history of several pools in one query (the bin-packing page draws every pool). ``fields``
    narrows the aggregation to what a chart draws (the others read 0): on 30 days every averaged
    column costs a pass over the rows."""
    now = now or timezone.now()
    span = WINDOWS[parse_window(window)]
    qs = MetricSample.objects.filter(nodepool__in=pools, at__gt=now - span, at__lte=now)
    out: dict[str, list[Point]] = {p: [] for p in pools}
    if span <= MINUTE_RESOLUTION_UP_TO:
        for r in qs.order_by("nodepool", "at").values("nodepool", "at", "estimated", *fields):
            out[r["nodepool"]].append(_point(r, r["at"], r["estimated"]))
        return out
    # Count(filter=...) rather than Max(boolean): PostgreSQL has no max(boolean).
    aggregates = {name: Avg(name) for name in fields}
    rows = (qs.annotate(hour=HourBucket("at")).values("nodepool", "hour")
            .annotate(n_estimated=Count("id", filter=Q(estimated=True)), **aggregates).order_by("nodepool", "hour"))
    for r in rows:
        out[r["nodepool"]].append(_point(r, r["hour"], r["n_estimated"] > 0))
    return out


def nodepools() -> list[str]:
    """The pools with samples, for the filter (the cluster itself is "")."""
    return sorted(MetricSample.objects.exclude(nodepool="").values_list("nodepool", flat=True).distinct())


def latest(*, nodepool: str = "", now: datetime | None = None) -> MetricSample | None:
    now = now or timezone.now()
    return MetricSample.objects.filter(nodepool=nodepool, at__lte=now).order_by("-at").first()


@dataclass(frozen=True)
class CostSummary:
    cost_per_hour: float
    on_demand_per_hour: float
    month_to_date: float
    forecast: float
    spot_share: float | None
    nodes: int
    pods_pending: int
    estimated: bool
    cpu_efficiency: float | None
    memory_efficiency: float | None
    stranded_per_hour: float


def month_start(now: datetime) -> datetime:
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def cost_summary(*, nodepool: str = "", now: datetime | None = None) -> CostSummary:
    """Now, month to date and the month-end forecast.

    Month to date: each minute sample stands for one minute at its hourly cost (Σ cost / 60); a minute
    without a sample (loops down) counts nothing rather than a guess. Forecast: month to date plus the
    remaining hours of the month at the mean cost of the last 24 hours, which smooths the daily cycle
    better than the cost of this very minute."""
    now = now or timezone.now()
    last = latest(nodepool=nodepool, now=now)
    start = month_start(now)
    base = MetricSample.objects.filter(nodepool=nodepool, at__lte=now)
    month = base.filter(at__gte=start).aggregate(total=Sum("cost_per_hour"), est=Count("id", filter=Q(estimated=True)))
    mtd = _f(month["total"]) / 60
    recent = base.filter(at__gt=now - timedelta(hours=24)).aggregate(mean=Avg("cost_per_hour"))
    days = calendar.monthrange(now.year, now.month)[1]
    end = start + timedelta(days=days)
    remaining_hours = max(0.0, (end - now).total_seconds() / 3600)
    forecast = mtd + _f(recent["mean"]) * remaining_hours
    if last is None:
        return CostSummary(0.0, 0.0, mtd, forecast, None, 0, 0, False, None, None, 0.0)
    point = _point({k: getattr(last, k) for k in _NUMERIC}, last.at, last.estimated)
    pending = last.pods_pending
    if nodepool:
        # Pending pods are counted once, on the cluster row: a pod pending has no pool yet.
        pending = 0
    return CostSummary(
        cost_per_hour=point.cost, on_demand_per_hour=point.on_demand, month_to_date=mtd, forecast=forecast,
        spot_share=_ratio(last.spot_nodes, last.nodes), nodes=last.nodes, pods_pending=pending,
        estimated=last.estimated or month["est"] > 0, cpu_efficiency=point.cpu_efficiency,
        memory_efficiency=point.memory_efficiency, stranded_per_hour=stranded_now(nodepool=nodepool),
    )


# --- the live node view (eks-node-viewer) ----------------------------------------------------

def _q(d: dict[str, Any], key: str) -> int:
    try:
        return parse_quantity(d.get(key, 0) or 0)
    except (QuantityError, TypeError, ValueError):
        return 0


@dataclass(frozen=True)
class NodeRow:
    claim: NodeClaim
    cpu_requested: int  # millicores
    cpu_allocatable: int
    memory_requested: int  # bytes
    memory_allocatable: int
    pods_requested: int
    pods_allocatable: int
    price: float | None
    estimated: bool
    age: timedelta

    @property
    def cpu_fraction(self) -> float:
        return min(1.0, _ratio(self.cpu_requested, self.cpu_allocatable) or 0.0)

    @property
    def memory_fraction(self) -> float:
        return min(1.0, _ratio(self.memory_requested, self.memory_allocatable) or 0.0)

    @property
    def pods_fraction(self) -> float:
        return min(1.0, _ratio(self.pods_requested, self.pods_allocatable) or 0.0)

    @property
    def packing(self) -> float:
        """How full the node is on its binding resource: what sorts worst-packed first."""
        return max(self.cpu_fraction, self.memory_fraction)

    @property
    def stranded(self) -> float:
        """$/h of this node nobody requested: the price times the share neither resource needs."""
        return (self.price or 0.0) * (1.0 - self.packing)


def node_view(*, nodepool: str = "", now: datetime | None = None) -> list[NodeRow]:
    """Active NodeClaims with their requests against allocatable, worst-packed first. Requests are
    the claim's (what the provisioner placed on it, kept current by the loops)."""
    now = now or timezone.now()
    claims = NodeClaim.objects.active()
    if nodepool:
        claims = claims.filter(nodepool_name=nodepool)
    rows = []
    for c in claims:
        req, alloc = c.requests or {}, c.allocatable or {}
        rows.append(NodeRow(
            claim=c, cpu_requested=_q(req, "cpu"), cpu_allocatable=_q(alloc, "cpu"),
            memory_requested=_q(req, "memory") // 1000, memory_allocatable=_q(alloc, "memory") // 1000,
            pods_requested=_q(req, "pods") // 1000, pods_allocatable=_q(alloc, "pods") // 1000,
            price=float(c.price_per_hour) if c.price_per_hour is not None else None,
            estimated=c.price_per_hour is None or c.price_source == "estimate",
            age=now - c.created_at,
        ))
    rows.sort(key=lambda r: (r.packing, -(r.price or 0.0), r.claim.name))
    return rows


def stranded_now(*, nodepool: str = "", now: datetime | None = None) -> float:
    return sum(r.stranded for r in node_view(nodepool=nodepool, now=now))


def efficiency_by_pool(*, window: str = DEFAULT_WINDOW, now: datetime | None = None) -> dict[str, list[Point]]:
    return histories(pools=nodepools(), window=window, now=now)


# --- spot savings ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Savings:
    actual: float          # $ spent in the window
    on_demand: float       # $ the same nodes would have cost on-demand
    estimated: bool

    @property
    def saved(self) -> float:
        return self.on_demand - self.actual


def _window_qs(window: str, now: datetime | None) -> Any:
    now = now or timezone.now()
    return MetricSample.objects.filter(at__gt=now - WINDOWS[parse_window(window)], at__lte=now)


def savings(*, nodepool: str = "", window: str = DEFAULT_WINDOW, now: datetime | None = None) -> Savings:
    agg = _window_qs(window, now).filter(nodepool=nodepool).aggregate(
        a=Sum("cost_per_hour"), o=Sum("on_demand_cost_per_hour"), e=Count("id", filter=Q(estimated=True)))
    return Savings(actual=_f(agg["a"]) / 60, on_demand=_f(agg["o"]) / 60, estimated=agg["e"] > 0)


def savings_by_pool(*, window: str = DEFAULT_WINDOW, now: datetime | None = None) -> dict[str, Savings]:
    rows = (_window_qs(window, now).exclude(nodepool="").values("nodepool")
            .annotate(a=Sum("cost_per_hour"), o=Sum("on_demand_cost_per_hour"),
                      e=Count("id", filter=Q(estimated=True))).order_by("nodepool"))
    return {r["nodepool"]: Savings(_f(r["a"]) / 60, _f(r["o"]) / 60, r["e"] > 0) for r in rows}


def cost_by_pool(*, window: str = DEFAULT_WINDOW, now: datetime | None = None) -> dict[str, float]:
    """$ spent per pool in the window (Σ minute samples' hourly cost / 60)."""
    return {pool: s.actual for pool, s in savings_by_pool(window=window, now=now).items()}


def decisions_in_window(*, kinds: tuple[str, ...] | None = None, nodepool: str = "",
                        window: str = DEFAULT_WINDOW, now: datetime | None = None) -> Any:
    now = now or timezone.now()
    qs = Decision.objects.filter(at__gt=now - WINDOWS[parse_window(window)], at__lte=now)
    if kinds:
        qs = qs.filter(kind__in=kinds)
    if nodepool:
        qs = qs.filter(nodepool_name=nodepool)
    return qs


def interruptions(*, nodepool: str = "", window: str = DEFAULT_WINDOW, now: datetime | None = None) -> int:
    return decisions_in_window(kinds=(Decision.INTERRUPTION,), nodepool=nodepool, window=window, now=now).count()


# --- cost by instance family -----------------------------------------------------------------

def family_of(instance_type: str) -> str:
    return instance_type.split(".", 1)[0] if instance_type else "unknown"


def cost_by_family(*, nodepool: str = "", window: str = DEFAULT_WINDOW,
                   now: datetime | None = None) -> dict[str, float]:
    """$ per instance family in the window: each claim's price times the hours it lived inside the
    window (from its launch, or creation, to its termination or now)."""
    now = now or timezone.now()
    start = now - WINDOWS[parse_window(window)]
    claims = NodeClaim.objects.filter(Q(terminated_at__isnull=True) | Q(terminated_at__gt=start),
                                      created_at__lt=now, price_per_hour__isnull=False)
    if nodepool:
        claims = claims.filter(nodepool_name=nodepool)
    out: dict[str, float] = defaultdict(float)
    for c in claims.only("instance_type", "price_per_hour", "created_at", "launched_at", "terminated_at"):
        begin = max(start, c.launched_at or c.created_at)
        end = min(now, c.terminated_at or now)
        if end > begin:
            out[family_of(c.instance_type)] += float(c.price_per_hour) * (end - begin).total_seconds() / 3600
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


# --- unschedulable reasons -------------------------------------------------------------------

def reasons_history(*, window: str = DEFAULT_WINDOW, now: datetime | None = None) -> list[tuple[datetime, dict[str, int]]]:
    """Pending pods by reason over time, from the cluster rows. Beyond a day, one sample per hour
    (the one at minute 0): reason counts are a snapshot, and a JSON mean is neither portable SQL
    nor meaningful."""
    now = now or timezone.now()
    span = WINDOWS[parse_window(window)]
    qs = MetricSample.objects.filter(nodepool="", at__gt=now - span, at__lte=now)
    if span > MINUTE_RESOLUTION_UP_TO:
        qs = qs.annotate(minute=MinuteOfHour("at")).filter(minute=0)
    return [(r["at"], dict(r["unschedulable_reasons"] or {}))
            for r in qs.order_by("at").values("at", "unschedulable_reasons")]


def reasons_nodepool(reason: str) -> str:
    """"nodepool gpu: taint … not tolerated" → "gpu" (the filter matches on it)."""
    if reason.startswith("nodepool ") and ":" in reason:
        return reason[len("nodepool "):].split(":", 1)[0]
    return ""


def pending_now(*, nodepool: str = "", now: datetime | None = None, within: timedelta = timedelta(minutes=15)) -> list[dict[str, Any]]:
    """Pods pending now with their per-NodePool reasons: the newest unschedulable verdict per pod
    among those the latest cluster sample still counts as pending."""
    now = now or timezone.now()
    last = latest(now=now)
    if last is None or not last.pods_pending:
        return []
    verdicts = Decision.objects.filter(kind=Decision.UNSCHEDULABLE, at__gt=now - within, at__lte=now).order_by("-at", "-id")
    seen: dict[str, dict[str, Any]] = {}
    for d in verdicts[:2000]:
        pod = (d.details or {}).get("pod") or (d.pods[0] if d.pods else "")
        if not pod or pod in seen:
            continue
        reasons = [r for r in (d.details or {}).get("reasons") or [] if isinstance(r, dict)]
        if nodepool:
            reasons = [r for r in reasons if r.get("nodepool") == nodepool]
            if not reasons:
                continue
        seen[pod] = {"pod": pod, "at": d.at, "decision": d, "reasons": reasons}
    return list(seen.values())[: last.pods_pending]


# --- decision timeline -----------------------------------------------------------------------

@dataclass
class TimelineEntry:
    decision: Decision
    savings_per_hour: Decimal | None = None
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def timeline(*, nodepool: str = "", window: str = DEFAULT_WINDOW, now: datetime | None = None,
             limit: int = 500) -> list[TimelineEntry]:
    """Launches, consolidations (with their savings), interruptions and failures, newest first.
    Unschedulable verdicts have their own page; here they would drown the rest."""
    qs = decisions_in_window(kinds=(Decision.LAUNCH, Decision.DISRUPTION, Decision.INTERRUPTION, Decision.FAILURE),
                             nodepool=nodepool, window=window, now=now)
    return [TimelineEntry(decision=d, savings_per_hour=d.savings_per_hour,
                          label=f"{d.kind} {d.nodepool_name}".strip()) for d in qs[:limit]]


def timeline_counts(*, nodepool: str = "", window: str = DEFAULT_WINDOW, now: datetime | None = None) -> dict[str, int]:
    qs = decisions_in_window(nodepool=nodepool, window=window, now=now)
    return {r["kind"]: r["n"] for r in qs.values("kind").annotate(n=Count("id")).order_by("kind")}


def last_sample_at() -> datetime | None:
    return MetricSample.objects.aggregate(m=Max("at"))["m"]
