"""Static NodePools (spec.replicas): keep exactly `replicas` nodes, as Karpenter's static provisioning and
deprovisioning controllers do. Run by the provision loop, under its lock, before it plans for pending pods (so a
static node launched now already counts as capacity there).

* Missing nodes are launched from the pool's template: its cheapest launchable type (packing.api.static_nodeclaim),
  whatever the pods ask for; never more than ``limits.nodes`` live NodeClaims.
* A NodeClaim the disrupt loop is replacing (drift, expiration: ``disrupting_at`` set) still counts, and one
  replacement is launched for it at once (one for one, the new node before the old one goes) while
  ``limits.nodes`` allows; at the limit the replacement waits for the old node to go, as in Karpenter.
* Extra nodes (after a scale-down) are marked for deletion: the termination step drains them through evictions
  (PodDisruptionBudgets respected) and terminates them. Which go first is Karpenter's order
  (packing.api.scale_down_order): not yet launched, then empty, then the least disruptive. A user's scale-down is
  not held by disruption budgets (Karpenter classes it as forceful, like expiration).

The engine never launches a node from a static pool for pending pods and never consolidates its nodes; pods may
schedule onto them like any node. Every launch and removal writes a ledger entry that says why.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from console import adapters
from console.backends.base import CloudProvider, ClusterBackend, NodeNotFound
from console.control.launch import claim_name, nodeclaim_launch
from console.fleet.models import Decision, EC2NodeClass, NodeClaim, NodePool
from console.fleet.services import nodeclaims_mark_for_deletion
from packing import api
from packing.api import InstanceType, ScaleDownCandidate

log = logging.getLogger(__name__)

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
MAX_LAUNCHES_PER_TICK = 20  # a pool scaled from 0 to 500 fills over several ticks, well inside the loop's lock


@dataclass
class StaticOutcome:
    launched: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)


def _money(value: float) -> Decimal:
    return Decimal(str(round(value, 6)))


def _node_limit(engine_pool: api.NodePool) -> int | None:
    """limits.nodes as in force now (the engine pool has its clock-policy windows applied), in nodes."""
    milli = (engine_pool.limits or {}).get("nodes")
    return None if milli is None else int(milli // 1000)  # quantities are milli-units


def static_pools_reconcile(*, cluster: ClusterBackend, cloud: CloudProvider, pools: Sequence[NodePool],
                           classes: Sequence[EC2NodeClass], daemonsets: Sequence[Mapping[str, Any]],
                           catalog: Sequence[InstanceType], now: datetime,
                           problems: dict[str, str]) -> StaticOutcome:
    """Launch or remove nodes so that every static NodePool has `replicas`; pools the engine cannot read or
    launch from are named in ``problems``."""
    outcome = StaticOutcome()
    static = [p for p in pools if p.replicas is not None]
    if not static:
        return outcome
    inputs = adapters.cluster_inputs(pods=[], nodes=[], pdbs=[], daemonsets=list(daemonsets), nodepools=static,
                                     nodeclasses=list(classes), nodeclaims=NodeClaim.objects.none(),
                                     problems=problems)
    # as the pools are now: a clock-policy window may change replicas and limits.nodes (loadmaster.dev/schedules)
    now_pools, opened = api.pools_at(inputs.nodepools, now)
    engine_pools = {p.name: p for p in now_pools}
    windows = {w.nodepool: f" (clock-policy window {w.name} open until {w.end:%Y-%m-%dT%H:%M:%SZ})"
               for w in opened if "replicas" in w.changes or "limits" in w.changes}
    for pool in static:
        engine_pool = engine_pools.get(pool.name)
        if engine_pool is None:
            continue  # named in problems by the adapters
        _reconcile(pool, engine_pool, inputs.daemonsets, catalog, cluster, cloud, now, outcome, problems,
                   windows.get(pool.name, ""))
    return outcome


def _reconcile(pool: NodePool, engine_pool: api.NodePool, daemonsets: Sequence[Any],
               catalog: Sequence[InstanceType], cluster: ClusterBackend, cloud: CloudProvider, now: datetime,
               outcome: StaticOutcome, problems: dict[str, str], window: str) -> None:
    replicas = int(engine_pool.replicas or 0)
    live = list(NodeClaim.objects.active().filter(nodepool=pool, deletion_requested_at__isnull=True))
    running = [c for c in live if c.disrupting_at is None]
    replacing = [c for c in live if c.disrupting_at is not None]
    extra = len(running) - replicas
    if extra > 0:
        _scale_down(pool, running, extra, replicas, window, cluster, now, outcome)
        return
    limit = _node_limit(engine_pool)
    # Every live claim counts against limits.nodes, those on their way out too (they still run).
    everything = NodeClaim.objects.active().filter(nodepool=pool).count()
    want = replicas - len(running) if replacing else replicas - len(live)
    room = want if limit is None else min(want, limit - everything)
    count = min(room, MAX_LAUNCHES_PER_TICK)
    if count <= 0:
        return
    for _ in range(count):
        planned = api.static_nodeclaim(engine_pool, catalog, daemonsets, name=claim_name(pool.name))
        if planned is None:
            problems[pool.name] = "static NodePool: its requirements leave no launchable instance type offering"
            return
        claim = NodeClaim.objects.create(
            name=planned.name, nodepool=pool, nodepool_name=pool.name, instance_type=planned.instance_type,
            instance_type_options=list(planned.instance_type_options), capacity_type=planned.capacity_type,
            zone=planned.zone, price_per_hour=_money(planned.price_per_hour),
            requests=planned.requests.to_strings(), allocatable=planned.allocatable.to_strings(),
            capacity=next((t.capacity.to_strings() for t in catalog if t.name == planned.instance_type), {}),
            labels=dict(planned.labels),
            taints=[t.to_dict() for t in planned.taints] + [t.to_dict() for t in planned.startup_taints],
            created_at=now)
        for_whom = (f"to replace {replacing[0].name}, which is being disrupted, one for one" if replacing
                    else f"{len(running)} of {replicas} running")
        why = (f"static nodepool {pool.name} keeps spec.replicas={replicas} nodes{window} ({for_whom}"
               f"{f', limits.nodes {limit}' if limit is not None else ''}): launched {planned.instance_type} "
               f"({planned.capacity_type}, {planned.zone}) at ${planned.price_per_hour:.4f}/h, the cheapest of "
               f"{len(planned.instance_type_options)} type(s) its requirements allow")
        result = nodeclaim_launch(claim=claim, cloud=cloud, catalog=catalog, now=now, why=why,
                                  details={"static_nodepool": pool.name, "replicas": replicas})
        if result == "launched":
            outcome.launched.append(claim.name)
            running.append(claim)
        elif result in ("failed", "retry"):
            outcome.failed[claim.name] = result
            if result == "failed":
                return  # the ledger says why; the next tick tries again


def _pods_on(cluster: ClusterBackend, claim: NodeClaim) -> tuple[int, bool]:
    """(pods that would move, whether the node or one of them has do-not-disrupt) of a claim's node."""
    if not claim.node_name:
        return 0, False
    try:
        node = cluster.get_node(claim.node_name)
    except NodeNotFound:
        return 0, False
    dnd = ((node.get("metadata") or {}).get("annotations") or {}).get(DO_NOT_DISRUPT) == "true"
    moving = 0
    for pod in cluster.pods_on_node(claim.node_name):
        meta = pod.get("metadata") or {}
        if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []):
            continue
        if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
            continue
        moving += 1
        dnd = dnd or (meta.get("annotations") or {}).get(DO_NOT_DISRUPT) == "true"
    return moving, dnd


