"""/metrics in Prometheus text format with Karpenter v1's metric names, types and label sets, so
Karpenter's own Grafana dashboards work unchanged, plus Loadmaster's cost and savings gauges.

Where each figure comes from (docs/dashboards.md lists them):
- gauges of the live cluster (nodes, pods, NodePool cost, eligible nodes): live_metrics, from a read
  of the cluster shared by the scrapes of one process for LOADMASTER_DASHBOARD_LIVE_SECONDS;
- counters and summaries: ledger_metrics, from the database on every scrape, so they do not depend
  on which web process answers;
- Loadmaster's gauges: the latest minute sample record_metrics wrote.

Auth: with settings.LOADMASTER_METRICS_TOKEN set, a scraper sends ``Authorization: Bearer <token>``;
a signed-in console user is always accepted. Without a token only signed-in users get through (and
LOADMASTER_METRICS_PUBLIC=True opens it to anyone, for a scrape inside a trusted network)."""

from __future__ import annotations

import hmac
import logging
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import F, Sum
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from console.backends.base import ClusterBackend
from console.backends.factory import cluster_backend
from console.dashboards import selectors
from console.dashboards.consolidation_metrics import write_consolidation_scores
from console.dashboards.exposition import Exposition, escape, labels
from console.dashboards.ledger_metrics import voluntary_disruptions, write_ledger
from console.dashboards.live_metrics import LiveRead, live_read, resource_label, write_live
from console.fleet.models import NodeClaim, NodePool
from console.telemetry.models import MetricSample, NodePoolProblem
from packing.api import QuantityError, parse_quantity

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _value(quantity: Any) -> float:
    """Karpenter reports cpu in cores and memory in bytes: the quantity's base unit."""
    try:
        return parse_quantity(quantity) / 1000
    except (QuantityError, TypeError, ValueError):
        return 0.0


def read_live(cluster: ClusterBackend | None = None, *, now: datetime) -> LiveRead | None:
    try:
        return live_read(cluster=cluster or cluster_backend(), now=now)
    except Exception as exc:  # the cluster's gauges go missing; the rest still scrapes
        log.warning("/metrics: live cluster unavailable: %s", exc)
        return None


def _gauge(out: Exposition, name: str, help_text: str, rows: Mapping[Any, float]) -> None:
    """A gauge family; `rows` maps label pairs ((name, value), ...) to values."""
    out.family(name, "gauge", help_text)
    for key, value in sorted(rows.items()):
        out.sample(name, labels(key), value)


def write_fleet(out: Exposition, last: MetricSample | None) -> None:
    """Karpenter's NodePool gauges and the provisioner's pending pods, from the database."""
    usage: dict[tuple[tuple[str, str], ...], float] = defaultdict(float)
    parsed: dict[tuple[str, Any], float] = {}
    for pool, capacity in NodeClaim.objects.active().values_list("nodepool_name", "capacity"):
        # Karpenter counts capacity (not allocatable) against limits; so does usage.
        for r, q in (capacity or {}).items():
            key = (str(r), q if isinstance(q, str | int | float) else str(q))
            if key not in parsed:
                parsed[key] = _value(q)
            usage[(("nodepool", str(pool)), ("resource_type", resource_label(key[0])))] += parsed[key]
        # Karpenter's usage counts nodes too (status.resources.nodes, whence a static pool's status.nodes)
        usage[(("nodepool", str(pool)), ("resource_type", "nodes"))] += 1
    _gauge(out, "karpenter_nodepools_usage", "The amount of resources that have been provisioned for a nodepool. "
           "Labeled by nodepool name and resource type.", usage)
    limits = {(("nodepool", str(p.name)), ("resource_type", resource_label(str(r)))): _value(q)
              for p in NodePool.objects.all() for r, q in (p.limits or {}).items()}
    _gauge(out, "karpenter_nodepools_limit", "Limits specified on the nodepool that restrict the quantity of "
           "resources provisioned. Labeled by nodepool name and resource type.", limits)
    _gauge(out, "karpenter_scheduler_unschedulable_pods_count", "The number of unschedulable Pods.",
           {(("controller", "provisioner"),): last.pods_pending if last else 0})
    price: dict[tuple[tuple[str, str], ...], float] = {}
    for itype, ct, zone, p in NodeClaim.objects.active().filter(price_per_hour__isnull=False).values_list(
            "instance_type", "capacity_type", "zone", "price_per_hour").order_by("instance_type", "capacity_type", "zone", "id"):
        price.setdefault((("capacity_type", ct), ("instance_type", itype), ("zone", zone)), float(p))
    _gauge(out, "karpenter_cloudprovider_instance_type_offering_price_estimate",
           "Instance type offering estimated hourly price used when making informed decisions. Estimated price is "
           "per hour.", price)


