"""record_metrics: one sample per minute per NodePool and for the whole cluster, from the live
cluster and the NodeClaims: cost (and its on-demand equivalent), allocatable vs requested, pending
pods and why. Idempotent per minute: a repeated run overwrites the same rows."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from console import adapters
from console.backends.base import ClusterBackend
from console.control.models import MetricSample
from console.fleet.models import Decision, NodeClaim
from packing.instancetype import InstanceType

NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"


def _offering_price(types: dict[str, InstanceType], itype: str, zone: str, capacity_type: str) -> tuple[float | None, str]:
    t = types.get(itype)
    if t is None:
        return None, ""
    for o in t.offerings:
        if o.zone == zone and o.capacity_type == capacity_type:
            return o.price, o.price_source
    return None, ""


@transaction.atomic
def metrics_record(*, cluster: ClusterBackend, now: datetime | None = None) -> list[MetricSample]:
    minute = (now or timezone.now()).replace(second=0, microsecond=0)
    pods, _ = cluster.list_pods()
    nodes, _ = cluster.list_nodes()
    inputs = adapters.cluster_inputs(pods=pods, nodes=nodes)
    types = {t.name: t for t in adapters.instance_types(settings.LOADMASTER_AWS_REGION)}
    claims = {c.node_name: c for c in NodeClaim.objects.active().exclude(node_name="")}

    rows: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    pool_of_node: dict[str, str] = {}
    for node in inputs.nodes:
        pool = node.labels.get(NODEPOOL_LABEL, "")
        pool_of_node[node.name] = pool
        itype = node.labels.get(INSTANCE_TYPE_LABEL, "")
        zone = node.labels.get(ZONE_LABEL, "")
        capacity_type = node.labels.get(CAPACITY_TYPE_LABEL, "on-demand")
        claim = claims.get(node.name)
        if claim is not None and claim.price_per_hour is not None:
            price, source = float(claim.price_per_hour), claim.price_source
        else:
            price, source = _offering_price(types, itype, zone, capacity_type)
        on_demand, _ = _offering_price(types, itype, zone, "on-demand")
        for key in ("", pool) if pool else ("",):
            row = rows[key]
            row["nodes"] += 1
            row["spot_nodes"] += capacity_type == "spot"
            row["cpu_allocatable"] += node.allocatable.get("cpu", 0)
            row["memory_allocatable"] += node.allocatable.get("memory", 0) // 1000
            if price is None:
                row["unpriced_nodes"] += 1
                row["estimated"] = 1
            else:
                row["cost"] += price
                row["estimated"] |= source == "estimate"
            row["on_demand"] += on_demand if on_demand is not None else (price or 0.0)
    for pod in inputs.running:
        pool = pool_of_node.get(pod.node_name or "")
        if pool is None:
            continue
        for key in ("", pool) if pool else ("",):
            rows[key]["pods"] += 1
            rows[key]["cpu_requested"] += pod.requests.get("cpu", 0)
            rows[key]["memory_requested"] += pod.requests.get("memory", 0) // 1000

    pending = {f"{(p['metadata'].get('namespace') or 'default')}/{p['metadata']['name']}" for p in cluster.pending_pods()}
    reasons: Counter[str] = Counter()
    for pod_key in pending:
        verdict = Decision.objects.filter(kind=Decision.UNSCHEDULABLE, details__pod=pod_key).order_by("-at").first()
        for item in (verdict.details.get("reasons") or []) if verdict else []:
            reasons[f"nodepool {item['nodepool']}: {item['reason']}"] += 1
        if verdict is None:
            reasons["waiting for the provisioner"] += 1
    rows[""]["pods_pending"] = len(pending)

    saved = []
    for pool, row in rows.items():
        sample, _ = MetricSample.objects.update_or_create(at=minute, nodepool=pool, defaults={
            "nodes": row["nodes"], "spot_nodes": row["spot_nodes"],
            "cost_per_hour": Decimal(str(round(row["cost"], 6))),
            "on_demand_cost_per_hour": Decimal(str(round(row["on_demand"], 6))),
            "estimated": bool(row["estimated"]), "unpriced_nodes": row["unpriced_nodes"],
            "cpu_allocatable": row["cpu_allocatable"], "cpu_requested": row["cpu_requested"],
            "memory_allocatable": row["memory_allocatable"], "memory_requested": row["memory_requested"],
            "pods": row["pods"], "pods_pending": row["pods_pending"] if pool == "" else 0,
            "unschedulable_reasons": dict(reasons) if pool == "" else {},
        })
        saved.append(sample)
    return saved
