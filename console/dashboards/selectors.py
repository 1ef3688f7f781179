"""Every figure the dashboards draw, computed from MetricSample, MetricRollup, NodeClaim and Decision
rows and from the live cluster (the bin-packing view).

Views and charts only draw what these return. Windows of a day or less read the 1-minute samples.
Longer windows start at a whole hour and read hourly sums: the MetricRollup rows for the hours already
rolled up, and the minute samples (summed per hour in SQL, the same query the rollup writes with) for
the hours after, so a figure is the same whichever table it comes from."""

from __future__ import annotations

import calendar
import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Avg, Count, Max, Q, Sum
from django.utils import timezone

from console.backends.base import ClusterBackend
from console.buffers.models import CapacityBuffer
from console.control.live_cluster import LiveCluster, NodeRow, live_cluster
from console.fleet.models import Decision, NodeClaim
from console.telemetry.models import MetricRollup, MetricSample
from console.telemetry.reasons import NOT_RECORDED, POD_PREFIX
from console.telemetry.selectors import (
    NUMERIC,
    ROLLUP_FIELDS,
    SAMPLE_FIELDS,
    floor_hour,
    minute_reason_sums,
    minute_sums,
    rolled_up_until,
)

log = logging.getLogger(__name__)

WINDOWS: dict[str, timedelta] = {
    "1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30),
}
DEFAULT_WINDOW = "24h"
# Up to this window we draw every minute; beyond it, hourly means.
MINUTE_RESOLUTION_UP_TO = timedelta(hours=24)


def parse_window(value: str | None) -> str:
    return value if value in WINDOWS else DEFAULT_WINDOW


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _f(value: Any) -> float:
    return float(value or 0)


def is_long(window: str) -> bool:
    return WINDOWS[parse_window(window)] > MINUTE_RESOLUTION_UP_TO


def window_start(window: str, now: datetime) -> datetime:
    """Short windows: exclusive start, now − span. Long windows: inclusive and floored to the hour, so
    they are made of whole hours and read the same from the rollups as from the minutes."""
    span = WINDOWS[parse_window(window)]
    return now - span if span <= MINUTE_RESOLUTION_UP_TO else floor_hour(now - span)


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
    # The engine's lower bound and the cost it is compared with, over the same minutes (those where
    # the bound was computed); None where it was not: a gap in the line, never a zero.
    lower_bound: float | None = None
    cost_bounded: float | None = None
    reserved_nodes: float = 0.0  # on a capacity reservation: counted in `nodes`, in neither spot nor on-demand

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

    @property
    def gap(self) -> float | None:
        """$/h above the lower bound: what a perfect re-plan of the running pods could save at most."""
        if self.lower_bound is None or self.cost_bounded is None:
            return None
        return self.cost_bounded - self.lower_bound

    @property
    def gap_ratio(self) -> float | None:
        """cost ÷ lower bound (1.0 = optimal); None when the bound is unknown or zero."""
        if self.lower_bound is None or self.cost_bounded is None or self.lower_bound <= 0:
            return None
        return self.cost_bounded / self.lower_bound


def _point(row: Mapping[str, Any], at: datetime, estimated: bool) -> Point:
    g = row.get
    bound = g("lower_bound_per_hour")
    return Point(at=at, cost=_f(g("cost_per_hour")), on_demand=_f(g("on_demand_cost_per_hour")),
                 nodes=_f(g("nodes")), spot_nodes=_f(g("spot_nodes")), reserved_nodes=_f(g("reserved_nodes")),
                 cpu_allocatable=_f(g("cpu_allocatable")), cpu_requested=_f(g("cpu_requested")),
                 memory_allocatable=_f(g("memory_allocatable")), memory_requested=_f(g("memory_requested")),
                 pods=_f(g("pods")), pods_pending=_f(g("pods_pending")), estimated=estimated,
                 lower_bound=None if bound is None else float(bound),
                 cost_bounded=None if bound is None else _f(g("cost_per_hour")))


