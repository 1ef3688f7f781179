"""Termination of the NodeClaims marked for deletion, as Karpenter's termination controller does it.

A claim is marked (``deletion_requested_at``) when its NodePool is deleted — Karpenter's NodeClaims are
owned by their NodePool, so deleting the pool deletes them — or when its instance is interrupted. Each
lifecycle tick then moves every marked claim on, one step at a time and safe to repeat:

- not launched yet: it is closed at once (the conditional UPDATE keeps a worker from launching it);
- launched but without a Node: the instance is terminated;
- with a Node: the node is cordoned (``karpenter.sh/disrupted:NoSchedule``) and drained through the
  Eviction API — a PodDisruptionBudget refusal waits for the next tick — and once no pod to drain is left
  the Node is deleted and the instance terminated.

DaemonSet pods, static pods, finished pods and pods that tolerate the disrupted taint are not drained
(Karpenter's rules); pods whose ``karpenter.sh/do-not-disrupt`` protects them now ("true", or a duration not
yet over) are not evicted but waited for. A Node that is already gone is the expected end, not an error.

terminationGracePeriod (the NodePool template's; ``termination_deadline`` is set when the drain begins):
without it a drain waits for ever, as Karpenter's does. With it, as in Karpenter, each pod is deleted (not
evicted: no PDB asked, do-not-disrupt no longer holds it) once the time left to the deadline is no more
than its own terminationGracePeriodSeconds, with the time left as its grace, so its grace ends by the
node's deadline; at the deadline the Node is deleted and the instance terminated whatever still runs.
Every closed claim and every forced deletion gets a ledger line.
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
from packing import api

log = logging.getLogger(__name__)

DO_NOT_DISRUPT = api.DO_NOT_DISRUPT


def do_not_disrupt(obj: Mapping[str, Any], what: str, now: datetime) -> str | None:
    """Why a live pod or node's karpenter.sh/do-not-disrupt protects it now ("true", or a duration such as
    "30m" counted from its creationTimestamp), or None: the engine's rule (packing.api.do_not_disrupt_reason)."""
    meta = obj.get("metadata") or {}
    value = (meta.get("annotations") or {}).get(DO_NOT_DISRUPT)
    if value is None:
        return None
    created = None
    if meta.get("creationTimestamp"):
        try:
            created = api.parse_time(str(meta["creationTimestamp"]))
        except ValueError:
            created = None
    return api.do_not_disrupt_reason(what, str(value), created, now)


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


# Kubernetes' default terminationGracePeriodSeconds, for a pod that does not set one.
DEFAULT_POD_GRACE_SECONDS = 30


@dataclass
class DrainState:
    left: int = 0            # pods still to drain when the call began
    blocked: int = 0         # evictions a PodDisruptionBudget refused
    do_not_disrupt: int = 0  # pods protected by karpenter.sh/do-not-disrupt: not evicted, waited for
    deleted: list[str] = field(default_factory=list)   # ns/name deleted past PDBs and do-not-disrupt (TGP)

    def waiting_for(self) -> str:
        parts = []
        if self.blocked:
            parts.append(f"{self.blocked} eviction(s) blocked by PodDisruptionBudgets")
        if self.do_not_disrupt:
            parts.append(f"{self.do_not_disrupt} pod(s) marked {DO_NOT_DISRUPT}")
        return " and ".join(parts)


def pod_grace_seconds(pod: Mapping[str, Any]) -> int:
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else DEFAULT_POD_GRACE_SECONDS


def node_drain(*, cluster: ClusterBackend, node_name: str, deadline: datetime | None = None,
               now: datetime | None = None) -> DrainState:
    """Cordon the node and ask the Eviction API to evict every pod a drain moves, except pods protected by
    do-not-disrupt, which are waited for. With a terminationGracePeriod `deadline`, a pod whose own grace
    period would not end by it any more is deleted instead, past PDBs and do-not-disrupt, with the time left
    as its grace (none once the deadline has passed). A missing node has nothing left to drain."""
    now = now or timezone.now()
    state = DrainState()
    try:
        cluster.cordon(node_name)
    except NodeNotFound:
        return state
    pods = [p for p in cluster.pods_on_node(node_name) if drainable(p)]
    state.left = len(pods)
    for pod in pods:
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        if deadline is not None and not meta.get("deletionTimestamp"):
            left = (deadline - now).total_seconds()
            if left <= pod_grace_seconds(pod):
                if cluster.delete_pod(namespace, meta["name"], max(0, int(left))):
                    state.deleted.append(f"{namespace}/{meta['name']}")
                continue
        if do_not_disrupt(pod, f"pod {namespace}/{meta.get('name')}", now):
            state.do_not_disrupt += 1
            continue
        if cluster.evict(namespace, meta["name"]) == "blocked":
            state.blocked += 1        # a PDB says not now: try again next tick (or until the deadline)
    return state


