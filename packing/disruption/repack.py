"""Repack, Loadmaster's own move (beyond Karpenter): a group of nodes whose pods are re-planned onto new nodes.

Karpenter's moves only ever remove nodes (k nodes -> at most one). When the cheapest capacity comes in small nodes
(burstables price a vCPU 2-4x below anything else), the cheapest arrangement of a fragmented cluster has MORE,
smaller nodes, which no such move can reach. A repack takes a group of candidate nodes of one NodePool and capacity
type, plans all their pods onto new nodes only with the provisioning Scheduler's cost packer (the pods room alone
places first fill the room left on nodes the run keeps), and replaces the group with whatever it launches when that
is cheaper by a margin.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from packing.disruption.consolidation import (
    SPOT_TO_SPOT_MIN_TYPES,
    consolidatable,
    out_of_reservation,
    spot_to_spot_refusal,
    within_limits,
)
from packing.disruption.firstfit import first_fit
from packing.disruption.formatting import money
from packing.disruption.method import Method
from packing.disruption.model import EPS, NotDisruptedCategory
from packing.disruption.ondemand import on_demand_refusal
from packing.disruption.refusals import Refusal
from packing.disruption.simulation import WhatIf
from packing.disruption.state import Fact, RunState
from packing.disruption.whatifs import demand, room_decides
from packing.instancetype import CAPACITY_TYPE_SPOT
from packing.nodepool import CAPACITY_TYPE_LABEL

__all__ = ["REPACK_MAX_GROUP", "REPACK_MIN_DOLLARS", "REPACK_MIN_FRACTION", "REPACK_SCREEN", "Repack"]

REPACK_MAX_GROUP = 50  # nodes per repack: bounds what one action disrupts (a budget may bound it further)
REPACK_MIN_FRACTION = 0.05  # a repack must save this share of its group's cost (see Repack.need)
REPACK_MIN_DOLLARS = 0.01  # and at least this many dollars per hour
REPACK_SCREEN = 16  # nodes of the largest potential tried first: if they cannot save the margin, nothing is

REPACKABLE: Fact[bool] = Fact("repackable")
POTENTIAL: Fact[float] = Fact("potential")

# (nodes, what-if, savings, launch options per new nodeclaim, note for the action's why)
Found = tuple[list[str], WhatIf, float, dict[str, list[str]], str]


class Repack:
    """One repack action per call of act() and more while they keep coming, or False. Groups are formed per
    NodePool and capacity type from the consolidatable nodes whose pods repackable() allows, the largest potential
    saving first (price minus the lower bound on its pods' cost), at most REPACK_MAX_GROUP, within the
    Underutilized budget and the PDBs taken together (as multi-node does)."""

    name = "repack"
    chains = True
    waits_for_chain = False

    def __init__(self, run: RunState, first: Sequence[Method]) -> None:
        """first: the methods every round tries before any consolidation, asked again after each repack."""
        self.run = run
        self.first = first
        # plans that failed to save the margin, by their nodes, those nodes' pod counts and the length of the action
        # list (the room left on the nodes that stay changes with every action)
        self._failed: set[tuple[tuple[str, ...], tuple[int, ...], int]] = set()
        # nodes this run leaves in place (launched by earlier actions, spared by a rule, or not candidates at all):
        # a repack may use their free room, and no later repack moves what it puts there
        self._holes: frozenset[str] = frozenset()

    def repackable(self, name: str) -> bool:
        """True when the node's pods, and the pending pods bound for it, may be planned onto new nodes without the
        Scheduler seeing the rest of the cluster: none has a spread or pod (anti-)affinity rule of its own, required
        or preferred, and no such rule of any pod selects it (so neither they nor anyone else can count them).
        Node selectors, node affinity, tolerations and host ports are fine: the Scheduler honours them among the
        new nodes, which hold nothing else."""
        run = self.run

        def compute(n: str) -> bool:
            return not any(
                p.has_topology_rules or run.sim.seen_by_topology(p)
                for p in (*run.pods(n), *run.sim.reserved_on.get(n, ()))
            )

        return run.facts.recall(REPACKABLE, name, compute)

    def potential(self, name: str) -> float:
        """The node's price minus a lower bound on what its pods cost anywhere (TypeTable.unit_rates)."""
        run = self.run
        rates = run.types.unit_rates
        return run.facts.recall(POTENTIAL, name, lambda n: run.price[n] - float((demand(run, n) * rates).max()))

    def need(self, cost: float) -> float:
        """The least a repack of nodes costing `cost` must save. A repack evicts every pod of its group and launches
        several nodes, and the cost packer's plans vary by a few percent with the exact pods they are given: 5% of
        the group's cost keeps that noise from churning the cluster (a later run cannot undo and redo a move for
        the same few percent), and $0.01/h (about $7 a month) keeps whole-node evictions from being made for cents.
        --min-savings raises it, never lowers it."""
        need = max(REPACK_MIN_FRACTION * cost, REPACK_MIN_DOLLARS)
        ms = self.run.min_savings
        if ms is not None:
            need = max(need, ms.dollars or 0.0, cost * (ms.percent or 0.0) / 100)
        return need

    def _share(self) -> float:
        """The margin's share of a node's price (its dollar floor applies to a group as a whole, not to each)."""
        ms = self.run.min_savings
        return max(REPACK_MIN_FRACTION, (ms.percent or 0.0) / 100 if ms else 0.0)

    def act(self) -> bool:
        run = self.run
        movable = consolidatable(run)
        cands = [n for n in movable if self.repackable(n)]
        if not cands:
            return False
        self._holes = frozenset(run.sim.specs) - frozenset(movable)
        rates = run.types.unit_rates
        demands = {n: demand(run, n) for n in cands}
        potential = {n: self.potential(n) for n in cands}
        share = self._share()
        buckets: dict[tuple[str, str], list[str]] = {}
        for n in cands:
            if potential[n] < share * run.price[n]:
                continue  # even a perfect packing of its pods would not save the margin's share: it would dilute
            labels = run.info[n].spec.labels
            buckets.setdefault((run.info[n].nodepool or "", labels.get(CAPACITY_TYPE_LABEL, "")), []).append(n)
        for names in buckets.values():
            names.sort(key=lambda n: (-potential[n], n))
        did = False
        while True:
            found = None
            live = [(key, names) for key, names in buckets.items() if names]
            for _, names in sorted(live, key=lambda kv: (-potential[kv[1][0]], kv[0])):
                group = within_limits(run, names, REPACK_MAX_GROUP)
                found = self._search(group, demands, rates) if group else None
                if found is not None or run.truncated:
                    break
            if found is None:
                return did
            chosen, wi, savings, options, note = found
            run.commit(chosen, wi, "underutilized", self._why(chosen, wi, savings, note), savings, options, self.name)
            did = True
            # The next repack is looked for at once, without the setup above: a repack moves pods only onto new
            # nodes and nodes that are not candidates, so the other candidates, their pods and their order are as
            # they were. The methods every round asks first are asked first.
            if any(m.act() for m in self.first):
                return True
            gone = set(chosen)
            for names in buckets.values():
                names[:] = [n for n in names if n not in gone]
            self._holes = frozenset(run.sim.specs) - frozenset(movable)

    def _search(
        self, group: Sequence[str], demands: dict[str, npt.NDArray[np.int64]], rates: npt.NDArray[np.float64]
    ) -> Found | None:
        """The largest prefix of `group` (all of it, then halves) whose repack clears the margin.

        The largest group that saves enough saves the most in one action, and the provisioning Scheduler packs a
        large group both better and faster per pod than several small ones; smaller groups saved no larger share of
        their cost and took many more actions. A size whose lower bound already rules out the margin is not
        simulated.

        The whole group is tried first: on a fragmented cluster it usually clears the margin, which settles the
        search in one simulation. When it does not, the REPACK_SCREEN nodes of the largest potential are tried
        together before the halving: when even they cannot save the margin's share of their cost, a group of them
        and nodes of less potential rarely does, and the halving would spend a simulation per size for nothing. A
        smaller screen misses groups whose pods complement each other; trying the screen before the whole group
        stops too early (a plan of the screen's nodes can be dearer than the whole group's).
        """
        run = self.run
        share = self._share()

        def plan(names: list[str]) -> tuple[Refusal | None, WhatIf | None, float, dict[str, list[str]], str]:
            """(refusal, what-if, ...): no what-if when the bound rules the plan out or it failed before."""
            cost = run.cost(names)
            total = np.sum([demands[n] for n in names], axis=0)
            if cost - float((total * rates).max()) + EPS < share * cost:
                return None, None, 0.0, {}, ""  # no plan can save the margin's share
            # the plan depends only on these nodes' pods, and on the limits when a pool has some
            # (and on the room left on the nodes that stay, which every action changes)
            key = (tuple(names), tuple(len(run.pods(n)) for n in names), len(run.actions))
            if key in self._failed or run.out_of_solves():
                return None, None, 0.0, {}, ""
            wi = self._whatif(names)
            fail, savings, options, note = self._judge(names, wi)
            if fail is not None:
                self._failed.add(key)
            return fail, wi, savings, options, note

        fallback: Found | None = None
        floor = 0  # sizes at or below this are settled by the screen
        whole = list(group)
        fail, wi, savings, options, note = plan(whole)
        if fail is None and wi is not None:
            return whole, wi, savings, options, note
        if len(group) > REPACK_SCREEN:
            names = list(group[:REPACK_SCREEN])
            fail, wi, savings, options, note = plan(names)
            if wi is None or (wi.ok and savings < share * run.cost(names) - EPS):
                return None  # even the nodes of the largest potential cannot save the margin's share
            if wi.ok:  # (when some pod cannot move, the halving below finds the group without its node)
                floor = REPACK_SCREEN
                if fail is None:
                    fallback = (names, wi, savings, options, note)
        size = len(group) // 2
        while size > floor:
            names = list(group[:size])
            fail, wi, savings, options, note = plan(names)
            if fail is None and wi is not None:
                return names, wi, savings, options, note
            size //= 2
        return fallback

    def _whatif(self, names: Sequence[str]) -> WhatIf:
        """The repack of `names`: the pods that room alone places (no constraint, seen by no topology rule) first
        fill the free room of the nodes the run leaves in place, first-fit, largest first; every other pod, and the
        pending pods bound for `names`, are planned onto new nodes by the cost packer."""
        run = self.run
        pods = [*(p for n in names for p in run.pods(n)), *(p for n in names for p in run.sim.reserved_on.get(n, ()))]
        fill = [p for p in pods if room_decides(run, [p])]
        targets: dict[str, str] = {}
        if fill and self._holes:
            keys = run.types.keys
            free = run.sim.first_fit_matrix(keys)[1]
            names_ff = run.sim.first_fit_names(keys)
            holes = self._holes
            allow = np.fromiter((n in holes for n in names_ff), dtype=bool, count=len(names_ff))
            if bool(allow.any()):
                targets = first_fit(fill, keys, free, names_ff, allow=allow)[0]
        if not targets:
            return run.sim.what_if_new_nodes(names)
        wi = run.sim.what_if_new_nodes(names, only=[p for p in pods if p.key not in targets])
        if wi.ok:
            wi.targets.update(targets)
        return wi

    def _judge(
        self, names: Sequence[str], wi: WhatIf
    ) -> tuple[Refusal | None, float, dict[str, list[str]], str]:
        """(refusal, savings, launch options per new nodeclaim, note) for repacking `names` as `wi` plans it."""
        run = self.run
        cost = run.cost(names)
        if wi.failure is not None:
            return wi.failure, 0.0, {}, ""
        refused_share = on_demand_refusal(run, names, wi)
        if refused_share is not None:
            return refused_share, 0.0, {}, ""
        if not wi.claims:
            return Refusal("no new node planned", NotDisruptedCategory.NO_SAVING), 0.0, {}, ""
        for c in wi.claims:
            refused = out_of_reservation(run, names, c)
            if refused is not None:
                return refused, 0.0, {}, ""
        need = self.need(cost)
        savings = cost - wi.extra_cost
        if savings + EPS < need:
            return (
                Refusal(
                    f"repacking onto {len(wi.claims)} new nodes saves {money(savings)}, less than the {money(need)} a "
                    "repack must save",
                    NotDisruptedCategory.NO_SAVING,
                ),
                savings,
                {},
                "",
            )
        # Each claim may launch any of its types priced at most its planned price plus an equal share of the margin
        # above `need`: whatever every claim ends up launching, the move still saves at least `need`.
        allowance = (savings - need) / len(wi.claims)
        from_spot = any(run.info[n].spec.labels.get(CAPACITY_TYPE_LABEL) == CAPACITY_TYPE_SPOT for n in names)
        options: dict[str, list[str]] = {}
        pinned = False
        types = run.types
        for c in wi.claims:
            ceiling = c.price_per_hour + allowance + EPS
            opts = [c.instance_type] + [
                t
                for t in c.instance_type_options
                if t != c.instance_type
                and (pr := types.offer_price(t, c.zone, c.capacity_type)) is not None
                and pr <= ceiling
            ]
            if c.capacity_type == CAPACITY_TYPE_SPOT:
                if from_spot:
                    refused = spot_to_spot_refusal(len(names), len(opts))
                    if refused is not None:
                        return refused, 0.0, {}, ""
                    opts = opts[:SPOT_TO_SPOT_MIN_TYPES]
                else:
                    pinned = True
            options[c.name] = opts
        scored = run.scorer.judge(names, savings)  # Balanced pools score a repack as any consolidation move
        if scored is not None:
            return scored, savings, {}, ""
        return None, savings, options, "; replacements pinned to spot" if pinned else ""

    def _why(self, names: Sequence[str], wi: WhatIf, savings: float, note: str) -> str:
        cost = self.run.cost(names)
        counts: dict[str, int] = {}
        for c in wi.claims:
            t = f"{c.instance_type} {c.capacity_type}"
            counts[t] = counts.get(t, 0) + 1
        mix = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        shown = ", ".join(f"{k}x {t}" for t, k in mix[:4]) + (", ..." if len(mix) > 4 else "")
        evicted = {p.key for p in wi.evicted}
        bound = sum(1 for c in wi.claims for p in c.pods if p.key not in evicted)
        on_new = sum(1 for c in wi.claims for p in c.pods if p.key in evicted)
        if on_new == len(evicted):
            held = f"all {len(evicted)} of their pods"
        else:
            held = f"{on_new} of their {len(evicted)} pods, the rest in room left on nodes that stay"
        if bound:
            held += f" and {bound} pending pod{'s' if bound > 1 else ''} that would have scheduled on them"
        what = "1 node" if len(names) == 1 else f"{len(names)} nodes"
        new = "1 new node" if len(wi.claims) == 1 else f"{len(wi.claims)} new nodes"
        return (
            f"underutilized, repack (Loadmaster, beyond Karpenter): {what} ({money(cost)}) replaced by {new} "
            f"({money(wi.extra_cost)}: {shown}) holding {held}; saves {money(savings)}{note}"
        )