def _hour_point(row: Mapping[str, Any]) -> Point:
    """The mean of an hour from its sums (a rollup row or minute_sums()): Σ ÷ samples."""
    n = row["samples"] or 1
    nb = row["bound_samples"]
    means = {name: _f(row[f"{name}_sum"]) / n for name in NUMERIC}
    return Point(at=row["hour"], cost=means["cost_per_hour"], on_demand=means["on_demand_cost_per_hour"],
                 nodes=means["nodes"], spot_nodes=means["spot_nodes"], reserved_nodes=means["reserved_nodes"],
                 cpu_allocatable=means["cpu_allocatable"],
                 cpu_requested=means["cpu_requested"], memory_allocatable=means["memory_allocatable"],
                 memory_requested=means["memory_requested"], pods=means["pods"], pods_pending=means["pods_pending"],
                 estimated=row["estimated_samples"] > 0,
                 lower_bound=_f(row["lower_bound_per_hour_sum"]) / nb if nb else None,
                 cost_bounded=_f(row["bounded_cost_per_hour_sum"]) / nb if nb else None)


EFFICIENCY_FIELDS = ("cpu_allocatable", "cpu_requested", "memory_allocatable", "memory_requested")


# --- hourly sums: rollups, then minutes ----------------------------------------------------------

def hour_sums(*, pools: Sequence[str] | None, start: datetime, now: datetime,
              reasons: bool = False) -> list[dict[str, Any]]:
    """Per (nodepool, hour) sums from the hour of `start` to `now`, oldest first: rollup rows for the
    hours already rolled up, minute samples for the rest. With `reasons`, each row also carries
    "unschedulable_reasons_sum" (cluster rows only)."""
    cut = rolled_up_until(now)
    out: list[dict[str, Any]] = []
    if cut is not None and cut > start:
        rollups = MetricRollup.objects.filter(hour__gte=start, hour__lt=cut)
        if pools is not None:
            rollups = rollups.filter(nodepool__in=pools)
        extra = ("unschedulable_reasons_sum",) if reasons else ()
        out += list(rollups.order_by("nodepool", "hour").values("nodepool", "hour", *ROLLUP_FIELDS, *extra))
    minutes = MetricSample.objects.filter(at__gte=max(start, cut) if cut else start, at__lte=now)
    if pools is not None:
        minutes = minutes.filter(nodepool__in=pools)
    rows = minute_sums(minutes)
    if reasons:
        by_hour = minute_reason_sums(minutes)
        for r in rows:
            r["unschedulable_reasons_sum"] = by_hour.get(r["hour"], {}) if r["nodepool"] == "" else {}
    out += rows
    out.sort(key=lambda r: (r["nodepool"], r["hour"]))
    return out


def window_totals(*, pools: Sequence[str] | None, start: datetime, now: datetime) -> dict[str, dict[str, float]]:
    """Per nodepool, Σ cost, Σ on-demand cost (both $/h × samples) and the number of estimated
    samples from the hour of `start` to `now`: hour_sums() totalled in SQL, two small queries."""
    cut = rolled_up_until(now)
    out: dict[str, dict[str, float]] = defaultdict(lambda: {"cost": 0.0, "on_demand": 0.0, "estimated": 0.0})
    parts: list[Any] = []  # hourly rollups, then the minutes since the last rollup
    if cut is not None and cut > start:
        rollups = MetricRollup.objects.filter(hour__gte=start, hour__lt=cut)
        if pools is not None:
            rollups = rollups.filter(nodepool__in=pools)
        parts.append(rollups.values("nodepool").annotate(
            cost=Sum("cost_per_hour_sum"), on_demand=Sum("on_demand_cost_per_hour_sum"),
            estimated=Sum("estimated_samples")).order_by("nodepool"))
    minutes = MetricSample.objects.filter(at__gte=max(start, cut) if cut else start, at__lte=now)
    if pools is not None:
        minutes = minutes.filter(nodepool__in=pools)
    parts.append(minutes.values("nodepool").annotate(
        cost=Sum("cost_per_hour"), on_demand=Sum("on_demand_cost_per_hour"),
        estimated=Count("id", filter=Q(estimated=True))).order_by("nodepool"))
    for part in parts:
        for r in part:
            acc = out[r["nodepool"]]
            for key in ("cost", "on_demand", "estimated"):
                acc[key] += _f(r[key])
    return dict(sorted(out.items()))


def history(*, nodepool: str = "", window: str = DEFAULT_WINDOW, now: datetime | None = None) -> list[Point]:
    return histories(pools=[nodepool], window=window, now=now)[nodepool]


