"""The disrupt loop: run the disruption engine over the live cluster and carry out its first action,
one step per tick, as Karpenter does.

A new action is taken only when none is in progress. Its steps: cordon the nodes (taint
karpenter.sh/disrupted:NoSchedule) so nothing new lands there; for a replacement, launch the
replacement NodeClaims and wait until they are initialized; wait 15 s and re-check that the move is
still allowed (a do-not-disrupt pod may have arrived — Karpenter's re-validation); drain through the
Eviction API, waiting whenever a PodDisruptionBudget refuses; then delete the nodes and terminate
their instances. If a replacement fails to launch or the move is no longer valid, the nodes are
uncordoned and the action is marked failed, with why, in the ledger.

Every engine run also tells the alerts which moves are blocked (a PDB, do-not-disrupt, a budget) and
what they would save, so the stranded-savings rule can time each block.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from console import adapters
from console.alerts.fleet_health import drifted_nodes_record
from console.alerts.services import stranded_moves_record
from console.backends.base import CloudProvider, ClusterBackend, NodeNotFound
from console.buffers.models import CapacityBuffer
from console.control.launch import claim_name, engine_catalog, nodeclaim_launch
from console.control.locks import LockBusy, loop_lock
from console.control.models import DisruptionAction
from console.control.nodepool_problems import nodepool_problems_record
from console.control.termination import do_not_disrupt, forced_deletions_record, pod_grace_seconds
from console.fleet.models import Decision, EC2NodeClass, NodeClaim, NodePool
from console.telemetry import loop_stats
from console.telemetry.consolidation_scores import consolidation_scores_observe
from console.telemetry.models import NodePoolProblem
from packing import api
from packing.api import Action, Cluster, Report, consolidate

log = logging.getLogger(__name__)

VALIDATION_DELAY = timedelta(seconds=15)
LAUNCH_BATCH = 20  # replacements launched per tick


@dataclass
class DisruptOutcome:
    skipped: str = ""
    started: str = ""
    state: str = ""
    finished: str = ""


def _engine_cluster(*, cluster: ClusterBackend, now: datetime, problems: dict[str, str] | None = None,
                    leave_out: Collection[str] = ()) -> Cluster:
    """The live cluster as the disruption engine reads it. NodePools that cannot be converted are left
    out and named in ``problems``, as are the pools in ``leave_out``: their nodes then stay as they are."""
    pools = list(NodePool.objects.all())
    classes = list(EC2NodeClass.objects.all())
    pods, _ = cluster.list_pods()
    nodes, _ = cluster.list_nodes()
    buffers = list(CapacityBuffer.objects.all())
    inputs, extras = adapters.cluster_objects(pods=pods, nodes=nodes, pdbs=cluster.list_pdbs(),
                                              daemonsets=cluster.list_daemonsets(),
                                              nodepools=[p for p in pools if p.name not in leave_out],
                                              nodeclasses=classes, problems=problems, buffers=buffers,
                                              pod_templates=adapters.buffer_pod_templates(cluster=cluster,
                                                                                          buffers=buffers))
    catalog = engine_catalog(nodeclasses=classes, pools=pools, now=now)
    engine_cluster = api.build_cluster(inputs, extras, catalog)
    engine_cluster.commitments = adapters.commitments()  # a covered node saves only its uncovered share
    engine_cluster.min_values_policy = api.MinValuesPolicy(settings.LOADMASTER_MIN_VALUES_POLICY)
    # the capacity-block loop (console.control.reservations.capacity_blocks_run) owns the nodes of an ending
    # Capacity Block, as Karpenter's expiration controller: the disrupt loop must not start a second removal
    engine_cluster.capacity_block_expiry = False
    return engine_cluster


def _without_pools(engine_cluster: Cluster, names: Collection[str]) -> Cluster:
    kept = [p for p in engine_cluster.nodepools if p.name not in names]
    return dataclasses.replace(engine_cluster, nodepools=kept)


def consolidate_contained(*, cluster: ClusterBackend, now: datetime,
                          problems: dict[str, str]) -> tuple[Cluster, Report]:
    """The disruption engine's report over the live cluster, with the pools it cannot use left out
    (named in ``problems``) so that every other pool is still consolidated.

    The engine names them itself (its report's ``unusable_nodepools``). Should a run still raise, each
    pool is tried alone; the pools whose own run raises are left out and the engine runs on the rest.
    If a run without any pool raises too, the fault is not a pool's and is raised."""
    repack = settings.LOADMASTER_CONSOLIDATION_REPACK
    engine_cluster = _engine_cluster(cluster=cluster, now=now, problems=problems)
    try:
        report = consolidate(engine_cluster, now, repack=repack)
    except Exception as exc:
        names = [p.name for p in engine_cluster.nodepools]
        if not names:
            raise
        log.warning("disrupt: the engine failed (%s: %s); trying each NodePool on its own", type(exc).__name__, exc)
        consolidate(_without_pools(engine_cluster, names), now, repack=repack)   # raises when no pool is to blame
        for name in names:
            try:
                consolidate(_without_pools(engine_cluster, [n for n in names if n != name]), now, repack=repack)
            except Exception as pool_exc:
                problems[name] = f"the disruption engine fails on it ({type(pool_exc).__name__}: {pool_exc})"[:500]
        engine_cluster = _without_pools(engine_cluster, problems)
        report = consolidate(engine_cluster, now, repack=repack)
    for name, reason in (getattr(report, "unusable_nodepools", None) or {}).items():
        problems.setdefault(name, reason)
    return engine_cluster, report


def _claims_for(node_names: list[str]) -> list[NodeClaim]:
    return list(NodeClaim.objects.active().filter(node_name__in=node_names))


def _finish(action: DisruptionAction, state: str, outcome: str, now: datetime) -> None:
    action.state, action.outcome, action.updated_at = state, outcome, now
    action.save(update_fields=["state", "outcome", "updated_at"])


def _abort(action: DisruptionAction, cluster: ClusterBackend, cloud: CloudProvider, now: datetime, why: str) -> None:
    # Give the nodes back: remove our taint so pods may land there again.
    leaving = set(NodeClaim.objects.active().filter(node_name__in=action.nodes, deletion_requested_at__isnull=False)
                  .values_list("node_name", flat=True))
    for name in action.nodes:
        if name in leaving:
            continue
        try:
            cluster.uncordon(name)
        except NodeNotFound:
            continue
    # A claim on its way out for another reason (its NodePool was deleted, it was interrupted) stays so.
    NodeClaim.objects.filter(node_name__in=action.nodes, terminated_at__isnull=True,
                             deletion_requested_at__isnull=True).update(disrupting_at=None)
    # Replacements already launched would otherwise run empty, and be paid for, until emptiness finds them.
    leftovers = list(NodeClaim.objects.filter(name__in=action.replacement_claims, terminated_at__isnull=True))
    if leftovers:
        cloud.terminate([c.instance_id for c in leftovers if c.instance_id])
        for claim in leftovers:
            if claim.node_name:
                try:
                    cluster.delete_node(claim.node_name)
                except NodeNotFound:
                    pass
        NodeClaim.objects.filter(pk__in=[c.pk for c in leftovers]).update(
            terminated_at=now, termination_reason=f"replacement abandoned: {why}"[:255])
    _finish(action, DisruptionAction.FAILED, why, now)
    Decision.objects.create(at=now, kind=Decision.FAILURE, nodes=action.nodes,
                            why=f"disruption of {', '.join(action.nodes)} abandoned: {why}")


def _score_text(action: Action) -> str:
    """What the ledger says of a Balanced pool's score (nothing when the move was not scored)."""
    if action.score is None:
        return ""
    if action.reason == "empty":  # Karpenter's emptiness is never gated on the score
        return f"; Balanced score {action.score:.2f} (empty nodes are deleted whatever their score)"
    return (f"; Balanced score {action.score:.2f} ≥ threshold {api.BALANCED_THRESHOLD:.2f} "
            f"(k = {api.BALANCED_K}: savings over the NodePool's cost against disruption over its disruption cost)")


def _score_details(action: Action) -> dict[str, float]:
    if action.score is None:
        return {}
    return {"score": round(action.score, 6), "score_threshold": api.BALANCED_THRESHOLD}


def _start(action_spec: Action, cluster: ClusterBackend, now: datetime) -> DisruptionAction:
    claims = _claims_for(action_spec.nodes)
    pool = claims[0].nodepool if claims else None
    action = DisruptionAction.objects.create(
        created_at=now, updated_at=now, state=DisruptionAction.CORDONING, type=action_spec.type,
        reason=action_spec.reason, nodes=list(action_spec.nodes), replacements=list(action_spec.replacements),
        savings_per_hour=Decimal(str(round(action_spec.savings_per_hour, 6))), why=action_spec.why)
    Decision.objects.create(
        at=now, kind=Decision.DISRUPTION, nodepool=pool, nodepool_name=pool.name if pool else "",
        nodes=list(action_spec.nodes), pods=sorted(action_spec.moves),
        cost_before=Decimal(str(round(action_spec.cost_before, 6))),
        cost_after=Decimal(str(round(action_spec.cost_after, 6))),
        why=f"{action_spec.type} ({action_spec.reason}): {action_spec.why}{_score_text(action_spec)}",
        details={"action": action.pk, "method": action_spec.method, "moves": action_spec.moves,
                 "replacements": action_spec.replacements, **_score_details(action_spec)})
    return action


def _step(action: DisruptionAction, cluster: ClusterBackend, cloud: CloudProvider, now: datetime) -> None:
    if action.state == DisruptionAction.CORDONING:
        for name in action.nodes:
            try:
                cluster.cordon(name)
            except NodeNotFound:
                pass
        NodeClaim.objects.filter(node_name__in=action.nodes, terminated_at__isnull=True).update(disrupting_at=now)
        if action.type == "replace":
            names = []
            # Every claim is saved now, with the action (a crash must not leave claims that belong to
            # no action), and launched LAUNCH_BATCH per tick: a repack may plan hundreds of small
            # nodes, and one tick must stay well inside the loop lock's lifetime.
            with transaction.atomic():
                for planned in action.replacements:
                    pool = NodePool.objects.filter(name=planned["nodepool"]).first()
                    claim = NodeClaim.objects.create(
                        name=claim_name(planned["nodepool"]), nodepool=pool, nodepool_name=planned["nodepool"],
                        instance_type=planned["instance_type"],
                        instance_type_options=planned["instance_type_options"],
                        capacity_type=planned["capacity_type"], zone=planned["zone"],
                        price_per_hour=Decimal(str(planned["price_per_hour"])), labels=planned["labels"],
                        taints=planned.get("taints", []) + planned.get("startup_taints", []),
                        requests=planned.get("requests", {}), allocatable=planned.get("allocatable", {}),
                        created_at=now)
                    names.append(claim.name)
                action.replacement_claims = names
                action.state = DisruptionAction.REPLACING
                action.save(update_fields=["replacement_claims", "state"])
            if _launch_some(action, cluster, cloud, now):
                return
        else:
            action.state, action.validate_after = DisruptionAction.VALIDATING, now + VALIDATION_DELAY
    elif action.state == DisruptionAction.REPLACING:
        if _launch_some(action, cluster, cloud, now):
            return
        claims = list(NodeClaim.objects.filter(name__in=action.replacement_claims))
        if any(c.terminated_at for c in claims):
            _abort(action, cluster, cloud, now, "a replacement NodeClaim was terminated before it initialized")
            return
        if claims and all(c.initialized_at for c in claims):
            action.state, action.validate_after = DisruptionAction.VALIDATING, now + VALIDATION_DELAY
    elif action.state == DisruptionAction.VALIDATING:
        if action.validate_after and now < action.validate_after:
            return
        problem = _still_valid(action, cluster, now)
        if problem:
            _abort(action, cluster, cloud, now, problem)
            return
        action.state = DisruptionAction.DRAINING
        # The drain begins: as Karpenter deletes the NodeClaims now, their terminationGracePeriod starts.
        for claim in NodeClaim.objects.active().filter(node_name__in=action.nodes).select_related("nodepool"):
            grace = claim.nodepool.termination_grace() if claim.nodepool else None
            if grace is not None:
                NodeClaim.objects.filter(pk=claim.pk, termination_deadline__isnull=True).update(
                    termination_deadline=now + grace)
    elif action.state == DisruptionAction.DRAINING:
        waiting = 0
        deadlines = {c.node_name: c for c in _claims_for(action.nodes) if c.termination_deadline is not None}
        for name in action.nodes:
            claim = deadlines.get(name)
            deadline = claim.termination_deadline if claim else None
            deleted: list[str] = []
            for pod in cluster.pods_on_node(name):
                meta = pod.get("metadata") or {}
                if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []):
                    continue
                namespace = meta.get("namespace") or "default"
                if deadline is not None and not meta.get("deletionTimestamp"):
                    left = (deadline - now).total_seconds()
                    if left <= pod_grace_seconds(pod):   # its own grace must end by the node's deadline
                        if cluster.delete_pod(namespace, meta["name"], max(0, int(left))):
                            deleted.append(f"{namespace}/{meta['name']}")
                        continue
                if cluster.evict(namespace, meta["name"]) == "blocked":
                    waiting += 1       # a PDB says not now: try again next tick (until a terminationGracePeriod ends)
            if claim is not None and deadline is not None:
                forced_deletions_record(claim=claim, nodepool_name=claim.nodepool_name, node_name=name,
                                        deleted=deleted, deadline=deadline, now=now,
                                        grace=claim.nodepool.termination_grace_period if claim.nodepool else "")
        if waiting:   # (past a node's deadline all its pods were deleted: nothing of it is waited for)
            action.outcome = f"waiting for {waiting} eviction(s) blocked by PodDisruptionBudgets"
        else:
            claims = _claims_for(action.nodes)
            for name in action.nodes:
                cluster.delete_node(name)
            cloud.terminate([c.instance_id for c in claims if c.instance_id])
            NodeClaim.objects.filter(pk__in=[c.pk for c in claims]).update(
                terminated_at=now, termination_reason=f"{action.reason}: {action.type} by consolidation"[:255])
            _finish(action, DisruptionAction.DONE, f"{len(action.nodes)} node(s) removed", now)
            return
    action.updated_at = now
    action.save()


