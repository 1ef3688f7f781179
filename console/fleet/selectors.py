"""Reads for the console pages and the API: what each list and detail page shows."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from console.fleet.models import ChangeRecord, Decision, EC2NodeClass, NodeClaim, NodePool
from packing.quantity import QuantityError, format_quantity, parse_quantity


@dataclass
class PoolUsage:
    """What a NodePool uses now against its limits: the numbers the pool list shows."""

    nodepool: NodePool
    nodes: int
    cost_per_hour: Decimal
    usage: dict[str, int]            # milli-units of node capacity launched (what limits count)
    limits: dict[str, int | None]    # milli-units, None where the pool sets no limit

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for resource in ("cpu", "memory", *sorted(k for k in self.limits if k not in ("cpu", "memory"))):
            used = self.usage.get(resource, 0)
            limit = self.limits.get(resource)
            out.append({
                "resource": resource,
                "used": format_quantity(used, resource),
                "limit": format_quantity(limit, resource) if limit is not None else "",
                "percent": round(100 * used / limit) if limit else None,
            })
        return out


def _quantity(value: Any) -> int:
    try:
        return parse_quantity(value)
    except (QuantityError, TypeError):
        return 0


def nodepool_list(*, queryset: QuerySet[NodePool] | None = None) -> list[PoolUsage]:
    pools = list(queryset if queryset is not None else NodePool.objects.all())
    claims = NodeClaim.objects.active().filter(nodepool_name__in=[p.name for p in pools]).values(
        "nodepool_name", "capacity", "allocatable", "price_per_hour")
    per_pool: dict[str, list[dict[str, Any]]] = {}
    for claim in claims:
        per_pool.setdefault(claim["nodepool_name"], []).append(claim)
    result = []
    for pool in pools:
        usage: dict[str, int] = {}
        cost = Decimal(0)
        for claim in per_pool.get(pool.name, []):
            for resource, quantity in (claim["capacity"] or claim["allocatable"] or {}).items():
                usage[resource] = usage.get(resource, 0) + _quantity(quantity)
            cost += claim["price_per_hour"] or 0
        limits: dict[str, int | None] = {"cpu": None, "memory": None}
        for resource, quantity in (pool.limits or {}).items():
            limits[resource] = _quantity(quantity)
        nodes = len(per_pool.get(pool.name, []))
        usage["nodes"] = nodes * 1000
        result.append(PoolUsage(pool, nodes, cost, usage, limits))
    return result


def nodepool_usage(*, nodepool: NodePool) -> PoolUsage:
    return nodepool_list(queryset=NodePool.objects.filter(pk=nodepool.pk))[0]


def change_history(*, object_type: str, name: str, limit: int = 50) -> QuerySet[ChangeRecord]:
    return ChangeRecord.objects.filter(object_type=object_type, object_name=name).select_related("user")[:limit]


def recent_decisions(*, nodepool_name: str | None = None, limit: int = 20) -> QuerySet[Decision]:
    qs = Decision.objects.all()
    if nodepool_name:
        qs = qs.filter(nodepool_name=nodepool_name)
    return qs[:limit]


def nodepools_using(*, nodeclass: EC2NodeClass) -> QuerySet[NodePool]:
    return NodePool.objects.filter(node_class_name=nodeclass.name)
