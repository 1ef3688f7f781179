"""Consolidation never breaks a workload's on-demand share (packing.ondemandshare): a move that would leave a
workload with fewer replicas on on-demand nodes than its contract requires, and fewer than it has now, is
refused (category on-demand-share), naming the workload and the numbers.

Only the pods a move evicts can change the count, so a move that puts each bound workload's evicted pods back on
on-demand at least as often as it takes them off costs nothing to check; the count over the whole cluster is
taken only for a workload the move would lower.
"""

from __future__ import annotations

from collections.abc import Sequence

from packing.disruption.model import NotDisruptedCategory
from packing.disruption.refusals import Refusal
from packing.disruption.simulation import WhatIf
from packing.disruption.state import RunState
from packing.instancetype import CAPACITY_TYPE_ON_DEMAND
from packing.nodepool import CAPACITY_TYPE_LABEL
from packing.ondemandshare import WorkloadRef

__all__ = ["on_demand_refusal", "on_demand_running"]


def _on_demand_node(run: RunState, name: str) -> bool:
    spec = run.sim.specs.get(name)
    if spec is None:
        spec = next((s for s in run.sim.inflight if s.name == name), None)
    return spec is not None and spec.labels.get(CAPACITY_TYPE_LABEL) == CAPACITY_TYPE_ON_DEMAND


def on_demand_running(run: RunState, w: WorkloadRef) -> int:
    """The workload's pods on on-demand nodes as the action list leaves the cluster."""
    of = run.cluster.on_demand.of
    count = 0
    for name in run.sim.order:
        if _on_demand_node(run, name):
            count += sum(1 for p in run.sim.node_pods(name) if of.get(p.key) == w)
    return count + sum(1 for p in run.sim.orphans if of.get(p.key) == w and _on_demand_node(run, p.node_name))


def on_demand_refusal(run: RunState, names: Sequence[str], wi: WhatIf) -> Refusal | None:
    """Why moving the pods of `names` as `wi` plans would break an on-demand share (None when it would not)."""
    bound = run.cluster.on_demand
    if not bound.contracts:
        return None
    claim_types = {c.name: c.capacity_type for c in wi.claims}
    delta: dict[WorkloadRef, int] = {}
    for p in wi.evicted:
        w = bound.of.get(p.key)
        if w is None:
            continue
        claim = wi.claim_targets.get(p.key)
        if claim is not None:
            now = claim_types.get(claim) == CAPACITY_TYPE_ON_DEMAND
        else:
            target = wi.targets.get(p.key)
            now = target is not None and _on_demand_node(run, target)
        delta[w] = delta.get(w, 0) + int(now) - int(_on_demand_node(run, p.node_name))
    for w in sorted(w for w, d in delta.items() if d < 0):
        c = bound.contracts[w]
        before = on_demand_running(run, w)
        after = before + delta[w]
        if after < c.required:
            s = c.share
            return Refusal(
                f"the on-demand share of {w} ({c.source}: base {s.base}, {s.percentage}% above it) needs {c.required} "
                f"of its {c.replicas} replicas on on-demand nodes; the move would leave {after} (now {before})",
                NotDisruptedCategory.ON_DEMAND_SHARE,
            )
    return None