def _launch_some(action: DisruptionAction, cluster: ClusterBackend, cloud: CloudProvider, now: datetime) -> bool:
    """Launch up to LAUNCH_BATCH of the action's replacements not launched yet (the provision loop may
    launch others meanwhile: each launch is claimed by a conditional UPDATE). True when the action was
    abandoned because one failed."""
    todo = NodeClaim.objects.filter(name__in=action.replacement_claims, launch_started_at__isnull=True,
                                    terminated_at__isnull=True).order_by("name")[:LAUNCH_BATCH]
    if not todo:
        return False
    catalog = engine_catalog(nodeclasses=list(EC2NodeClass.objects.all()), pools=list(NodePool.objects.all()), now=now)
    for claim in todo:
        result = nodeclaim_launch(claim=claim, cloud=cloud, catalog=catalog, now=now,
                                  why=f"replacement for {', '.join(action.nodes)} ({action.reason})")
        if result == "failed":
            _abort(action, cluster, cloud, now, f"replacement {claim.name} failed to launch")
            return True
    return False


# The engine's forceful methods: with terminationGracePeriod, pods protected by do-not-disrupt do not spare a node.
_FORCEFUL_REASONS = frozenset({"drifted", "expired", "capacity-block-expiring"})


def _still_valid(action: DisruptionAction, cluster: ClusterBackend, now: datetime) -> str | None:
    """A do-not-disrupt that protects a node or one of its pods now ("true", or a duration not yet over)."""
    bounded = {c.node_name for c in NodeClaim.objects.active().filter(node_name__in=action.nodes).select_related("nodepool")
               if c.nodepool is not None and c.nodepool.termination_grace() is not None}
    for name in action.nodes:
        try:
            node = cluster.get_node(name)
        except NodeNotFound:
            continue
        why = do_not_disrupt(node, f"node {name}", now)
        if why:
            return f"{why} now"
        if action.reason in _FORCEFUL_REASONS and name in bounded:
            continue   # as the engine: with terminationGracePeriod, the drain waits for such pods, bounded by it
        for pod in cluster.pods_on_node(name):
            meta = pod.get("metadata") or {}
            why = do_not_disrupt(pod, f"pod {meta.get('namespace')}/{meta.get('name')} on {name}", now)
            if why:
                return f"{why} now"
    return None


