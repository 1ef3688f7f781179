"""The dashboard pages: read the selectors, build the charts, render. No figures are computed here."""

from __future__ import annotations

import logging
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import plotly
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from console.backends.factory import cluster_backend
from console.control.live_cluster import NodeRow
from console.dashboards import charts, commitment_selectors, selectors
from console.fleet.models import Decision
from console.telemetry import reasons
from console.telemetry.models import CommitmentSample

log = logging.getLogger(__name__)

# The bin-packing page draws the worst-packed nodes first and stops here: a bar group per node is
# unreadable past a hundred, and rendering a thousand costs most of the page's time budget.
NODE_LIMIT = 100


def _live_nodes(request: HttpRequest, now: datetime) -> list[NodeRow] | None:
    """The live cluster's nodes, or None (and a message on the page) when the cluster cannot be read:
    the pages still draw everything the samples hold."""
    try:
        return selectors.live_nodes(cluster=cluster_backend(), now=now)
    except Exception as exc:  # an unreachable API server must not break the dashboards
        log.warning("dashboards: live cluster unavailable: %s", exc)
        request._dashboard_live_error = f"The live cluster could not be read: {exc}"  # type: ignore[attr-defined]
        return None


def _filters(request: HttpRequest) -> tuple[str, str, datetime]:
    window = selectors.parse_window(request.GET.get("window"))
    # Read once per request; _ctx hands the same list to the template.
    pools = request._dashboard_pools = selectors.nodepools()  # type: ignore[attr-defined]
    pool = request.GET.get("nodepool", "")
    return window, pool if pool in pools else "", timezone.now()


def _span(window: str, now: datetime) -> tuple[datetime, datetime]:
    """The window's time range: what a chart shows when it has no sample to range on."""
    return selectors.window_start(window, now), now


def _ctx(request: HttpRequest, page: str, window: str, pool: str, **extra: Any) -> dict[str, Any]:
    return {"page": page, "window": window, "nodepool": pool, "windows": list(selectors.WINDOWS),
            "nodepools": getattr(request, "_dashboard_pools", None) or selectors.nodepools(), "plotly_url": reverse("dashboards:plotly-js", args=[plotly.__version__]),
            "last_sample_at": selectors.last_sample_at(),
            "live_error": getattr(request, "_dashboard_live_error", ""), **extra}


@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    window, pool, now = _filters(request)
    summary = selectors.cost_summary(nodepool=pool, now=now, nodes=_live_nodes(request, now))
    points = selectors.history(nodepool=pool, window=window, now=now)
    x = [p.at for p in points]
    span = _span(window, now)
    figures = [
        charts.efficiency("chart-efficiency", "Bin-packing efficiency", points, x_range=span),
        charts.lines("chart-cost", "Cost per hour", "$ per hour", x, {
            "actual": [p.cost for p in points], "on-demand equivalent": [p.on_demand for p in points],
            "stranded (unrequested)": [p.stranded for p in points]}, hover="$%{y:.4f}/h", x_range=span),
        charts.optimality("chart-optimality", points, x_range=span),
        charts.lines("chart-nodes", "Nodes and pending pods", "count", x, {
            "nodes": [p.nodes for p in points], "spot nodes": [p.spot_nodes for p in points],
            "reserved nodes": [p.reserved_nodes for p in points],
            "pending pods": [p.pods_pending for p in points]}, hover="%{y:.1f}", x_range=span),
    ]
    return render(request, "dashboards/overview.html",
                  _ctx(request, "overview", window, pool, summary=summary, figures=figures))


@require_GET
def binpacking(request: HttpRequest) -> HttpResponse:
    window, pool, now = _filters(request)
    live = _live_nodes(request, now) or []
    rows = [r for r in live if r.nodepool == pool] if pool else live
    pools = [pool] if pool else request._dashboard_pools  # type: ignore[attr-defined]
    per_pool = selectors.histories(pools=list(pools), window=window, now=now, fields=selectors.EFFICIENCY_FIELDS)
    x_any = next((pts for pts in per_pool.values() if pts), [])
    series: dict[str, list[float | None]] = {}
    for p, pts in per_pool.items():
        by_at = {pt.at: pt for pt in pts}
        series[f"{p} CPU"] = [None if (pt := by_at.get(q.at)) is None or pt.cpu_efficiency is None
                              else 100 * pt.cpu_efficiency for q in x_any]
        series[f"{p} memory"] = [None if (pt := by_at.get(q.at)) is None or pt.memory_efficiency is None
                                 else 100 * pt.memory_efficiency for q in x_any]
    shown = rows[:NODE_LIMIT]
    figures = [charts.node_bars("chart-nodes", shown),
               charts.lines("chart-pool-efficiency", "Efficiency per NodePool", "requested ÷ allocatable (%)",
                            [q.at for q in x_any], series, hover="%{y:.1f}%", x_range=_span(window, now))]
    return render(request, "dashboards/binpacking.html",
                  _ctx(request, "binpacking", window, pool, rows=shown, nodes_total=len(rows), figures=figures))


@require_GET
def spot(request: HttpRequest) -> HttpResponse:
    window, pool, now = _filters(request)
    points = selectors.history(nodepool=pool, window=window, now=now)
    total = selectors.savings(nodepool=pool, window=window, now=now)
    by_pool = selectors.savings_by_pool(window=window, now=now)
    if pool:
        by_pool = {k: v for k, v in by_pool.items() if k == pool}
    x = [p.at for p in points]
    figures = [
        charts.lines("chart-spot-cost", "Actual cost vs on-demand equivalent", "$ per hour", x, {
            "actual": [p.cost for p in points], "on-demand equivalent": [p.on_demand for p in points]},
            hover="$%{y:.4f}/h", x_range=_span(window, now)),
        charts.bars("chart-spot-pools", "Spot savings per NodePool in the window", "$ saved",
                    list(by_pool), [s.saved for s in by_pool.values()]),
    ]
    return render(request, "dashboards/spot.html", _ctx(
        request, "spot", window, pool, total=total, by_pool=by_pool, figures=figures,
        interruptions=selectors.interruptions(nodepool=pool, window=window, now=now),
        estimated_points=sum(p.estimated for p in points)))