def histories(*, pools: list[str], window: str = DEFAULT_WINDOW, now: datetime | None = None,
              fields: tuple[str, ...] = SAMPLE_FIELDS) -> dict[str, list[Point]]:
    """The history of several pools at once (the bin-packing page draws every pool): minutes up to a
    day, hourly means beyond. ``fields`` narrows what the minute query reads (the others read 0): a
    day of minutes of every pool is the largest read the pages make."""
    now = now or timezone.now()
    start = window_start(window, now)
    out: dict[str, list[Point]] = {p: [] for p in pools}
    if not is_long(window):
        qs = MetricSample.objects.filter(nodepool__in=pools, at__gt=start, at__lte=now)
        for r in qs.order_by("nodepool", "at").values("nodepool", "at", "estimated", *fields):
            out[r["nodepool"]].append(_point(r, r["at"], r["estimated"]))
        return out
    for r in hour_sums(pools=pools, start=start, now=now):
        out[r["nodepool"]].append(_hour_point(r))
    return out


def nodepools() -> list[str]:
    """The pools with samples or rollups, for the filter (the cluster itself is "")."""
    names = set(MetricSample.objects.exclude(nodepool="").values_list("nodepool", flat=True).distinct())
    names |= set(MetricRollup.objects.exclude(nodepool="").values_list("nodepool", flat=True).distinct())
    return sorted(names)


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
    stranded_per_hour: float | None  # None: the live cluster could not be read
    lower_bound_per_hour: float | None = None

    @property
    def gap(self) -> float | None:
        return None if self.lower_bound_per_hour is None else self.cost_per_hour - self.lower_bound_per_hour

    @property
    def gap_ratio(self) -> float | None:
        lb = self.lower_bound_per_hour
        return None if lb is None or lb <= 0 else self.cost_per_hour / lb


def month_start(now: datetime) -> datetime:
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def cost_summary(*, nodepool: str = "", now: datetime | None = None,
                 nodes: Sequence[NodeRow] | None = None) -> CostSummary:
    """Now, month to date and the month-end forecast.

    Month to date: each minute sample stands for one minute at its hourly cost (Σ cost / 60, from the
    rollups and the minutes after them); a minute without a sample (loops down) counts nothing rather
    than a guess. Forecast: month to date plus the remaining hours of the month at the mean cost of
    the last 24 hours, which smooths the daily cycle better than the cost of this very minute.
    Stranded capacity is summed over ``nodes`` (node_view() of the live cluster); None without them."""
    now = now or timezone.now()
    last = latest(nodepool=nodepool, now=now)
    start = month_start(now)
    month = window_totals(pools=[nodepool], start=start, now=now).get(nodepool, {})
    mtd = month.get("cost", 0.0) / 60
    month_estimated = month.get("estimated", 0.0) > 0
    recent = MetricSample.objects.filter(nodepool=nodepool, at__lte=now, at__gt=now - timedelta(hours=24)).aggregate(
        mean=Avg("cost_per_hour"))
    days = calendar.monthrange(now.year, now.month)[1]
    end = start + timedelta(days=days)
    remaining_hours = max(0.0, (end - now).total_seconds() / 3600)
    forecast = mtd + _f(recent["mean"]) * remaining_hours
    stranded = None if nodes is None else sum(r.stranded for r in nodes if not nodepool or r.nodepool == nodepool)
    if last is None:
        return CostSummary(0.0, 0.0, mtd, forecast, None, 0, 0, False, None, None, stranded)
    point = _point({k: getattr(last, k) for k in SAMPLE_FIELDS}, last.at, last.estimated)
    pending = last.pods_pending
    if nodepool:
        # Pending pods are counted once, on the cluster row: a pod pending has no pool yet.
        pending = 0
    return CostSummary(
        cost_per_hour=point.cost, on_demand_per_hour=point.on_demand, month_to_date=mtd, forecast=forecast,
        spot_share=_ratio(last.spot_nodes, last.nodes), nodes=last.nodes, pods_pending=pending,
        estimated=last.estimated or month_estimated, cpu_efficiency=point.cpu_efficiency,
        memory_efficiency=point.memory_efficiency, stranded_per_hour=stranded, lower_bound_per_hour=point.lower_bound,
    )


# --- the live node view (eks-node-viewer) ----------------------------------------------------

# The last live read of this process: (monotonic time it was read, the read). The pages and /metrics
# reuse a read younger than LOADMASTER_DASHBOARD_LIVE_SECONDS rather than list the cluster again.
_LIVE: tuple[float, LiveCluster] | None = None


def live_nodes_clear() -> None:
    """Forget the remembered read: the next page or scrape lists the cluster."""
    global _LIVE
    _LIVE = None


def live_read_fresh(*, cluster: ClusterBackend, now: datetime | None = None) -> LiveCluster:
    """Read the live cluster now, and remember the read for the pages and scrapes that follow."""
    global _LIVE
    live = live_cluster(cluster=cluster, now=now)
    _LIVE = (time.monotonic(), live)
    return live