def disrupt_run(*, cluster: ClusterBackend, cloud: CloudProvider, now: datetime | None = None) -> DisruptOutcome:
    now = now or timezone.now()
    try:
        with loop_lock("disrupt", ttl=timedelta(minutes=5)):
            outcome = DisruptOutcome()
            action = DisruptionAction.objects.exclude(
                state__in=[DisruptionAction.DONE, DisruptionAction.FAILED]).order_by("created_at").first()
            if action is None:
                problems: dict[str, str] = {}
                started = time.monotonic()
                engine_cluster, report = consolidate_contained(cluster=cluster, now=now, problems=problems)
                loop_stats.scheduling_observe(controller="disruption", seconds=time.monotonic() - started)
                nodepool_problems_record(loop=NodePoolProblem.DISRUPT, problems=problems, now=now)
                consolidation_scores_observe(observations=getattr(report, "score_observations", ()))
                stranded_moves_record(report=report, nodepools={n.name: n.nodepool or "" for n in engine_cluster.nodes},
                                      now=now)
                drifted_nodes_record(cluster=engine_cluster, now=now)  # the drift alert's observation
                if not report.actions:
                    return outcome
                action = _start(report.actions[0], cluster, now)
                outcome.started = str(action)
            _step(action, cluster, cloud, now)
            action.refresh_from_db()
            outcome.state = action.state
            if action.state in (DisruptionAction.DONE, DisruptionAction.FAILED):
                outcome.finished = action.outcome
            return outcome
    except LockBusy:
        return DisruptOutcome(skipped="another worker is disrupting")


