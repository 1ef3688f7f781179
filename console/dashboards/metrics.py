"""/metrics in Prometheus text format with Karpenter's metric names and label sets, so Karpenter's
own Grafana dashboards work unchanged, plus Loadmaster's cost and savings gauges.

Auth: with settings.LOADMASTER_METRICS_TOKEN set, a scraper sends ``Authorization: Bearer <token>``;
a signed-in console user is always accepted. Without a token only signed-in users get through (and
LOADMASTER_METRICS_PUBLIC=True opens it to anyone, for a scrape inside a trusted network)."""

from __future__ import annotations

import hmac
from collections import Counter
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from console.control.models import MetricSample
from console.dashboards import selectors
from console.fleet.models import Decision, NodeClaim, NodePool
from packing.quantity import QuantityError, parse_quantity

_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")


def _value(resource: str, quantity: Any) -> float:
    """Karpenter reports cpu in cores and memory in bytes: the quantity's base unit."""
    try:
        return parse_quantity(quantity) / 1000
    except (QuantityError, TypeError, ValueError):
        return 0.0


def _node_labels(c: NodeClaim) -> list[str]:
    return [c.node_name or c.name, c.nodepool_name, c.instance_type, c.capacity_type, c.zone]


_NODE_LABELS = ["node_name", "nodepool", "instance_type", "capacity_type", "zone"]