def live_read(*, cluster: ClusterBackend, now: datetime | None = None) -> LiveCluster:
    """The remembered read while younger than LOADMASTER_DASHBOARD_LIVE_SECONDS (0: always read)."""
    max_age = settings.LOADMASTER_DASHBOARD_LIVE_SECONDS
    hit = _LIVE
    if max_age > 0 and hit is not None and time.monotonic() - hit[0] < max_age:
        return hit[1]
    return live_read_fresh(cluster=cluster, now=now)


def live_nodes(*, cluster: ClusterBackend, now: datetime | None = None) -> list[NodeRow]:
    """The nodes of live_read()."""
    return live_read(cluster=cluster, now=now).nodes


def node_view(*, cluster: ClusterBackend, nodepool: str = "", now: datetime | None = None) -> list[NodeRow]:
    """The live nodes read now, worst-packed first; with `nodepool`, that pool's nodes only."""
    rows = live_read_fresh(cluster=cluster, now=now).nodes
    return [r for r in rows if r.nodepool == nodepool] if nodepool else rows


def stranded_now(*, nodes: Iterable[NodeRow], nodepool: str = "") -> float:
    return sum(r.stranded for r in nodes if not nodepool or r.nodepool == nodepool)


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


def _savings_by(window: str, now: datetime | None, pools: Sequence[str] | None) -> dict[str, Savings]:
    now = now or timezone.now()
    if not is_long(window):
        qs = _window_qs(window, now)
        if pools is not None:
            qs = qs.filter(nodepool__in=pools)
        rows = (qs.values("nodepool").annotate(a=Sum("cost_per_hour"), o=Sum("on_demand_cost_per_hour"),
                                               e=Count("id", filter=Q(estimated=True))).order_by("nodepool"))
        return {r["nodepool"]: Savings(_f(r["a"]) / 60, _f(r["o"]) / 60, r["e"] > 0) for r in rows}
    totals = window_totals(pools=pools, start=window_start(window, now), now=now)
    return {pool: Savings(t["cost"] / 60, t["on_demand"] / 60, t["estimated"] > 0) for pool, t in totals.items()}


def savings(*, nodepool: str = "", window: str = DEFAULT_WINDOW, now: datetime | None = None) -> Savings:
    return _savings_by(window, now, [nodepool]).get(nodepool, Savings(0.0, 0.0, False))


def savings_by_pool(*, window: str = DEFAULT_WINDOW, now: datetime | None = None) -> dict[str, Savings]:
    return {k: v for k, v in _savings_by(window, now, None).items() if k}


UNMANAGED = "(no NodePool)"


def cost_by_pool(*, window: str = DEFAULT_WINDOW, now: datetime | None = None,
                 unmanaged: bool = False) -> dict[str, float]:
    """$ spent per pool in the window (Σ minute samples' hourly cost / 60). With `unmanaged`, the cost of
    nodes no NodePool manages (the cluster's samples minus the pools') is one more entry, UNMANAGED, so
    the entries sum to the window's cost (window_cost) from the same samples."""
    by_pool = _savings_by(window, now, None)
    out = {pool: s.actual for pool, s in by_pool.items() if pool}
    rest = by_pool.get("", Savings(0.0, 0.0, False)).actual - sum(out.values())
    if unmanaged and abs(rest) > _NOISE_DOLLARS:
        out[UNMANAGED] = rest
    return out


# Below this many dollars a remainder is float noise of six-decimal prices, not a node.
_NOISE_DOLLARS = 1e-6


def window_cost(*, nodepool: str = "", window: str = DEFAULT_WINDOW, now: datetime | None = None) -> float:
    """$ spent in the window by the cluster (or one pool): what the per-pool and per-family figures sum to."""
    return savings(nodepool=nodepool, window=window, now=now).actual


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
    n: int = decisions_in_window(kinds=(Decision.INTERRUPTION,), nodepool=nodepool, window=window, now=now).count()
    return n


# --- cost by instance family -----------------------------------------------------------------

def family_of(instance_type: str) -> str:
    return instance_type.split(".", 1)[0] if instance_type else "unknown"


