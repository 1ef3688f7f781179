"""What the consolidation methods share (Karpenter's consolidation.go): which nodes are candidates and in what order,
which of them budgets and PDBs let go together, and how a move is priced and judged.

A consolidation move removes nodes and launches at most one cheaper node (repack, Loadmaster's own, may launch
several and is judged in repack.py). It must save money, and --min-savings when given; spot is replaced by spot
only under Karpenter's guard against interruption churn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from packing.disruption.formatting import money
from packing.disruption.model import EPS, CheapestOption, NotDisruptedCategory
from packing.disruption.ondemand import on_demand_refusal
from packing.disruption.refusals import (
    Refusal,
    below_min_savings,
    budget_refusal,
    needs_several_nodes,
    no_cheaper_replacement,
)
from packing.disruption.simulation import WhatIf
from packing.disruption.state import Fact, RunState
from packing.instancetype import CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT
from packing.nodepool import CAPACITY_TYPE_LABEL
from packing.scheduling.reservations import RESERVATION_ID_LABEL
from packing.scheduling.results import PlannedNodeClaim

__all__ = [
    "SPOT_TO_SPOT_MIN_TYPES",
    "consolidatable",
    "consolidation_why",
    "judge",
    "out_of_reservation",
    "spot_to_spot_refusal",
    "within_limits",
]

SPOT_TO_SPOT_MIN_TYPES = 15  # spot is replaced with spot only when this many cheaper spot types could launch

PDB_USAGE: Fact[dict[str, int] | None] = Fact("pdb usage")

# (refusal, savings, launch options per new nodeclaim, note for the action's why): what judging a move tells
Verdict = tuple[Refusal | None, float, dict[str, list[str]], str]


def consolidatable(run: RunState) -> list[str]:
    """The nodes consolidation may move, most worth it first: price over the cost of evicting its pods."""
    out = []
    for n in run.candidates():
        if not run.pods(n) or not run.price_known[n]:
            # empty nodes are emptiness's; and a node of unknown price has no saving to weigh
            continue
        if run.hard_reason(n) or run.gate_reason(n):
            continue
        out.append(n)
    score = {n: run.price[n] / (1.0 + run.eviction_cost(n)) for n in out}
    out.sort(key=lambda n: (-score[n], n))
    return out


def pdb_usage(run: RunState, name: str) -> dict[str, int] | None:
    """Evictions the node's pods would take from each PDB (None when one is covered by several)."""

    def usage(n: str) -> dict[str, int] | None:
        pods = run.pods(n)
        multi = any(len(run.pdb.cover.get(p.key, ())) > 1 for p in pods)
        return None if multi else run.pdb.usage(pods)

    return run.facts.recall(PDB_USAGE, name, usage)


def within_limits(run: RunState, ordered: Iterable[str], limit: int) -> list[str]:
    """The first nodes of `ordered` that budgets and PDBs allow to go together."""
    picked: list[str] = []
    taken: dict[str, int] = {}
    pdb_used: dict[str, int] = {}
    rooms: dict[str, tuple[int | None, str]] = {}
    allowed = run.pdb.allowed
    for n in ordered:
        pool = run.info[n].nodepool or ""
        if pool not in rooms:
            rooms[pool] = run.budget_room(pool, "underutilized")
        room, text = rooms[pool]
        if room is not None and taken.get(pool, 0) >= room:
            run.spared.pass_over(n, budget_refusal(text))
            continue
        usage = pdb_usage(run, n)
        if usage is None:
            continue  # a pod covered by several PDBs cannot be evicted (hard_reason says so)
        if any(pdb_used.get(k, 0) + v > allowed.get(k, 0) for k, v in usage.items()):
            continue  # alone it is fine (hard_reason passed); together with the others it is not
        for k, v in usage.items():
            pdb_used[k] = pdb_used.get(k, 0) + v
        taken[pool] = taken.get(pool, 0) + 1
        picked.append(n)
        if len(picked) >= limit:
            break
    return picked


def spot_to_spot_refusal(nodes: int, cheaper_types: int) -> Refusal | None:
    """Karpenter's guard against interruption churn: spot is replaced by spot only for one node, and only with at
    least SPOT_TO_SPOT_MIN_TYPES cheaper spot types to choose from. None when the move may go ahead."""
    if nodes > 1:
        return Refusal(
            "spot-to-spot replacement is only done for single-node consolidation", NotDisruptedCategory.SPOT_TO_SPOT
        )
    if cheaper_types < SPOT_TO_SPOT_MIN_TYPES:
        return Refusal(
            f"spot-to-spot replacement needs at least {SPOT_TO_SPOT_MIN_TYPES} cheaper spot instance types, "
            f"found {cheaper_types}",
            NotDisruptedCategory.SPOT_TO_SPOT,
        )
    return None


