"""Termination of the NodeClaims marked for deletion, as Karpenter's termination controller does it.

A claim is marked (``deletion_requested_at``) when its NodePool is deleted — Karpenter's NodeClaims are
owned by their NodePool, so deleting the pool deletes them — or when its instance is interrupted. Each
lifecycle tick then moves every marked claim on, one step at a time and safe to repeat:

- not launched yet: it is closed at once (the conditional UPDATE keeps a worker from launching it);
- launched but without a Node: the instance is terminated;
- with a Node: the node is cordoned (``karpenter.sh/disrupted:NoSchedule``) and drained through the
  Eviction API — a PodDisruptionBudget refusal waits for the next tick, nothing is ever force-deleted —
  and once no pod to drain is left the Node is deleted and the instance terminated.

DaemonSet pods, static pods, finished pods and pods that tolerate the disrupted taint are not drained
(Karpenter's rules); pods marked ``karpenter.sh/do-not-disrupt`` are not evicted but waited for. A Node that is already gone is the expected end, not an error. Every closed claim
gets a ledger line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.utils import timezone

from console.backends.base import DISRUPTED_TAINT, CloudProvider, ClusterBackend, NodeNotFound
from console.fleet.models import Decision, NodeClaim

log = logging.getLogger(__name__)

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


@dataclass
class TerminationOutcome:
    draining: list[str] = field(default_factory=list)
    terminated: list[str] = field(default_factory=list)
    waiting: dict[str, str] = field(default_factory=dict)   # claim -> what it waits for


def _tolerates_disrupted(pod: Mapping[str, Any]) -> bool:
    for tol in (pod.get("spec") or {}).get("tolerations") or []:
        if tol.get("effect") not in (None, "", DISRUPTED_TAINT["effect"]):
            continue
        if tol.get("operator") == "Exists" and tol.get("key") in (None, "", DISRUPTED_TAINT["key"]):
            return True
        if tol.get("key") == DISRUPTED_TAINT["key"]:
            return True
    return False


def drainable(pod: Mapping[str, Any]) -> bool:
    """Would a drain evict this pod? Not DaemonSet or static (mirror) pods, finished pods, or pods that
    tolerate the disrupted taint (they would come straight back)."""
    meta = pod.get("metadata") or {}
    owners = {o.get("kind") for o in meta.get("ownerReferences") or []}
    if owners & {"DaemonSet", "Node"}:
        return False
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return not _tolerates_disrupted(pod)


@dataclass
class DrainState:
    left: int = 0            # pods still to drain when the call began
    blocked: int = 0         # evictions a PodDisruptionBudget refused
    do_not_disrupt: int = 0  # pods marked karpenter.sh/do-not-disrupt: not evicted, waited for

    def waiting_for(self) -> str:
        parts = []
        if self.blocked:
            parts.append(f"{self.blocked} eviction(s) blocked by PodDisruptionBudgets")
        if self.do_not_disrupt:
            parts.append(f"{self.do_not_disrupt} pod(s) marked {DO_NOT_DISRUPT}")
        return " and ".join(parts)


def node_drain(*, cluster: ClusterBackend, node_name: str) -> DrainState:
    """Cordon the node and ask the Eviction API to evict every pod a drain moves, except pods marked
    do-not-disrupt, which are waited for. A missing node has nothing left to drain."""
    state = DrainState()
    try:
        cluster.cordon(node_name)
    except NodeNotFound:
        return state
    pods = [p for p in cluster.pods_on_node(node_name) if drainable(p)]
    state.left = len(pods)
    for pod in pods:
        meta = pod.get("metadata") or {}
        if (meta.get("annotations") or {}).get(DO_NOT_DISRUPT) == "true":
            state.do_not_disrupt += 1
            continue
        if cluster.evict(meta.get("namespace") or "default", meta["name"]) == "blocked":
            state.blocked += 1        # a PDB says not now: try again next tick, never force
    return state


def _close(claim: NodeClaim, now: datetime, why: str) -> bool:
    closed = NodeClaim.objects.filter(pk=claim.pk, terminated_at__isnull=True).update(
        terminated_at=now, termination_reason=(claim.deletion_reason or "deleted")[:255])
    if closed:
        Decision.objects.create(
            at=now, kind=Decision.DISRUPTION, nodepool=claim.nodepool, nodepool_name=claim.nodepool_name,
            nodes=[claim.name], cost_before=claim.price_per_hour, cost_after=Decimal(0),
            why=f"NodeClaim {claim.name} terminated ({claim.deletion_reason or 'deleted'}): {why}",
            details={"termination": claim.deletion_reason, "instance_id": claim.instance_id})
    return bool(closed)


def nodeclaim_terminate_step(*, claim: NodeClaim, cluster: ClusterBackend, cloud: CloudProvider,
                             now: datetime, outcome: TerminationOutcome | None = None) -> str:
    """Move one marked claim on. Returns "terminated", "draining", "waiting" or "launching"."""
    outcome = outcome if outcome is not None else TerminationOutcome()
    if claim.launch_started_at is None:
        # Closed only if no worker started its launch meanwhile (same condition as nodeclaim_launch).
        if NodeClaim.objects.filter(pk=claim.pk, launch_started_at__isnull=True).update(launch_started_at=now):
            _close(claim, now, "it was never launched")
            outcome.terminated.append(claim.name)
            return "terminated"
        return "launching"
    if claim.launched_at is None:
        # CreateFleet in flight, or a worker died in it: the lifecycle loop adopts the instance or gives up.
        outcome.waiting[claim.name] = "its launch to finish"
        return "launching"
    if claim.node_name:
        drain = node_drain(cluster=cluster, node_name=claim.node_name)
        if drain.left:
            outcome.draining.append(claim.name)
            if drain.waiting_for():
                outcome.waiting[claim.name] = drain.waiting_for()
                log.info("NodeClaim %s: waiting for %s", claim.name, drain.waiting_for())
                return "waiting"
            return "draining"      # evictions take time to land: the next tick looks again
        cluster.delete_node(claim.node_name)
    if claim.instance_id:
        cloud.terminate([claim.instance_id])
    drained = f"node {claim.node_name} drained and deleted, " if claim.node_name else ""
    _close(claim, now, f"{drained}instance {claim.instance_id or '(none)'} terminated")
    outcome.terminated.append(claim.name)
    return "terminated"


def termination_run(*, cluster: ClusterBackend, cloud: CloudProvider, now: datetime | None = None) -> TerminationOutcome:
    now = now or timezone.now()
    outcome = TerminationOutcome()
    for claim in NodeClaim.objects.active().filter(deletion_requested_at__isnull=False).order_by(
            "deletion_requested_at", "name").select_related("nodepool"):
        try:
            nodeclaim_terminate_step(claim=claim, cluster=cluster, cloud=cloud, now=now, outcome=outcome)
        except Exception:  # one claim the API refuses today must not hold up the others
            log.exception("NodeClaim %s: termination step failed; retried next tick", claim.name)
            outcome.waiting[claim.name] = "a retry after an error"
        status = f"waiting for {outcome.waiting[claim.name]}"[:255] if claim.name in outcome.waiting else ""
        if status != claim.deletion_status:      # shown on the claim's page; written only when it changes
            NodeClaim.objects.filter(pk=claim.pk).update(deletion_status=status)
    return outcome