def _cost_buckets(*, pools: Sequence[str] | None, window: str,
                  now: datetime) -> list[tuple[str, datetime, datetime, float]]:
    """(nodepool, start, end, $) for each sample of the window, read exactly as the per-pool costs are:
    each minute sample stands for the minute before it (cost / 60); beyond a day, each hour's Σ cost / 60."""
    if not is_long(window):
        qs = _window_qs(window, now)
        if pools is not None:
            qs = qs.filter(nodepool__in=pools)
        return [(pool, at - timedelta(minutes=1), at, _f(cost) / 60)
                for pool, at, cost in qs.values_list("nodepool", "at", "cost_per_hour").order_by("nodepool", "at")]
    # An hour's samples are at hh:00 … hh:59, each standing for the minute before it.
    minute = timedelta(minutes=1)
    return [(r["nodepool"], r["hour"] - minute, min(now, r["hour"] + 59 * minute), _f(r["cost_per_hour_sum"]) / 60)
            for r in hour_sums(pools=pools, start=window_start(window, now), now=now)]


def _family_weights(claims: Sequence[tuple[float, float, str, float]],
                    buckets: Sequence[tuple[float, float]]) -> list[dict[str, float]]:
    """For each bucket [a, b) (sorted, not overlapping) the weight of each instance family among the claims
    (begin, end, family, $/h) alive in it — its price-seconds, in proportion — in one sweep over the claims'
    launches and terminations. Consecutive buckets no launch or termination falls in share one dict (the
    same object), so callers can add up their dollars and split them once."""
    events = sorted([(b, price, fam) for b, _, fam, price in claims] + [(e, -price, fam) for _, e, fam, price in claims])
    active: dict[str, float] = defaultdict(float)
    out: list[dict[str, float]] = []
    steady: dict[str, float] | None = None  # the active prices, while no event has changed them
    i = 0
    for a, b in buckets:
        while i < len(events) and events[i][0] <= a:
            active[events[i][2]] += events[i][1]
            steady = None
            i += 1
        if i < len(events) and events[i][0] < b:
            weights: dict[str, float] = defaultdict(float)
            cursor = a
            while i < len(events) and events[i][0] < b:
                t, delta, fam = events[i]
                for f, price in active.items():
                    weights[f] += price * (t - cursor)
                active[fam] += delta
                cursor = t
                i += 1
            for f, price in active.items():
                weights[f] += price * (b - cursor)
            out.append({f: w for f, w in weights.items() if w > 1e-12})
            steady = None
            continue
        if steady is None:
            steady = {f: price for f, price in active.items() if price > 1e-12}
        out.append(steady)
    return out


def cost_by_family(*, nodepool: str = "", window: str = DEFAULT_WINDOW,
                   now: datetime | None = None) -> dict[str, float]:
    """$ per instance family in the window, from the same samples as the cost per NodePool: each pool's
    cost in each minute (or hour) is split among the families of its NodeClaims alive then, in proportion
    to their prices × the time they were alive in it ("unknown" when none was). For the whole cluster,
    the nodes no NodePool manages are one more entry, UNMANAGED. The entries sum to window_cost()."""
    now = now or timezone.now()
    rows = _cost_buckets(pools=[nodepool] if nodepool else None, window=window, now=now)
    by_pool: dict[str, list[tuple[datetime, datetime, float]]] = defaultdict(list)
    for pool, a, b, dollars in rows:
        by_pool[pool].append((a, b, dollars))
    cluster = sum(d for _, _, d in by_pool.pop("", []))
    earliest = min((a for pool_rows in by_pool.values() for a, _, _ in pool_rows), default=now)
    claims: dict[str, list[tuple[float, float, str, float]]] = defaultdict(list)
    qs = NodeClaim.objects.filter(Q(terminated_at__isnull=True) | Q(terminated_at__gt=earliest),
                                  nodepool_name__in=list(by_pool), created_at__lt=now, price_per_hour__isnull=False)
    far = now.timestamp() + 3600
    for pool, itype, price, created, launched, terminated in qs.values_list(
            "nodepool_name", "instance_type", "price_per_hour", "created_at", "launched_at", "terminated_at"):
        claims[pool].append(((launched or created).timestamp(), terminated.timestamp() if terminated else far,
                             family_of(itype), float(price or 0)))  # price is not null (filtered)
    out: dict[str, float] = defaultdict(float)
    for pool, pool_rows in by_pool.items():
        weights = _family_weights(claims.get(pool, []), [(a.timestamp(), b.timestamp()) for a, b, _ in pool_rows])
        runs: list[tuple[dict[str, float], float]] = []  # (weights, dollars) of runs of buckets sharing them
        for (_, _, dollars), w in zip(pool_rows, weights, strict=True):
            if runs and runs[-1][0] is w:
                runs[-1] = (w, runs[-1][1] + dollars)
            else:
                runs.append((w, dollars))
        for w, dollars in runs:
            total = sum(w.values())
            if not total:
                out["unknown"] += dollars
                continue
            for fam, share in w.items():
                out[fam] += dollars * share / total
    if not nodepool:
        rest = cluster - sum(d for pool_rows in by_pool.values() for _, _, d in pool_rows)
        if abs(rest) > _NOISE_DOLLARS:
            out[UNMANAGED] += rest
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


