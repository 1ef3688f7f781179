"""The disruption loop: emptiness, drift, expiration, multi-node and single-node consolidation, in Karpenter's order,
after the drain of nodes on Capacity Blocks about to end (the AWS provider's own controller; here a method).

With Loadmaster's own repack move on (beyond Karpenter; see repack.py: a group of nodes whose pods are re-planned
onto new nodes and the room left on nodes that stay, possibly more nodes than it removes), consolidation runs in
three steps: Karpenter's multi- and single-node moves that only delete nodes (their pods land in room already paid
for, nothing is launched), then repack, then Karpenter's moves that replace nodes with one cheaper node. Karpenter's
k-to-one replacements come last because on a catalog whose cheapest capacity comes in small nodes they replace a
fragmented cluster with a few large nodes, which no later move improves (docs/performance.md has the figures). With
repack off, the order is Karpenter's.

Each round tries the methods in order (method.py) and takes the first that acts; its action is applied to the
simulated cluster (its nodes gone, their pods running where the what-if put them, replacements launched) and the
loop starts again, until no method finds anything. The resulting list is what the disruption controller would do
now if every action succeeded, and it respects the budgets as a whole: every node disrupted earlier in the list
still counts as disrupting for the actions after it.

Pods with no placement constraint that no topology rule can see are placed by first-fit onto the other nodes without
a simulation (room and taints are all that decide where they may run); only what is left over for the one new node
goes through the Scheduler (whatifs.py). Once the list is complete, every node a PDB, do-not-disrupt or a budget
spares is priced: what consolidating it alone would save were the rule lifted (spared.py).
"""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime
from typing import Any

from packing.buffers import BufferReport, Place, held_reports
from packing.disruption.capacityblock import CapacityBlockExpiry
from packing.disruption.consolidation import SPOT_TO_SPOT_MIN_TYPES
from packing.disruption.drift import Drift
from packing.disruption.emptiness import Emptiness
from packing.disruption.expiration import Expiration
from packing.disruption.formatting import parse_time
from packing.disruption.method import Method
from packing.disruption.model import Cluster, MinSavings, Report
from packing.disruption.multinode import MAX_MULTI_CANDIDATES, MultiNode
from packing.disruption.repack import REPACK_MIN_DOLLARS, REPACK_MIN_FRACTION, Repack
from packing.disruption.singlenode import SingleNode
from packing.disruption.spared import not_disrupted
from packing.disruption.state import RunState
from packing.gcpause import gc_paused
from packing.plan_output import nodeclaim_json
from packing.pods import Pod
from packing.poolschedule import cluster_at
from packing.scheduling.amounts import clamped_node, clamped_pod, representable_types
from packing.scheduling.results import PlannedNodeClaim
from packing.scheduling.tablecache import TableCache

__all__ = [
    "MAX_MULTI_CANDIDATES",
    "REPACK_MIN_DOLLARS",
    "REPACK_MIN_FRACTION",
    "SPOT_TO_SPOT_MIN_TYPES",
    "MinSavings",
    "consolidate",
    "methods",
    "parse_time",
]


def methods(run: RunState, *, repack: bool) -> tuple[Method, ...]:
    """The methods in the order each round tries them.

    Capacity Block expiry, emptiness, drift and expiration come first in every round. With repack on, the moves that only delete nodes
    come next (they wait while repacks follow one another, then look again with all the room the repacks left),
    then repack, then Karpenter's replacements (k nodes -> one cheaper node): see the module's docstring for why
    this order. Repack asks the first four again after each of its actions."""
    first: tuple[Method, ...] = (CapacityBlockExpiry(run), Emptiness(run), Drift(run), Expiration(run))
    if not repack:
        return (*first, MultiNode(run), SingleNode(run))
    return (
        *first,
        MultiNode(run, delete_only=True),
        SingleNode(run, delete_only=True),
        Repack(run, first),
        MultiNode(run),
        SingleNode(run),
    )


def _run_methods(run: RunState, order: tuple[Method, ...]) -> None:
    """Rounds until no method acts: each round, the first method that acts ends it (method.py). Each round is a
    disruption cycle: Balanced pools' totals are taken at its start, as Karpenter takes them once per cycle."""
    chain = False  # a chaining method acted in the last round
    while True:
        run.scorer.snapshot()
        for m in order:
            if chain and m.waits_for_chain:
                continue
            if m.act():
                chain = chain or m.chains
                break
            if m.chains and chain:
                chain = False  # the chain has ended: the round starts again with the methods that waited
                break
        else:
            return


def _replacements(launched: list[tuple[PlannedNodeClaim, list[str] | None]]) -> list[dict[str, Any]]:
    """An action's new nodeclaims as `python -m packing plan` prints them, with the instance types each may launch."""
    claims = [c for c, _ in launched]
    replacements = [nodeclaim_json(c) for c in claims]
    for (_, options), obj in zip(launched, replacements, strict=True):
        if options is not None:
            obj["instance_type_options"] = options
    return replacements