def _scale_down(pool: NodePool, running: list[NodeClaim], extra: int, replicas: int, window: str,
                cluster: ClusterBackend, now: datetime, outcome: StaticOutcome) -> None:
    by_name = {c.name: c for c in running}
    candidates = []
    for c in running:
        pods, dnd = _pods_on(cluster, c)
        # Karpenter's rescheduling cost is 1 per pod by default
        candidates.append(ScaleDownCandidate(c.name, bool(c.provider_id or c.launched_at), pods, dnd, cost=pods))
    chosen = api.scale_down_order(candidates)[:extra]
    names = [c.name for c in chosen]
    reason = f"static nodepool {pool.name} scaled down to {replicas} replica(s){window}"
    marked = nodeclaims_mark_for_deletion(claims=NodeClaim.objects.filter(name__in=names), reason=reason, now=now)
    if not marked:
        return
    outcome.removed.extend(names)

    def how(c: ScaleDownCandidate) -> str:
        if not c.launched:
            return f"{c.name} (not launched yet)"
        if c.pods == 0:
            return f"{c.name} (empty)"
        return f"{c.name} ({c.pods} pod(s){', do-not-disrupt' if c.do_not_disrupt else ''})"

    cost = sum((by_name[n].price_per_hour or Decimal(0)) for n in names)
    Decision.objects.create(
        at=now, kind=Decision.DISRUPTION, nodepool=pool, nodepool_name=pool.name, nodes=names,
        cost_before=cost, cost_after=Decimal(0),
        why=f"{reason}: {len(running)} ran, so {len(names)} go: {', '.join(how(c) for c in chosen)} "
            "(not launched first, then empty, then the least disruptive); each is cordoned, drained through "
            "evictions (PodDisruptionBudgets respected) and terminated",
        details={"static_nodepool": pool.name, "replicas": replicas, "scale_down": names})