# --- unschedulable reasons -------------------------------------------------------------------

@dataclass(frozen=True)
class ReasonsPoint:
    at: datetime
    per_pod: dict[str, float]    # each pending pod once, by its deciding reason: sums to `pending`
    per_pool: dict[str, float]   # "nodepool X: reason" → pods that pool refuses for it (a pod in each pool)
    pending: float


def _split_reasons(counts: Mapping[str, Any], pending: float) -> tuple[dict[str, float], dict[str, float]]:
    per_pod: dict[str, float] = {}
    per_pool: dict[str, float] = {}
    for key, n in counts.items():
        if not isinstance(n, int | float):
            continue
        if key.startswith(POD_PREFIX):
            per_pod[key[len(POD_PREFIX):]] = float(n)
        else:
            per_pool[key] = float(n)
    rest = pending - sum(per_pod.values())
    if rest > 1e-9:
        per_pod[NOT_RECORDED] = rest
    return per_pod, per_pool


def reasons_points(*, window: str = DEFAULT_WINDOW, now: datetime | None = None) -> list[ReasonsPoint]:
    """Pending pods by reason over time, both views, from the cluster rows: every minute up to a day,
    beyond it the hour's mean (Σ over the hour's samples ÷ samples)."""
    now = now or timezone.now()
    out = []
    if not is_long(window):
        qs = MetricSample.objects.filter(nodepool="", at__gt=window_start(window, now), at__lte=now)
        for at, counts, pending in qs.order_by("at").values_list("at", "unschedulable_reasons", "pods_pending"):
            per_pod, per_pool = _split_reasons(counts or {}, float(pending))
            out.append(ReasonsPoint(at, per_pod, per_pool, float(pending)))
        return out
    for r in hour_sums(pools=[""], start=window_start(window, now), now=now, reasons=True):
        n = r["samples"] or 1
        sums = r["unschedulable_reasons_sum"] or {}
        per_pod, per_pool = _split_reasons({k: v / n for k, v in sorted(sums.items())
                                            if isinstance(v, int | float)}, _f(r["pods_pending_sum"]) / n)
        out.append(ReasonsPoint(r["hour"], per_pod, per_pool, _f(r["pods_pending_sum"]) / n))
    return out


def reasons_history(*, window: str = DEFAULT_WINDOW,
                    now: datetime | None = None) -> list[tuple[datetime, dict[str, float]]]:
    """The per-NodePool view of reasons_points() (each pod once in every pool that refuses it)."""
    return [(p.at, p.per_pool) for p in reasons_points(window=window, now=now)]


def reasons_nodepool(reason: str) -> str:
    """"nodepool gpu: taint … not tolerated" → "gpu" (the filter matches on it). The key is the console's own
    (console.telemetry.reasons writes it from each reason's `nodepool` field; NodePool names hold no ':'), not
    the engine's wording."""
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
    last: datetime | None = MetricSample.objects.aggregate(m=Max("at"))["m"]
    return last


# --- CapacityBuffer headroom -----------------------------------------------------------------------

@dataclass(frozen=True)
class HeadroomTile:
    """The cost page's headroom tile: the figures the metrics loop recorded last (console.control.metrics),
    so a page view never lists the cluster or runs a solve. `at` is None when no minute has a figure yet."""

    at: datetime | None
    held_per_hour: float | None
    total_per_hour: float | None
    buffers: int


def headroom_tile() -> HeadroomTile:
    buffers = CapacityBuffer.objects.count()
    sample = (MetricSample.objects.filter(nodepool="", headroom_held_per_hour__isnull=False)
              .order_by("-at").only("at", "headroom_held_per_hour", "headroom_total_per_hour").first())
    if sample is None or sample.headroom_held_per_hour is None:
        return HeadroomTile(None, None, None, buffers)
    total = sample.headroom_total_per_hour
    return HeadroomTile(sample.at, float(sample.headroom_held_per_hour), None if total is None else float(total),
                        buffers)
