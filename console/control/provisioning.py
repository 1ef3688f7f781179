"""The provision loop: pending pods → the engine's plan → NodeClaim rows → CreateFleet.

Every step is safe to repeat and to run on several workers: the whole run holds the "provision"
lock; each NodeClaim row is written before its launch and is launched only by the worker whose
conditional UPDATE sets ``launch_started_at``; the cloud adopts an instance already tagged with the
NodeClaim instead of launching a second one. A worker killed between CreateFleet and saving the
instance id leaves a claim with ``launch_started_at`` set and no instance: the lifecycle loop adopts
the tagged instance or gives up on the claim, and garbage collection terminates anything unowned.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from console import adapters
from console.backends.base import CloudProvider, ClusterBackend
from console.buffers.models import CapacityBuffer
from console.control.launch import claim_name, engine_catalog, nodeclaim_launch
from console.control.locks import LockBusy, loop_lock
from console.control.nodepool_problems import nodepool_problems_record
from console.control.static_pools import static_pools_reconcile
from console.fleet.models import Decision, EC2NodeClass, NodeClaim, NodePool
from console.telemetry import loop_stats
from console.telemetry.models import NodePoolProblem
from packing import api
from packing.api import Inputs, InstanceType, Results, Scheduler
from packing.api import NodePool as EnginePool

log = logging.getLogger(__name__)


@dataclass
class ProvisionOutcome:
    skipped: str = ""
    pending: int = 0
    planned: list[str] = field(default_factory=list)
    launched: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    unschedulable: int = 0
    unusable: dict[str, str] = field(default_factory=dict)    # NodePools left out of this run, with why


def _money(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(str(round(value, 6)))


def _record_unschedulable(results: Results, pools_by_name: dict[str, NodePool], now: datetime) -> None:
    """One ledger row per pod whose verdict changed, not one per tick: the ledger stays readable."""
    for pod, reasons in sorted(results.unschedulable_reasons.items()):
        # each reason as the plan CLI prints it: nodepool, text, and the kind and detail readers switch on
        details = api.unschedulable_json(pod, reasons)
        last = Decision.objects.filter(kind=Decision.UNSCHEDULABLE, details__pod=pod).order_by("-at").first()
        if last is not None and last.details.get("reasons") == details["reasons"]:
            continue
        why = f"pod {pod} cannot be scheduled: " + "; ".join(f"nodepool {r.nodepool}: {r.text}" for r in reasons) \
            if reasons else f"pod {pod} cannot be scheduled: no NodePool"
        Decision.objects.create(at=now, kind=Decision.UNSCHEDULABLE, pods=[pod], why=why, details=details)


@transaction.atomic
def _save_plan(results: Results, pools_by_name: dict[str, NodePool], catalog: Sequence[InstanceType],
               now: datetime) -> list[NodeClaim]:
    by_type = {t.name: t for t in catalog}
    claims = []
    for planned in results.nodeclaims:
        itype = by_type.get(planned.instance_type)
        claim = NodeClaim.objects.create(
            name=claim_name(planned.nodepool), nodepool=pools_by_name.get(planned.nodepool),
            nodepool_name=planned.nodepool, instance_type=planned.instance_type,
            instance_type_options=list(planned.instance_type_options), capacity_type=planned.capacity_type,
            zone=planned.zone, price_per_hour=_money(planned.price_per_hour),
            price_source=next((o.price_source for o in (itype.offerings if itype else ())
                               if o.zone == planned.zone and o.capacity_type == planned.capacity_type), ""),
            requests=planned.requests.to_strings(), allocatable=planned.allocatable.to_strings(),
            capacity=itype.capacity.to_strings() if itype else {},
            labels=dict(planned.labels),
            taints=[t.to_dict() for t in planned.taints] + [t.to_dict() for t in planned.startup_taints],
            created_at=now,
        )
        claim._planned_pods = sorted(p.key for p in planned.pods)  # type: ignore[attr-defined]
        claim._buffer_pods = sum(1 for p in planned.pods if api.is_buffer_pod(p))  # type: ignore[attr-defined]
        claim._min_values_relaxed = planned.min_values_relaxed  # type: ignore[attr-defined]
        claims.append(claim)
    return claims


def provision_run(*, cluster: ClusterBackend, cloud: CloudProvider, now: datetime | None = None) -> ProvisionOutcome:
    now = now or timezone.now()
    try:
        with loop_lock("provision", ttl=timedelta(minutes=5)):
            return _provision(cluster, cloud, now)
    except LockBusy:
        return ProvisionOutcome(skipped="another worker is provisioning")


def _provision(cluster: ClusterBackend, cloud: CloudProvider, now: datetime) -> ProvisionOutcome:
    outcome = ProvisionOutcome()
    pools = list(NodePool.objects.all())
    classes = list(EC2NodeClass.objects.all())
    catalog = engine_catalog(nodeclasses=classes, pools=pools, now=now)
    # Claims a previous run saved but could not launch (crash, retryable error) go first.
    for claim in NodeClaim.objects.filter(launch_started_at__isnull=True, terminated_at__isnull=True,
                                          deletion_requested_at__isnull=True):
        _tally(outcome, claim.name, nodeclaim_launch(claim=claim, cloud=cloud, catalog=catalog, now=now))

    problems: dict[str, str] = {}
    daemonsets = cluster.list_daemonsets()
    # Static NodePools first (console.control.static_pools): what they launch now is capacity for the plan below.
    static = static_pools_reconcile(cluster=cluster, cloud=cloud, pools=pools, classes=classes,
                                    daemonsets=daemonsets, catalog=catalog, now=now, problems=problems)
    outcome.launched.extend(static.launched)
    outcome.failed.update(static.failed)
    pods, _ = cluster.list_pods()
    nodes, _ = cluster.list_nodes()
    # Claims on their way out (deleted NodePool, interruption) are no capacity to plan on.
    inflight = NodeClaim.objects.active().filter(registered_at__isnull=True, deletion_requested_at__isnull=True)
    buffers = list(CapacityBuffer.objects.all())
    inputs = adapters.cluster_inputs(pods=pods, nodes=nodes, pdbs=cluster.list_pdbs(),
                                     daemonsets=daemonsets, nodepools=pools,
                                     nodeclasses=classes, nodeclaims=inflight, problems=problems,
                                     buffers=buffers, pod_templates=adapters.buffer_pod_templates(
                                         cluster=cluster, buffers=buffers))
    # NodePools' clock-policy windows (loadmaster.dev/schedules): the limits in force now are what the plan keeps.
    inputs.nodepools, _ = api.pools_at(inputs.nodepools, now)
    # Only pods the scheduler gave up on; a pod merely not yet scheduled may still land on a node.
    pending_keys = {f"{p['metadata'].get('namespace') or 'default'}/{p['metadata']['name']}"
                    for p in cluster.pending_pods()}
    inputs.pending = [p for p in inputs.pending if p.key in pending_keys]
    outcome.pending = len(inputs.pending)
    # the CapacityBuffers' virtual pods are planned for even with no pod pending: their room is launched ahead
    if (not inputs.pending and not any(r.pods for r in api.buffer_pods(inputs))) or not pools:
        # No solve: only what the adapters found is known; what the engine reported earlier stays.
        nodepool_problems_record(loop=NodePoolProblem.PROVISION, problems=problems, now=now, complete=False)
        return outcome
    started = time.monotonic()
    results, sched = plan_contained(inputs, catalog, problems)
    loop_stats.scheduling_observe(controller="provisioner", seconds=time.monotonic() - started)
    nodepool_problems_record(loop=NodePoolProblem.PROVISION, problems=problems, now=now)
    outcome.unusable = dict(problems)
    pools_by_name = {p.name: p for p in pools}
    _record_unschedulable(results, pools_by_name, now)
    outcome.unschedulable = len(results.unschedulable)
    lower = launch_lower_bound(sched, results)
    bound = f"; plan ${results.cost_per_hour:.4f}/h, lower bound ${lower:.4f}/h" if lower is not None else ""
    for claim in _save_plan(results, pools_by_name, catalog, now):
        outcome.planned.append(claim.name)
        pods = claim._planned_pods  # type: ignore[attr-defined]
        virtual = claim._buffer_pods  # type: ignore[attr-defined]
        held = f", {virtual} of them CapacityBuffer headroom," if virtual else ""
        why = (f"{len(pods)} pending pod(s) ({', '.join(pods[:5])}{', …' if len(pods) > 5 else ''}){held} fit on a new "
               f"{claim.instance_type} ({claim.capacity_type}, {claim.zone}) at ${claim.price_per_hour}/h"
               f"{' (estimated spot price)' if claim.price_source == 'estimate' else ''}: cheapest of "
               f"{len(claim.instance_type_options)} compatible type(s) in nodepool {claim.nodepool_name}{bound}")
        _tally(outcome, claim.name, nodeclaim_launch(claim=claim, cloud=cloud, catalog=catalog, now=now,
                                                     pods=pods, why=why,
                                                     details={"plan_cost_per_hour": results.cost_per_hour,
                                                              "lower_bound_per_hour": lower,
                                                              **({"min_values_relaxed": True}
                                                                 if claim._min_values_relaxed  # type: ignore[attr-defined]
                                                                 else {})}))
    return outcome


def launch_lower_bound(sched: Scheduler, results: Results) -> float | None:
    """api.launch_lower_bound: the engine's lower bound ($/h) on any set of new nodes for the pods this plan
    launches nodes for. None when it cannot be computed."""
    try:
        return api.launch_lower_bound(sched, results)
    except Exception:  # a bound is an explanation, never a reason not to launch
        log.warning("lower bound of the launch could not be computed", exc_info=True)
        return None


def _solve(inputs: Inputs, catalog: Sequence[InstanceType], pools: Sequence[EnginePool]) -> tuple[Results, Scheduler]:
    # `Scheduler` by its name in this module: the tests that make one pool fail stand in for it here.
    sched = Scheduler(pools, catalog, api.existing_nodes(inputs, catalog), inputs.running, inputs.daemonsets,
                      min_values_policy=api.MinValuesPolicy(settings.LOADMASTER_MIN_VALUES_POLICY))
    buffers = api.buffer_pods(inputs)
    if not buffers:
        return sched.solve(inputs.pending), sched
    # the buffers' virtual pods are solved with the pending pods, then are not counted as the cluster's pods
    results = sched.solve([*inputs.pending, *(p for b in buffers for p in b.pods)])
    api.without_buffer_pods(results, buffers)
    return results, sched


def plan_contained(inputs: Inputs, catalog: Sequence[InstanceType],
                   problems: dict[str, str]) -> tuple[Results, Scheduler]:
    """The engine's plan, with the pools it cannot use left out and named in ``problems``.

    The engine names them itself (``Results.unusable_nodepools``). Should a solve still raise, each
    pool is tried on its own: the pools whose own solve raises are left out and the plan is made with
    the rest. If a solve without any pool raises too, the fault is not a pool's and is raised."""
    api.expand_workloads(inputs)
    pools = list(inputs.nodepools)
    try:
        results, sched = _solve(inputs, catalog, pools)
    except Exception as exc:
        if not pools:
            raise
        log.warning("provision: the plan failed (%s: %s); trying each NodePool on its own",
                    type(exc).__name__, exc)
        _solve(inputs, catalog, [])      # raises when no pool is to blame
        good = []
        for pool in pools:
            try:
                _solve(inputs, catalog, [pool])
            except Exception as pool_exc:
                problems[pool.name] = (f"the engine fails on it ({type(pool_exc).__name__}: {pool_exc})")[:500]
            else:
                good.append(pool)
        results, sched = _solve(inputs, catalog, good)
    for name, reason in (getattr(results, "unusable_nodepools", None) or {}).items():
        problems.setdefault(name, reason)
    return results, sched


def _tally(outcome: ProvisionOutcome, name: str, result: str) -> None:
    if result == "launched":
        outcome.launched.append(name)
    elif result in ("failed", "retry"):
        outcome.failed[name] = result
