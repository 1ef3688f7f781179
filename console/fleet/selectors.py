"""Reads for the console pages and the API: what each list and detail page shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Q, QuerySet

from console.fleet.models import ChangeRecord, Decision, EC2NodeClass, NodeClaim, NodePool
from console.telemetry.models import NodePoolProblem
from packing.api import (
    SCHEDULES_ANNOTATION,
    FieldError,
    QuantityError,
    format_duration,
    format_quantity,
    parse_quantity,
    parse_windows,
)


@dataclass
class PoolUsage:
    """What a NodePool uses now against its limits: the numbers the pool list shows."""

    nodepool: NodePool
    nodes: int
    cost_per_hour: Decimal
    usage: dict[str, int]            # milli-units of node capacity launched (what limits count)
    limits: dict[str, int | None]    # milli-units, None where the pool sets no limit
    # Why a control loop could not use the pool on its last run (console.telemetry.models.NodePoolProblem).
    problems: list[Any] = field(default_factory=list)

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


# A claim marked for removal when its NodePool row was deleted (the FK was nulled by the deletion).
_OF_DELETED_POOL = Q(nodepool__isnull=True, deletion_requested_at__isnull=False)


def _quantity(value: Any) -> int:
    try:
        return parse_quantity(value)
    except (QuantityError, TypeError):
        return 0


def nodepool_list(*, queryset: QuerySet[NodePool] | None = None) -> list[PoolUsage]:
    pools = list(queryset if queryset is not None else NodePool.objects.all())
    # The claims of a deleted pool still draining are not a new pool's of the same name (they are
    # listed by deleted_nodepools()).
    claims = NodeClaim.objects.active().filter(nodepool_name__in=[p.name for p in pools]).exclude(
        _OF_DELETED_POOL).values("nodepool_name", "capacity", "allocatable", "price_per_hour")
    per_pool: dict[str, list[dict[str, Any]]] = {}
    for row in claims:
        per_pool.setdefault(row["nodepool_name"], []).append(dict(row))
    problems: dict[str, list[NodePoolProblem]] = {}
    for problem in NodePoolProblem.objects.filter(nodepool__in=[p.name for p in pools]):
        problems.setdefault(problem.nodepool, []).append(problem)
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
        result.append(PoolUsage(pool, nodes, cost, usage, limits, problems.get(pool.name, [])))
    return result


@dataclass
class DeletedPoolNodes:
    """Live NodeClaims of a NodePool that was deleted: being drained and terminated, still billed."""

    name: str
    nodes: int
    cost_per_hour: Decimal
    unpriced: int                    # claims whose price is unknown (not in cost_per_hour)
    names: list[str]


def _deleted_rows(claims: QuerySet[NodeClaim]) -> dict[str, DeletedPoolNodes]:
    rows: dict[str, DeletedPoolNodes] = {}
    for name, claim_name, price in claims.order_by("nodepool_name", "name").values_list(
            "nodepool_name", "name", "price_per_hour"):
        row = rows.setdefault(name, DeletedPoolNodes(name, 0, Decimal(0), 0, []))
        row.nodes += 1
        row.names.append(claim_name)
        if price is None:
            row.unpriced += 1
        else:
            row.cost_per_hour += price
    return rows


def deleted_nodepools() -> list[DeletedPoolNodes]:
    """One row per deleted NodePool that still has live NodeClaims (shown as "NodePool deleted")."""
    orphans = NodeClaim.objects.active().filter(nodepool__isnull=True).filter(
        _OF_DELETED_POOL | ~Q(nodepool_name__in=NodePool.objects.values("name")))
    return list(_deleted_rows(orphans).values())


def nodepool_live_claims(*, nodepool: NodePool) -> QuerySet[NodeClaim]:
    """The pool's live NodeClaims: by the row, or by name for a claim saved without one."""
    return NodeClaim.objects.active().filter(
        Q(nodepool=nodepool) | Q(nodepool__isnull=True, nodepool_name=nodepool.name)).exclude(_OF_DELETED_POOL)


def nodepool_deletion_impact(*, nodepool: NodePool) -> DeletedPoolNodes:
    """What deleting this NodePool removes: its live NodeClaims and what they cost per hour."""
    rows = _deleted_rows(nodepool_live_claims(nodepool=nodepool))
    return rows.get(nodepool.name) or DeletedPoolNodes(nodepool.name, 0, Decimal(0), 0, [])


def fleet_cost_per_hour(*, usages: list[PoolUsage], deleted: list[DeletedPoolNodes]) -> Decimal:
    return sum((u.cost_per_hour for u in usages), Decimal(0)) + sum((d.cost_per_hour for d in deleted), Decimal(0))


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


@dataclass(frozen=True)
class WindowRow:
    """One clock-policy window of a NodePool as its page shows it: open now (until when) or when it opens next."""

    name: str
    schedule: str
    duration: str
    sets: str
    open_until: datetime | None
    opens_next: datetime | None


def nodepool_windows(*, nodepool: NodePool, now: datetime) -> tuple[list[WindowRow], str]:
    """The pool's windows (its schedules field, the annotation loadmaster.dev/schedules) read by the engine's parser, and a problem text
    when the stored annotation does not parse (validation refuses that on save; an older row may hold one)."""
    text = nodepool.schedules
    if not text:
        return [], ""
    try:
        windows = parse_windows(text, static=nodepool.replicas is not None, path=SCHEDULES_ANNOTATION)
    except FieldError as e:
        return [], str(e)
    rows = []
    for w in windows:
        span = w.window(now)
        sets = ", ".join(f"{k} {v}" if not isinstance(v, dict) else f"{k} " + ", ".join(f"{a}={b}" for a, b in v.items())
                         for k, v in w.changes().items())
        rows.append(WindowRow(w.name, w.schedule.text, format_duration(w.duration), sets,
                              span[1] if span else None, None if span else w.schedule.next_fire_after(now)))
    return rows, ""