class LoadmasterCollector:
    def collect(self) -> Iterable[Any]:
        claims = list(NodeClaim.objects.active())
        alloc = GaugeMetricFamily("karpenter_nodes_allocatable", "Node allocatable", labels=[*_NODE_LABELS, "resource_type"])
        reqs = GaugeMetricFamily("karpenter_nodes_total_pod_requests", "Node total pod requests",
                                 labels=[*_NODE_LABELS, "resource_type"])
        daemon = GaugeMetricFamily("karpenter_nodes_total_daemon_requests", "Node total daemon requests",
                                   labels=[*_NODE_LABELS, "resource_type"])
        usage: dict[tuple[str, str], float] = Counter()
        for c in claims:
            for r in _RESOURCES:
                if r in (c.allocatable or {}):
                    alloc.add_metric([*_node_labels(c), r], _value(r, c.allocatable[r]))
                if r in (c.requests or {}):
                    reqs.add_metric([*_node_labels(c), r], _value(r, c.requests[r]))
                # Karpenter counts capacity (not allocatable) against limits; so does usage.
                if r in (c.capacity or {}):
                    usage[(c.nodepool_name, r)] += _value(r, c.capacity[r])
        yield from (alloc, reqs, daemon)

        pool_usage = GaugeMetricFamily("karpenter_nodepools_usage", "NodePool usage", labels=["nodepool", "resource_type"])
        for (pool, r), v in sorted(usage.items()):
            pool_usage.add_metric([pool, r], v)
        yield pool_usage
        limit = GaugeMetricFamily("karpenter_nodepools_limit", "NodePool limits", labels=["nodepool", "resource_type"])
        for pool in NodePool.objects.all():
            for r, q in sorted((pool.limits or {}).items()):
                limit.add_metric([pool.name, r], _value(r, q))
        yield limit

        last = MetricSample.objects.filter(nodepool="").order_by("-at").first()
        state = GaugeMetricFamily("karpenter_pods_state", "Pod states", labels=["phase", "nodepool"])
        pools = {s.nodepool: s for s in MetricSample.objects.filter(at=last.at).exclude(nodepool="")} if last else {}
        for pool, s in sorted(pools.items()):
            state.add_metric(["Running", pool], s.pods)
        if last:
            state.add_metric(["Pending", ""], last.pods_pending)
        yield state
        unsched = GaugeMetricFamily("karpenter_scheduler_unschedulable_pods_count", "Unschedulable pods",
                                    labels=["controller"])
        unsched.add_metric(["provisioner"], last.pods_pending if last else 0)
        yield unsched

        price = GaugeMetricFamily("karpenter_cloudprovider_instance_type_offering_price_estimate",
                                  "Offering price", labels=["instance_type", "capacity_type", "zone"])
        seen: set[tuple[str, str, str]] = set()
        for c in claims:
            key = (c.instance_type, c.capacity_type, c.zone)
            if c.price_per_hour is not None and key not in seen:
                seen.add(key)
                price.add_metric(list(key), float(c.price_per_hour))
        yield price

        decisions = Decision.objects.values("kind", "nodepool_name", "details__reason").annotate(n=Count("id"))
        vol = CounterMetricFamily("karpenter_voluntary_disruption_decisions", "Disruption decisions",
                                  labels=["decision", "reason", "consolidation_type"])
        for row in decisions:
            if row["kind"] == Decision.DISRUPTION:
                vol.add_metric(["delete", str(row["details__reason"] or ""), ""], row["n"])
        yield vol

        created = CounterMetricFamily("karpenter_nodeclaims_created", "NodeClaims created",
                                      labels=["reason", "nodepool", "min_values_relaxed"])
        nodes_created = CounterMetricFamily("karpenter_nodes_created", "Nodes created", labels=["nodepool"])
        disrupted = CounterMetricFamily("karpenter_nodeclaims_disrupted", "NodeClaims disrupted",
                                        labels=["reason", "nodepool", "capacity_type"])
        terminated = CounterMetricFamily("karpenter_nodes_terminated", "Nodes terminated", labels=["nodepool"])
        for row in NodeClaim.objects.values("nodepool_name").annotate(n=Count("id")).order_by("nodepool_name"):
            created.add_metric(["provisioning", row["nodepool_name"], "false"], row["n"])
        for row in (NodeClaim.objects.filter(registered_at__isnull=False).values("nodepool_name")
                    .annotate(n=Count("id")).order_by("nodepool_name")):
            nodes_created.add_metric([row["nodepool_name"]], row["n"])
        for row in (NodeClaim.objects.filter(terminated_at__isnull=False)
                    .values("nodepool_name", "termination_reason", "capacity_type").annotate(n=Count("id"))
                    .order_by("nodepool_name", "termination_reason", "capacity_type")):
            disrupted.add_metric([row["termination_reason"], row["nodepool_name"], row["capacity_type"]], row["n"])
        for row in (NodeClaim.objects.filter(terminated_at__isnull=False, registered_at__isnull=False)
                    .values("nodepool_name").annotate(n=Count("id")).order_by("nodepool_name")):
            terminated.add_metric([row["nodepool_name"]], row["n"])
        yield from (created, nodes_created, disrupted, terminated)

        cost = GaugeMetricFamily("loadmaster_cost_per_hour_dollars", "Cost per hour", labels=["nodepool", "estimated"])
        od = GaugeMetricFamily("loadmaster_on_demand_cost_per_hour_dollars", "On-demand equivalent per hour",
                               labels=["nodepool"])
        sav = GaugeMetricFamily("loadmaster_spot_savings_per_hour_dollars", "On-demand equivalent − actual",
                                labels=["nodepool"])
        rows = [last, *pools.values()] if last else []
        for s in rows:
            cost.add_metric([s.nodepool, "true" if s.estimated else "false"], float(s.cost_per_hour))
            od.add_metric([s.nodepool], float(s.on_demand_cost_per_hour))
            sav.add_metric([s.nodepool], float(s.on_demand_cost_per_hour - s.cost_per_hour))
        mtd = GaugeMetricFamily("loadmaster_month_to_date_cost_dollars", "Cost this month so far", labels=[])
        forecast = GaugeMetricFamily("loadmaster_month_forecast_cost_dollars", "Month-end forecast", labels=[])
        summary = selectors.cost_summary()
        mtd.add_metric([], summary.month_to_date)
        forecast.add_metric([], summary.forecast)
        stranded = GaugeMetricFamily("loadmaster_stranded_capacity_per_hour_dollars",
                                     "Allocatable nobody requested, priced per node", labels=[])
        stranded.add_metric([], summary.stranded_per_hour)
        yield from (cost, od, sav, mtd, forecast, stranded)


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
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LoadmasterCollector())  # type: ignore[arg-type]
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