@require_GET
def unschedulable(request: HttpRequest) -> HttpResponse:
    window, pool, now = _filters(request)
    points = selectors.reasons_points(window=window, now=now)
    x = [p.at for p in points]

    def series(view: str) -> dict[str, list[float]]:
        names = sorted({r for p in points for r in getattr(p, view)
                        if not pool or selectors.reasons_nodepool(r) in (pool, "")})
        return {r: [getattr(p, view).get(r, 0) for p in points] for r in names}

    # Each pending pod once, under its deciding reason (the stack's height is the number of pending pods);
    # and, as its own chart, what each NodePool says (a pod refused by three pools is in three lines).
    per_pod, per_pool = series("per_pod"), series("per_pool")
    figures = [charts.lines("chart-reasons", "Pending pods by deciding reason", "pending pods", x,
                            per_pod or {"no pending pods": [0] * len(x)}, stacked=True, hover="%{y:.1f} pods",
                            x_range=_span(window, now)),
               charts.lines("chart-reasons-pools", "Pods each NodePool refuses, by reason (a pod counts in every "
                            "NodePool that refuses it)", "pods refused", x,
                            per_pool or {"no pending pods": [0] * len(x)}, hover="%{y:.1f} pods",
                            x_range=_span(window, now))]
    pending = selectors.pending_now(nodepool=pool, now=now)
    for p in pending:
        p["deciding"] = reasons.deciding_reason(p["reasons"])
    return render(request, "dashboards/unschedulable.html", _ctx(
        request, "unschedulable", window, pool, figures=figures, pending=pending))


@require_GET
def cost(request: HttpRequest) -> HttpResponse:
    window, pool, now = _filters(request)
    # Both breakdowns come from the same samples and sum to the window's cost (nodes without a NodePool
    # are an entry of their own in each).
    by_pool = selectors.cost_by_pool(window=window, now=now, unmanaged=True)
    if pool:
        by_pool = {k: v for k, v in by_pool.items() if k == pool}
    families = selectors.cost_by_family(nodepool=pool, window=window, now=now)
    total = selectors.window_cost(nodepool=pool, window=window, now=now)
    entries = selectors.timeline(nodepool=pool, window=window, now=now)
    figures = [
        charts.bars("chart-cost-pools", "Cost per NodePool in the window", "$", list(by_pool), list(by_pool.values())),
        charts.bars("chart-cost-families", "Cost per instance family in the window", "$",
                    list(families), list(families.values())),
        charts.timeline_scatter("chart-timeline", entries, x_range=_span(window, now)),
    ]
    return render(request, "dashboards/cost.html", _ctx(
        request, "cost", window, pool, figures=figures, entries=entries, by_pool=by_pool, families=families,
        total=total, kinds=dict(Decision.KIND_CHOICES), headroom=selectors.headroom_tile()))


@require_GET
def commitments(request: HttpRequest) -> HttpResponse:
    """Reserved Instances, Savings Plans and capacity reservations (issue 19): the whole cluster's, whatever the
    NodePool filter says (a commitment is not a NodePool's)."""
    window, pool, now = _filters(request)
    span = _span(window, now)
    series = commitment_selectors.commitment_series(window=window, now=now)
    costs = commitment_selectors.cost_points(window=window, now=now)
    times, by_kind = commitment_selectors.commitments_by_kind(series)
    kinds = dict(CommitmentSample.KINDS)
    figures = [
        charts.lines("chart-commitment-cost", "List vs effective cost", "$ per hour", [p.at for p in costs], {
            "list": [p.cost for p in costs], "effective": [p.effective for p in costs],
            "paid by commitments": [p.covered for p in costs]}, hover="$%{y:.4f}/h", x_range=span),
        charts.lines("chart-commitment-coverage", "List cost paid, by commitment kind", "$ per hour", times,
                     {kinds.get(k, k): v for k, v in by_kind.items()}, stacked=True, hover="$%{y:.4f}/h",
                     x_range=span),
        charts.aligned_lines("chart-commitment-utilization", "Utilization (used ÷ total)", "%",
                             {s.label: (s.at, s.utilization) for s in series}, hover="%{y:.1f}%", x_range=span),
        charts.aligned_lines("chart-commitment-unused", "Unused commitment (a gap: its price is unknown)",
                             "$ per hour", {s.label: (s.at, s.unused_per_hour) for s in series},
                             hover="$%{y:.4f}/h", x_range=span),
    ]
    return render(request, "dashboards/commitments.html", _ctx(
        request, "commitments", window, pool, figures=figures, current=commitment_selectors.commitments_now(),
        kinds=kinds, blocks=commitment_selectors.capacity_blocks(now=now)))


@lru_cache(maxsize=1)
def _plotly_js() -> bytes:
    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes()


@require_GET
def plotly_js(request: HttpRequest, version: str = "") -> HttpResponse:
    """plotly.js from the installed plotly package (no CDN, nothing to copy at build time). The URL
    carries the package version, so it can be cached for a year."""
    response = HttpResponse(_plotly_js(), content_type="application/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    return response