def _report(run: RunState, started: float, *, price_blocked: bool) -> Report:
    for action, launched in zip(run.actions, run.launches, strict=True):
        action.replacements = _replacements(launched)
    report = Report(actions=run.actions)
    report.nodes = len(run.input_order)
    report.cost_before = round(sum(run.price.values()), 6)
    report.cost_after = round(report.cost_before - sum(a.savings_per_hour for a in run.actions), 6)
    report.not_disrupted = not_disrupted(run, price=price_blocked)
    report.solves = run.sim.solves
    report.unusable_nodepools = run.sim.unusable_nodepools(run.types.keys)
    report.solve_seconds = time.perf_counter() - started
    report.score_observations = list(run.scorer.observations)
    report.buffers = _buffer_reports(run)
    return report


def _buffer_reports(run: RunState) -> list[BufferReport]:
    """Where each CapacityBuffer's virtual pods are held once the actions are taken: on the nodes that stay, on
    in-flight NodeClaims (existing capacity, price unknown), on the replacements the actions launch (their
    `nodeclaims`); the rest (`unplaced`) wait for the provisioner, as pending pods do."""
    if not run.cluster.buffers:
        return []
    sim = run.sim
    launched = {c.name: c for claims in run.launches for c, _ in claims}
    places = []
    for name in sim.order:
        pods = sim.reserved_on.get(name, [])
        if name in run.info:
            places.append(Place(name, False, pods, run.price.get(name, 0.0), run.info[name].spec.allocatable))
        elif name in launched:
            c = launched[name]
            places.append(Place(name, True, pods, c.price_per_hour, c.allocatable))
    inflight = {s.name: s for s in run.cluster.inflight}
    on_inflight: dict[str, list[Pod]] = {}
    for p in sim.orphans:
        if p.node_name in inflight:
            on_inflight.setdefault(p.node_name, []).append(p)
    places += [Place(n, False, pods, 0.0, inflight[n].allocatable) for n, pods in sorted(on_inflight.items())]
    held = {p.key for place in places for p in place.pods}
    return held_reports(run.cluster.buffers, places, lambda r: sum(1 for p in r.pods if p.key not in held))


def consolidate(
    cluster: Cluster,
    at: datetime | None = None,
    *,
    min_savings: MinSavings | None = None,
    max_solves: int = 20_000,
    price_blocked: bool = True,
    repack: bool = True,
    tables: TableCache | None = None,
) -> Report:
    """The actions the disruption controller would take now, in order, with the reasons for every node it spares.

    price_blocked: work out what each move a PDB, do-not-disrupt or budget blocks would save (NotDisrupted's
    savings_per_hour); a caller that never shows it (the preview) saves the time. The actions are the same.
    repack: also try Loadmaster's repack move (groups of nodes whose pods are re-planned onto new nodes, possibly
    more of them), after the moves that only delete nodes and before Karpenter's replacements; False gives
    Karpenter's result.
    tables: what the run may reuse of tables built by earlier runs over the same catalog and pools
    (packing.scheduling.tablecache); the result is the same with or without it.
    """
    now = at or datetime.now(UTC)
    # the NodePools as their clock policies make them now (limits, replicas, consolidation policy)
    cluster, opened = cluster_at(cluster, now)
    with gc_paused():  # one collection after the run instead of one after each of its solves
        run = RunState(_in_engine_range(cluster), now, min_savings, max_solves, tables)
        started = time.perf_counter()
        _run_methods(run, methods(run, repack=repack))
        report = _report(run, started, price_blocked=price_blocked)
        report.schedules = opened
        return report


def _in_engine_range(c: Cluster) -> Cluster:
    """The cluster with every amount the engine computes with within MAX_AMOUNT (packing.resources): instance
    types beyond it left out, nodes' allocatable and pods' requests clamped. `c` itself when all are within."""
    specs = [n.spec for n in c.nodes] + list(c.inflight)
    if (
        all(it.capacity.in_range() and it.overhead.in_range() for it in c.catalog)
        and all(s.allocatable.in_range() and (s.capacity is None or s.capacity.in_range()) for s in specs)
        and all(p.requests.in_range() for p in c.running)
        and all(p.requests.in_range() for p in c.pending)
        and all(ds.pod.requests.in_range() for ds in c.daemonsets)
    ):
        return c
    return dataclasses.replace(
        c,
        catalog=representable_types(c.catalog),
        nodes=[n if (s := clamped_node(n.spec)) is n.spec else dataclasses.replace(n, spec=s) for n in c.nodes],
        running=[clamped_pod(p) for p in c.running],
        pending=[clamped_pod(p) for p in c.pending],
        inflight=[clamped_node(s) for s in c.inflight],
        daemonsets=[
            ds if ds.pod.requests.in_range() else dataclasses.replace(ds, pod=clamped_pod(ds.pod))
            for ds in c.daemonsets
        ],
    )
