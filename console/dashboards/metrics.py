"""/metrics in Prometheus text format with Karpenter's metric names and label sets, so Karpenter's
own Grafana dashboards work unchanged, plus Loadmaster's cost and savings gauges.

Auth: with settings.LOADMASTER_METRICS_TOKEN set, a scraper sends ``Authorization: Bearer <token>``;
a signed-in console user is always accepted. Without a token only signed-in users get through (and
LOADMASTER_METRICS_PUBLIC=True opens it to anyone, for a scrape inside a trusted network)."""

from __future__ import annotations

import hmac
import logging
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from console.backends.base import ClusterBackend
from console.backends.factory import cluster_backend
from console.control.models import MetricSample
from console.dashboards import selectors
from console.fleet.models import Decision, NodeClaim, NodePool
from packing.quantity import QuantityError, parse_quantity

log = logging.getLogger(__name__)

_NODE_LABELS = ["node_name", "nodepool", "instance_type", "capacity_type", "zone", "managed"]


def _value(resource: str, quantity: Any) -> float:
    """Karpenter reports cpu in cores and memory in bytes: the quantity's base unit."""
    try:
        return parse_quantity(quantity) / 1000
    except (QuantityError, TypeError, ValueError):
        return 0.0


def _resource_label(resource: str) -> str:
    # Karpenter's resource_type: the resource name lower-cased with "-" as "_" (ephemeral_storage).
    return resource.lower().replace("-", "_")


def _node_labels(n: selectors.NodeRow) -> list[str]:
    return [n.name, n.nodepool, n.instance_type, n.capacity_type, n.zone, "true" if n.managed else "false"]


class NodeCollector:
    """Per live node, as Karpenter's node metrics controller: allocatable, the requests of every pod
    bound to the node (DaemonSet pods included, as Karpenter v1 does), and of its DaemonSet pods alone."""

    def __init__(self, nodes: list[selectors.NodeRow]) -> None:
        self.nodes = nodes

    def collect(self) -> Iterable[Any]:
        alloc = GaugeMetricFamily("karpenter_nodes_allocatable", "Node allocatable are the resources allocatable by nodes.",
                                  labels=[*_NODE_LABELS, "resource_type"])
        reqs = GaugeMetricFamily("karpenter_nodes_total_pod_requests",
                                 "Node total pod requests are the resources requested by pods bound to nodes, "
                                 "including the DaemonSet pods.", labels=[*_NODE_LABELS, "resource_type"])
        daemon = GaugeMetricFamily("karpenter_nodes_total_daemon_requests",
                                   "Node total daemon requests are the resource requested by DaemonSet pods bound to nodes.",
                                   labels=[*_NODE_LABELS, "resource_type"])
        for n in self.nodes:
            labels = _node_labels(n)
            for r, milli in sorted(n.allocatable.items()):
                alloc.add_metric([*labels, _resource_label(r)], milli / 1000)
            # Requests are the containers' (the engine adds one "pods" per pod; Karpenter reports none).
            for family, amounts in ((reqs, n.pod_requests), (daemon, n.daemon_requests)):
                for r, milli in sorted(amounts.items()):
                    if r != "pods":
                        family.add_metric([*labels, _resource_label(r)], milli / 1000)
        yield from (alloc, reqs, daemon)


# (the live read's node list, its exposition text): the per-node series are thousands of lines on a
# big cluster and change only when the live read does, so one rendering serves every scrape until then.
_NODE_TEXT: tuple[list[selectors.NodeRow], bytes] | None = None


def _node_text(nodes: list[selectors.NodeRow] | None) -> bytes:
    global _NODE_TEXT
    if nodes is None:
        return b""
    if _NODE_TEXT is not None and _NODE_TEXT[0] is nodes:
        return _NODE_TEXT[1]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector(nodes))  # type: ignore[arg-type]
    text = generate_latest(registry)
    _NODE_TEXT = (nodes, text)
    return text


def live_nodes(cluster: ClusterBackend | None = None) -> list[selectors.NodeRow] | None:
    try:
        return selectors.live_nodes(cluster=cluster or cluster_backend())
    except Exception as exc:  # the cluster's gauges go missing; the rest still scrapes
        log.warning("/metrics: live cluster unavailable: %s", exc)
        return None


class LoadmasterCollector:
    def __init__(self, nodes: list[selectors.NodeRow] | None) -> None:
        self.live = nodes

    def collect(self) -> Iterable[Any]:
        claims = list(NodeClaim.objects.active())
        live = self.live
        usage: dict[tuple[str, str], float] = defaultdict(float)
        for c in claims:
            # Karpenter counts capacity (not allocatable) against limits; so does usage.
            for r, q in (c.capacity or {}).items():
                usage[(c.nodepool_name, _resource_label(r))] += _value(r, q)

        pool_usage = GaugeMetricFamily("karpenter_nodepools_usage", "NodePool usage", labels=["nodepool", "resource_type"])
        for (pool, r), v in sorted(usage.items()):
            pool_usage.add_metric([pool, r], v)
        yield pool_usage
        limit = GaugeMetricFamily("karpenter_nodepools_limit", "NodePool limits", labels=["nodepool", "resource_type"])
        for pool in NodePool.objects.all():
            for r, q in sorted((pool.limits or {}).items()):
                limit.add_metric([pool.name, _resource_label(r)], _value(r, q))
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
        summary = selectors.cost_summary(nodes=live)
        mtd.add_metric([], summary.month_to_date)
        forecast.add_metric([], summary.forecast)
        stranded = GaugeMetricFamily("loadmaster_stranded_capacity_per_hour_dollars",
                                     "Allocatable nobody requested, priced per node", labels=[])
        if summary.stranded_per_hour is not None:
            stranded.add_metric([], summary.stranded_per_hour)
        bound = GaugeMetricFamily("loadmaster_lower_bound_per_hour_dollars",
                                  "The provisioning engine's lower bound for the running pods", labels=["nodepool"])
        for s in rows:
            if s.lower_bound_per_hour is not None:
                bound.add_metric([s.nodepool], float(s.lower_bound_per_hour))
        yield from (cost, od, sav, mtd, forecast, stranded, bound)


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
    nodes = live_nodes()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LoadmasterCollector(nodes))  # type: ignore[arg-type]
    return HttpResponse(_node_text(nodes) + generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