def write_loadmaster(out: Exposition, last: MetricSample | None, live: LiveRead | None, now: datetime) -> None:
    rows = [last, *MetricSample.objects.filter(at=last.at).exclude(nodepool="").order_by("nodepool")] if last else []
    cost = {(("estimated", "true" if s.estimated else "false"), ("nodepool", s.nodepool)): float(s.cost_per_hour)
            for s in rows}
    _gauge(out, "loadmaster_cost_per_hour_dollars", "Cost per hour of the nodes (nodepool empty: the cluster)", cost)
    _gauge(out, "loadmaster_on_demand_cost_per_hour_dollars", "What the same nodes would cost on-demand, per hour",
           {(("nodepool", s.nodepool),): float(s.on_demand_cost_per_hour) for s in rows})
    _gauge(out, "loadmaster_spot_savings_per_hour_dollars", "On-demand equivalent minus actual cost, per hour",
           {(("nodepool", s.nodepool),): float(s.on_demand_cost_per_hour - s.cost_per_hour) for s in rows})
    summary = selectors.cost_summary(nodes=live.nodes if live else None, now=now)
    _gauge(out, "loadmaster_month_to_date_cost_dollars", "Cost this month so far", {(): summary.month_to_date})
    _gauge(out, "loadmaster_month_forecast_cost_dollars", "Month-end forecast at the last 24 hours' mean rate",
           {(): summary.forecast})
    _gauge(out, "loadmaster_stranded_capacity_per_hour_dollars", "Allocatable nobody requested, priced per node",
           {} if summary.stranded_per_hour is None else {(): summary.stranded_per_hour})
    _gauge(out, "loadmaster_lower_bound_per_hour_dollars",
           "The provisioning engine's lower bound for the running pods, per hour (absent when unknown)",
           {(("nodepool", s.nodepool),): float(s.lower_bound_per_hour) for s in rows if s.lower_bound_per_hour is not None})
    reasons: dict[tuple[tuple[str, str], ...], float] = defaultdict(float)
    for text, n in ((last.unschedulable_reasons or {}) if last else {}).items():
        pool = selectors.reasons_nodepool(text)
        reason = text.split(":", 1)[1].strip() if pool else text
        reasons[(("nodepool", pool), ("reason", reason))] += float(n) if isinstance(n, int | float) else 0.0
    _gauge(out, "loadmaster_unschedulable_pods", "Pods pending now, per NodePool and the reason it refused them "
           "(a pod refused by two NodePools counts in both)", reasons)
    problems = {(("loop", loop), ("nodepool", pool)): 1.0
                for pool, loop in NodePoolProblem.objects.values_list("nodepool", "loop")}
    _gauge(out, "loadmaster_nodepool_unusable", "1 for a NodePool a control loop left out on its last run (its "
           "page and the ledger say why); the other pools are still served", problems)
    saved = (voluntary_disruptions().filter(cost_before__isnull=False, cost_after__isnull=False)
             .values_list("nodepool_name").annotate(s=Sum(F("cost_before") - F("cost_after"))).order_by())
    out.family("loadmaster_consolidation_savings_per_hour_dollars_total", "counter",
               "Sum of the hourly savings of every disruption decision: its increase over a window is what the "
               "window's consolidations save per hour")
    for pool, s in sorted(saved):
        out.sample("loadmaster_consolidation_savings_per_hour_dollars_total", f'nodepool="{escape(pool)}"' if pool else "",
                   float(s or 0))


def render(*, cluster: ClusterBackend | None = None, now: datetime | None = None) -> Exposition:
    now = now or timezone.now()
    out = Exposition()
    live = read_live(cluster, now=now)
    if live is not None:
        write_live(out, live, now=now)
    last = MetricSample.objects.filter(nodepool="").order_by("-at").first()
    write_fleet(out, last)
    write_ledger(out, now=now)
    write_consolidation_scores(out)
    write_loadmaster(out, last, live, now)
    return out


def _allowed(request: HttpRequest) -> bool:
    if request.user.is_authenticated:
        return True
    token = getattr(settings, "LOADMASTER_METRICS_TOKEN", "") or ""
    header = request.headers.get("Authorization", "")
    if token and header.startswith("Bearer "):
        return hmac.compare_digest(header[len("Bearer "):].encode(), token.encode())
    return bool(getattr(settings, "LOADMASTER_METRICS_PUBLIC", False))


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not _allowed(request):
        response = HttpResponse("metrics need a session or a bearer token\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="loadmaster"'
        return response
    return HttpResponse(render().text().encode(), content_type=CONTENT_TYPE)