def out_of_reservation(run: RunState, names: Sequence[str], c: PlannedNodeClaim) -> Refusal | None:
    """A move that takes a node's pods off a capacity reservation onto a new node that is not on one: the
    reservation is paid whether a node runs on it or not, so the new node only adds to the bill."""
    if c.reservation_id is not None:
        return None
    for n in names:
        rid = run.info[n].spec.labels.get(RESERVATION_ID_LABEL)
        if rid and run.info[n].spec.labels.get(CAPACITY_TYPE_LABEL) == CAPACITY_TYPE_RESERVED:
            return Refusal(
                f"node {n} runs on capacity reservation {rid}, paid whether used or not: its pods would move to a "
                f"new {c.instance_type} {c.capacity_type} node at {money(c.price_per_hour)}, which only adds to the bill",
                NotDisruptedCategory.RESERVED_CAPACITY,
            )
    return None


def judge(run: RunState, names: Sequence[str], wi: WhatIf, *, honour_min_savings: bool = True) -> Verdict:
    """Whether consolidating `names` as `wi` proposes may go ahead: at most one new node, strictly cheaper than
    the nodes, spot rules kept, a saving (of at least --min-savings unless honour_min_savings is off); with the
    instance types the new node may launch (all cheaper than the nodes, the planned one first); in a Balanced pool,
    a score of at least 1/k (balanced.py), judged with --min-savings."""
    cost = run.cost(names)
    if wi.failure is not None:
        return wi.failure, 0.0, {}, ""
    refused_share = on_demand_refusal(run, names, wi)
    if refused_share is not None:
        return refused_share, 0.0, {}, ""
    if len(wi.claims) > 1:
        return needs_several_nodes(len(wi.claims)), 0.0, {}, ""
    options: dict[str, list[str]] = {}
    note = ""
    if wi.claims:
        c = wi.claims[0]
        refused = out_of_reservation(run, names, c)
        if refused is not None:
            return refused, 0.0, {}, ""
        if c.effective_price + EPS >= cost:
            return (
                no_cheaper_replacement(CheapestOption(c.instance_type, c.capacity_type, c.effective_price), cost),
                0.0,
                {},
                "",
            )
        types = run.types
        cts = {run.info[n].spec.labels.get(CAPACITY_TYPE_LABEL, "") for n in names}
        if c.capacity_type == CAPACITY_TYPE_SPOT:
            cheaper = [
                t
                for t in c.instance_type_options
                if (sp := types.type_price(t, c.nodepool, CAPACITY_TYPE_SPOT)) is not None and sp + EPS < cost
            ]
            if c.instance_type in cheaper:
                cheaper.remove(c.instance_type)
            cheaper.insert(0, c.instance_type)
            if cts == {CAPACITY_TYPE_SPOT}:
                refused = spot_to_spot_refusal(len(names), len(cheaper))
                if refused is not None:
                    return refused, 0.0, {}, ""
                cheaper = cheaper[:SPOT_TO_SPOT_MIN_TYPES]
            else:
                note = "; replacement pinned to spot"
            options[c.name] = cheaper
        else:
            kept = [
                t
                for t in c.instance_type_options
                if (pr := types.type_price(t, c.nodepool, c.capacity_type)) is not None and pr + EPS < cost
            ]
            if c.instance_type in kept:
                kept.remove(c.instance_type)
            options[c.name] = [c.instance_type, *kept]
    savings = cost - wi.extra_cost
    if savings <= EPS:
        return (
            Refusal(
                f"no saving: its pods would cost {money(wi.extra_cost)} elsewhere ≥ current {money(cost)}",
                NotDisruptedCategory.NO_SAVING,
            ),
            0.0,
            {},
            "",
        )
    if honour_min_savings and run.min_savings is not None and not run.min_savings.allows(savings, cost):
        return below_min_savings(savings, run.min_savings), savings, {}, ""
    if honour_min_savings:
        # Balanced's score is a policy too: pricing a blocked move (honour_min_savings off) leaves it out
        scored = run.scorer.judge(names, savings)
        if scored is not None:
            return scored, savings, {}, ""
    return None, savings, options, note


def consolidation_why(run: RunState, names: Sequence[str], wi: WhatIf, savings: float, note: str) -> str:
    cost = run.cost(names)
    k = len(wi.evicted)
    what = f"node {names[0]}" if len(names) == 1 else f"{len(names)} nodes"
    if not wi.claims:
        return f"underutilized: the {k} pods of {what} ({money(cost)}) fit on other nodes; saves {money(savings)}"
    c = wi.claims[0]
    evicted = {q.key for q in wi.evicted}
    on_new = sum(1 for p in c.pods if p.key in evicted)
    held = f"all {k} of its pods" if on_new == k else f"{on_new} of its {k} pods, the rest fit on other nodes"
    bound = sum(1 for p in c.pods if p.key not in evicted)
    if bound:
        # pending pods the provisioner would have put on the removed node need a place too
        held += f", and {bound} pending pod{'s' if bound > 1 else ''} that would have scheduled on it"
    return (
        f"underutilized: {what} ({money(cost)}) replaced by one {c.instance_type} {c.capacity_type} at "
        f"{money(c.price_per_hour)} holding {held}; saves {money(savings)}{note}"
    )
