"""Node repair, as Karpenter's NodeRepair (feature gate, off by default; here LOADMASTER_NODE_REPAIR).

Karpenter's node.health controller (kubernetes-sigs/karpenter v1.14, pkg/controllers/node/health):

- A node is **unhealthy** when one of its conditions matches a repair policy (type and status), however
  long it has been so. It is **due** once the matching condition's lastTransitionTime plus the policy's
  toleration has passed; with several matches, the one due first counts.
- A due node is **force-terminated**: Karpenter deletes its NodeClaim with the termination timestamp set
  to now, so the drain neither waits for PodDisruptionBudgets nor for do-not-disrupt pods, nor for
  volumes to detach. Disruption budgets are not consulted: repair is not a voluntary disruption.
- **Never when more than 20% of the NodePool's nodes are unhealthy**: the NodePool's nodes (by the
  karpenter.sh/nodepool label) are counted, a node matching any policy is unhealthy (toleration or not),
  and the threshold is 20% of the count rounded up, as a PodDisruptionBudget's percentage — so one
  unhealthy node of three may be repaired, two of five may not. A NodeClaim without a NodePool is held
  to the same rule over every node of the cluster. A blocked repair is retried on later ticks
  (Karpenter requeues in 5 minutes and publishes a NodeRepairBlocked event).

Here one worker at a time (the ``repair`` loop lock) reads the nodes and their NodeClaims, and for each
due node: marks its claim for deletion (so, should this run die half-way, the lifecycle loop's
termination finishes the job), cordons it, deletes its pods with no grace (no eviction, so no PDB is asked; their
controllers recreate them pending) and then the Node, terminates the instance and closes the claim. One ledger line per repair, and one per refusal when the refusal
changes (not one per tick). The metrics (karpenter_nodeclaims_disrupted_total{reason="unhealthy"},
karpenter_nodeclaims_unhealthy_disrupted_total) are computed from those records by /metrics.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.utils import timezone

from console.backends.base import CloudProvider, ClusterBackend, KubeObject, NodeNotFound
from console.backends.kubernetes import NodeCondition, node_conditions
from console.control.locks import LockBusy, loop_lock
from console.control.termination import drainable
from console.fleet.models import Decision, NodeClaim
from console.repair_policy import RepairPolicy, duration_text

log = logging.getLogger(__name__)

NODEPOOL_LABEL = "karpenter.sh/nodepool"
# Karpenter's allowedUnhealthyPercent, rounded up on the node count.
UNHEALTHY_PERCENT = 20
# The ledger's details["repair"] values, and the prefix of a repaired claim's termination_reason (which
# /metrics maps to Karpenter's reason "unhealthy").
REPAIRED, BLOCKED = "repaired", "blocked"
REASON_PREFIX = "unhealthy:"
# Karpenter's event reason for a refusal.
BLOCKED_EVENT = "NodeRepairBlocked"


@dataclass(frozen=True)
class NodeHealth:
    """What node repair sees on one node: the policies its conditions match and when it is due."""

    node: str
    matches: tuple[tuple[RepairPolicy, NodeCondition], ...] = ()
    due_at: datetime | None = None              # None: healthy, or no lastTransitionTime to count from
    policy: RepairPolicy | None = None          # the match that is due first
    condition: NodeCondition | None = None

    @property
    def unhealthy(self) -> bool:
        return bool(self.matches)

    def is_due(self, now: datetime) -> bool:
        return self.due_at is not None and now >= self.due_at


def node_health(node: Mapping[str, Any], policies: Sequence[RepairPolicy]) -> NodeHealth:
    conditions = node_conditions(node)
    name = str((node.get("metadata") or {}).get("name") or "")
    matches = tuple((p, conditions[p.condition_type]) for p in policies
                    if p.condition_type in conditions
                    and conditions[p.condition_type].status == p.condition_status.value)
    timed = [(c.since + p.toleration, p, c) for p, c in matches if c.since is not None]
    if not timed:
        return NodeHealth(name, matches)
    due_at, policy, condition = min(timed, key=lambda t: t[0])
    return NodeHealth(name, matches, due_at, policy, condition)


@dataclass(frozen=True)
class Gate:
    """Karpenter's health gate over a set of nodes: a NodePool's, or the cluster's."""

    scope: str                                  # "nodepool" or "cluster"
    name: str                                   # the NodePool's name; "" for the cluster
    total: int
    unhealthy: tuple[str, ...]

    @property
    def threshold(self) -> int:
        # Integer ceiling: exact for any count, as intstr.GetScaledValueFromIntOrPercent rounding up.
        return -(-self.total * UNHEALTHY_PERCENT // 100)

    @property
    def open(self) -> bool:
        return len(self.unhealthy) <= self.threshold

    def message(self) -> str:
        # Karpenter's event messages, with its spelling for the cluster one ("more then").
        if self.scope == "cluster":
            return f"more then {UNHEALTHY_PERCENT}% nodes are unhealthy in the cluster"
        return f"more than {UNHEALTHY_PERCENT}% nodes are unhealthy in the nodepool"

    def counts(self) -> str:
        where = f"NodePool {self.name}" if self.scope == "nodepool" else "the cluster"
        return (f"{len(self.unhealthy)} of {self.total} nodes of {where} are unhealthy; at most {self.threshold} "
                f"({UNHEALTHY_PERCENT}% rounded up) may be for repair to go ahead")


def gates(nodes: Sequence[Mapping[str, Any]], health: Mapping[str, NodeHealth]) -> tuple[dict[str, Gate], Gate]:
    """One gate per NodePool (its nodes by label) and the cluster's (every node)."""
    by_pool: dict[str, list[str]] = {}
    for node in nodes:
        meta = node.get("metadata") or {}
        pool = (meta.get("labels") or {}).get(NODEPOOL_LABEL)
        if pool:
            by_pool.setdefault(str(pool), []).append(str(meta.get("name")))

    def sick(names: Sequence[str]) -> tuple[str, ...]:
        return tuple(sorted(n for n in names if health[n].unhealthy))

    pools = {pool: Gate("nodepool", pool, len(names), sick(names)) for pool, names in by_pool.items()}
    everyone = [str((n.get("metadata") or {}).get("name")) for n in nodes]
    return pools, Gate("cluster", "", len(everyone), sick(everyone))


def gate_for(claim: NodeClaim, pools: Mapping[str, Gate], cluster_gate: Gate) -> Gate:
    if not claim.nodepool_name:
        return cluster_gate
    return pools.get(claim.nodepool_name) or Gate("nodepool", claim.nodepool_name, 0, ())


@dataclass
class RepairOutcome:
    repaired: list[str] = field(default_factory=list)          # node names
    blocked: dict[str, str] = field(default_factory=dict)      # node -> why not
    waiting: dict[str, datetime] = field(default_factory=dict)  # unhealthy node -> when it is due
    skipped: str = ""


def node_repair_run(*, cluster: ClusterBackend, cloud: CloudProvider, now: datetime | None = None,
                    policies: Sequence[RepairPolicy] | None = None) -> RepairOutcome:
    """One pass of node repair; does nothing unless LOADMASTER_NODE_REPAIR is on. Safe to run from many
    workers: the loop lock lets one through, and every step is safe to repeat."""
    if not settings.LOADMASTER_NODE_REPAIR:
        return RepairOutcome(skipped="node repair is off (LOADMASTER_NODE_REPAIR)")
    now = now or timezone.now()
    policies = tuple(settings.LOADMASTER_NODE_REPAIR_POLICIES if policies is None else policies)
    try:
        with loop_lock("repair", ttl=timedelta(minutes=2)):
            return _run(cluster=cluster, cloud=cloud, now=now, policies=policies)
    except LockBusy:
        return RepairOutcome(skipped="another worker is repairing")


def _run(*, cluster: ClusterBackend, cloud: CloudProvider, now: datetime,
         policies: Sequence[RepairPolicy]) -> RepairOutcome:
    outcome = RepairOutcome()
    nodes, _ = cluster.list_nodes()
    health = {h.node: h for h in (node_health(n, policies) for n in nodes)}
    pools, cluster_gate = gates(nodes, health)
    claims = {c.node_name: c for c in NodeClaim.objects.active().exclude(node_name="").select_related("nodepool")}
    blocked_gates: dict[tuple[str, str], tuple[Gate, list[str]]] = {}
    for name in sorted(health):
        h = health[name]
        claim = claims.get(name)
        if claim is None or not h.unhealthy:
            continue                      # not a node Loadmaster launched (Karpenter ignores those too), or healthy
        if not h.is_due(now):
            if h.due_at is not None:
                outcome.waiting[name] = h.due_at
            continue
        gate = gate_for(claim, pools, cluster_gate)
        if not gate.open:
            outcome.blocked[name] = f"{BLOCKED_EVENT}: {gate.message()} ({gate.counts()})"
            blocked_gates.setdefault((gate.scope, gate.name), (gate, []))[1].append(name)
            continue
        try:
            if node_repair(claim=claim, health=h, cluster=cluster, cloud=cloud, now=now):
                outcome.repaired.append(name)
        except Exception:  # one node the API refuses today must not hold up the others
            log.exception("node %s: repair failed; retried next tick", name)
    for gate, held in blocked_gates.values():
        _record_blocked(gate, held, health, claims, now)
    return outcome


def _since(condition: NodeCondition | None) -> str:
    return condition.since.isoformat() if condition is not None and condition.since is not None else "?"


def _policy_text(health: NodeHealth) -> str:
    return health.policy.text() if health.policy is not None else "?"


def _snake(name: str) -> str:
    """Karpenter's pretty.ToSnakeCase for the metric's condition label: AcceleratedHardwareReady ->
    accelerated_hardware_ready."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def node_repair(*, claim: NodeClaim, health: NodeHealth, cluster: ClusterBackend, cloud: CloudProvider,
                now: datetime) -> bool:
    """Force-terminate one due node's claim. True when this call closed the claim (and wrote the ledger)."""
    assert health.policy is not None and health.condition is not None and health.due_at is not None
    policy, condition = health.policy, health.condition
    unhealthy_for = now - (condition.since or now)
    reason = (f"{REASON_PREFIX} {policy.text()} for {duration_text(timedelta(seconds=int(unhealthy_for.total_seconds())))}"
              f" (since {_since(condition)}), past its {duration_text(policy.toleration)} toleration")
    earlier = claim.deletion_reason if claim.deletion_requested_at else ""
    if not earlier:
        # Marked first: if this worker dies below, the lifecycle loop's termination finishes the claim.
        NodeClaim.objects.filter(pk=claim.pk, terminated_at__isnull=True, deletion_requested_at__isnull=True).update(
            deletion_requested_at=now, deletion_reason=reason[:255])
    pods = 0
    try:
        cluster.cordon(claim.node_name)
        # Karpenter sets the claim's termination time to now: its pods are deleted (no eviction, so no
        # PodDisruptionBudget or do-not-disrupt annotation holds them) with no grace left, then the node goes.
        for pod in cluster.pods_on_node(claim.node_name):
            if drainable(pod):
                meta = pod.get("metadata") or {}
                cluster.delete_pod(meta.get("namespace") or "default", meta.get("name") or "", 0)
                pods += 1
    except NodeNotFound:
        pass
    cluster.delete_node(claim.node_name)
    if claim.instance_id:
        cloud.terminate([claim.instance_id])
    termination_reason = (earlier or reason)[:255]
    closed = NodeClaim.objects.filter(pk=claim.pk, terminated_at__isnull=True).update(
        terminated_at=now, termination_reason=termination_reason)
    if not closed:
        return False
    forced = f" (it was already being removed: {earlier})" if earlier else ""
    Decision.objects.create(
        at=now, kind=Decision.DISRUPTION, nodepool=claim.nodepool, nodepool_name=claim.nodepool_name,
        nodes=[claim.name], cost_before=claim.price_per_hour, cost_after=Decimal(0),
        why=(f"Node {claim.node_name} repaired{forced}: condition {policy.text()} since {_since(condition)}, past its "
             f"{duration_text(policy.toleration)} toleration; NodeClaim {claim.name} force-terminated as Karpenter's "
             f"node repair does, without waiting for PodDisruptionBudgets, do-not-disrupt pods or disruption budgets: "
             f"{pods} pod(s) deleted, node deleted, instance {claim.instance_id or '(none)'} terminated, the pods to be recreated and "
             f"provisioned again"),
        details={"repair": REPAIRED, "node": claim.node_name, "condition": policy.condition_type,
                 "condition_label": _snake(policy.condition_type), "status": policy.condition_status.value,
                 "since": _since(condition), "toleration": duration_text(policy.toleration),
                 "unhealthy_seconds": int(unhealthy_for.total_seconds()), "capacity_type": claim.capacity_type,
                 "instance_id": claim.instance_id, "pods": pods, "forced_removal": bool(earlier)})
    log.info("node %s repaired (%s)", claim.node_name, policy.text())
    return True


def _record_blocked(gate: Gate, held: Sequence[str], health: Mapping[str, NodeHealth],
                    claims: Mapping[str, NodeClaim], now: datetime) -> None:
    """One ledger line per refusal, written again only when the set of unhealthy nodes or the count
    changes (Karpenter's event is deduplicated for 15 minutes; the ledger keeps the change instead)."""
    key = {"gate": gate.scope, "unhealthy_nodes": list(gate.unhealthy), "nodes_total": gate.total,
           "held": sorted(held)}
    last = Decision.objects.filter(details__has_key="repair", nodepool_name=gate.name).order_by("-at", "-id").first()
    if last is not None and last.details.get("repair") == BLOCKED and all(
            last.details.get(k) == v for k, v in key.items()):
        return
    pool = claims[held[0]].nodepool if held and gate.scope == "nodepool" else None
    conditions = ", ".join(f"{n} ({_policy_text(health[n])} since {_since(health[n].condition)})" for n in sorted(held))
    Decision.objects.create(
        at=now, kind=Decision.DISRUPTION, nodepool=pool, nodepool_name=gate.name,
        nodes=[claims[n].name for n in sorted(held)],
        why=(f"{BLOCKED_EVENT}: {gate.message()}: {gate.counts()}, so node repair leaves {conditions} in place "
             f"and looks again every tick (a NodePool this unhealthy points at a cause that replacing nodes "
             f"would not fix)"),
        details={"repair": BLOCKED, "threshold": gate.threshold, **key})


def node_health_summary(node: KubeObject, *, claim: NodeClaim | None, nodes: Sequence[Mapping[str, Any]],
                        now: datetime, policies: Sequence[RepairPolicy] | None = None) -> dict[str, Any]:
    """A node's health as node repair sees it, for the why-node page and its API (read only)."""
    policies = tuple(settings.LOADMASTER_NODE_REPAIR_POLICIES if policies is None else policies)
    health = {h.node: h for h in (node_health(n, policies) for n in nodes)}
    mine = node_health(node, policies)
    health[mine.node] = mine
    pools, cluster_gate = gates(nodes, health)
    gate = gate_for(claim, pools, cluster_gate) if claim is not None else None
    if not mine.unhealthy:
        verdict = "healthy"
    elif not settings.LOADMASTER_NODE_REPAIR:
        verdict = "unhealthy; node repair is off (LOADMASTER_NODE_REPAIR)"
    elif claim is None:
        verdict = "unhealthy; not a node Loadmaster launched, so node repair leaves it alone"
    elif mine.due_at is None:
        verdict = "unhealthy; its condition has no lastTransitionTime to count the toleration from"
    elif gate is not None and not gate.open:
        verdict = f"repair blocked ({BLOCKED_EVENT}): {gate.counts()}"
    elif mine.is_due(now):
        verdict = "due for repair at the next tick"
    else:
        verdict = f"to be repaired at {mine.due_at.isoformat()} if it stays unhealthy"
    return {
        "unhealthy": mine.unhealthy, "verdict": verdict, "repair_enabled": bool(settings.LOADMASTER_NODE_REPAIR),
        "conditions": [{"type": c.type, "status": c.status, "since": c.since.isoformat() if c.since else None,
                        "reason": c.reason} for c in node_conditions(node).values()],
        "matches": [{"condition": p.text(), "toleration": duration_text(p.toleration), "since": _since(c)}
                    for p, c in mine.matches],
        "due_at": mine.due_at.isoformat() if mine.due_at else None,
        "gate": None if gate is None else {"scope": gate.scope, "nodepool": gate.name, "nodes": gate.total,
                                           "unhealthy": len(gate.unhealthy), "threshold": gate.threshold,
                                           "open": gate.open},
    }