def forced_deletions_record(*, claim: NodeClaim | None, nodepool_name: str, node_name: str, deleted: list[str],
                            deadline: datetime, now: datetime, grace: str) -> None:
    """The ledger line of pods a drain deleted past PodDisruptionBudgets and do-not-disrupt."""
    if not deleted:
        return
    shown = ", ".join(deleted[:10]) + (f" and {len(deleted) - 10} more" if len(deleted) > 10 else "")
    passed = "has passed" if now >= deadline else "is near"
    Decision.objects.create(
        at=now, kind=Decision.DISRUPTION, nodepool=claim.nodepool if claim else None, nodepool_name=nodepool_name,
        nodes=[node_name], pods=deleted[:500], cost_before=Decimal(0), cost_after=Decimal(0),
        why=f"drain of node {node_name}: its terminationGracePeriod{f' {grace}' if grace else ''} ends at "
            f"{deadline:%Y-%m-%dT%H:%M:%SZ} and {passed}, so {len(deleted)} pod(s) were deleted past "
            f"PodDisruptionBudgets and {DO_NOT_DISRUPT}: {shown}",
        details={"termination_grace_period": grace, "termination_deadline": deadline.isoformat(),
                 "forced_pod_deletions": deleted})


def _close(claim: NodeClaim, now: datetime, why: str) -> bool:
    closed = NodeClaim.objects.filter(pk=claim.pk, terminated_at__isnull=True).update(
        terminated_at=now, termination_reason=(claim.deletion_reason or "deleted")[:255])
    if closed:
        Decision.objects.create(
            at=now, kind=Decision.DISRUPTION, nodepool=claim.nodepool, nodepool_name=claim.nodepool_name,
            nodes=[claim.name], cost_before=claim.price_per_hour, cost_after=Decimal(0),
            why=f"NodeClaim {claim.name} terminated ({claim.deletion_reason or 'deleted'}): {why}",
            details={"termination": claim.deletion_reason, "instance_id": claim.instance_id,
                     "termination_deadline": claim.termination_deadline.isoformat() if claim.termination_deadline
                     else None})
    return bool(closed)


def claim_grace_text(claim: NodeClaim) -> str:
    """The NodePool's terminationGracePeriod as written; for a deleted pool, what its deadline was set from."""
    if claim.nodepool and claim.nodepool.termination_grace_period:
        return claim.nodepool.termination_grace_period
    if claim.termination_deadline and claim.deletion_requested_at:
        return api.format_duration(claim.termination_deadline - claim.deletion_requested_at)
    return ""


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
    deadline = claim.termination_deadline
    past_deadline = deadline is not None and now >= deadline
    if claim.node_name:
        drain = node_drain(cluster=cluster, node_name=claim.node_name, deadline=deadline, now=now)
        if drain.deleted and deadline is not None:
            forced_deletions_record(claim=claim, nodepool_name=claim.nodepool_name, node_name=claim.node_name,
                                    deleted=drain.deleted, deadline=deadline, now=now, grace=claim_grace_text(claim))
        if drain.left and not past_deadline:
            outcome.draining.append(claim.name)
            if drain.waiting_for():
                waiting = drain.waiting_for() + (f" (forced when the terminationGracePeriod ends at "
                                                 f"{deadline:%Y-%m-%dT%H:%M:%SZ})" if deadline is not None else "")
                outcome.waiting[claim.name] = waiting
                log.info("NodeClaim %s: waiting for %s", claim.name, waiting)
                return "waiting"
            return "draining"      # evictions take time to land: the next tick looks again
        cluster.delete_node(claim.node_name)
    if claim.instance_id:
        cloud.terminate([claim.instance_id])
    drained = f"node {claim.node_name} drained and deleted, " if claim.node_name else ""
    if past_deadline and claim.node_name and deadline is not None:
        drained = (f"its terminationGracePeriod{f' {claim_grace_text(claim)}' if claim_grace_text(claim) else ''} ended at "
                   f"{deadline:%Y-%m-%dT%H:%M:%SZ}, so node {claim.node_name} was deleted without waiting for "
                   "PodDisruptionBudgets or do-not-disrupt, ")
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
