"""Single-node consolidation (Karpenter's singlenodeconsolidation.go): each candidate alone, in order, deleted or
replaced by one cheaper node; every move of a pass is found in that one pass.

With delete_only (Loadmaster's order with repack on, see engine.py) only moves whose pods all land on other nodes,
launching nothing.
"""

from __future__ import annotations

from packing.disruption.consolidation import consolidatable, consolidation_why, judge
from packing.disruption.firstfit import RoomIndex, largest_first
from packing.disruption.refusals import budget_refusal
from packing.disruption.simulation import WhatIf
from packing.disruption.state import RunState
from packing.disruption.whatifs import (
    delete_whatif,
    first_fit_applies,
    first_fit_check,
    first_fit_whatif,
    precheck,
    precheck_many,
    room_decides,
)
from packing.scheduling.results import Results

__all__ = ["SingleNode"]


class SingleNode:
    name = "single-node"
    chains = False

    def __init__(self, run: RunState, *, delete_only: bool = False) -> None:
        self.run = run
        self.delete_only = delete_only
        self.waits_for_chain = delete_only
        self.failed: dict[str, int] = {}  # node -> epoch its move failed at (retried once capacity is added)

    def act(self) -> bool:
        run = self.run
        delete_only = self.delete_only
        failed = self.failed
        did = False
        cands = consolidatable(run)
        todo = [n for n in cands if failed.get(n) != run.sim.epoch]
        # capacity only shrinks within the pass except where a replacement adds some, and then the epoch moves
        # and the next pass looks again: so one necessary-condition check at the start of the pass is enough
        early = precheck_many(run, todo)
        index: RoomIndex | None = None
        for n in cands:
            if n in run.disrupted or n not in run.sim.specs:
                continue
            if failed.get(n) == run.sim.epoch:
                continue
            pool = run.info[n].nodepool or ""
            room, text = run.budget_room(pool, "underutilized")
            if room is not None and room <= 0:
                run.spared.pass_over(n, budget_refusal(text))
                continue
            if run.hard_reason(n) or run.gate_reason(n) or not run.pods(n):
                continue  # an earlier action this pass moved pods onto it
            hopeless = run.scorer.best_case(n)  # Balanced: even deleting it outright scores too low
            if hopeless is not None:  # not remembered as failed: later rounds' totals may let it pass
                run.spared.pass_over(n, hopeless)
                continue
            pre = early.get(n)
            if pre is None and did and not first_fit_applies(run, [n]):
                pre = precheck(run, [n])  # the state moved since the pass began: look again, it is cheap
            if pre is not None:
                failed[n] = run.sim.epoch
                run.spared.pass_over(n, pre)
                continue
            placed: tuple[list[int], list[tuple[int, ...]]] | None = None
            wi: WhatIf | None
            if delete_only:
                own = run.pods(n)
                bound = run.sim.reserved_on.get(n, [])
                if room_decides(run, [*own, *bound]):
                    # most nodes of a pass fail this check once earlier deletes have taken the room: the index
                    # answers it without numpy, and is kept up to date as the deletes are applied
                    keys = run.types.keys
                    if index is None:
                        index = RoomIndex(run.sim.first_fit_names(keys), run.sim.first_fit_matrix(keys)[1])
                    moving = largest_first([*own, *bound])
                    vecs = [p.requests.vector(keys) for p in moving]
                    rows = index.place(n, vecs)
                    wi = None
                    if rows is not None:
                        targets = {p.key: index.names[r] for p, r in zip(moving, rows, strict=True)}
                        wi = WhatIf(Results(), list(own), targets=targets, displaced=list(bound))
                        placed = (rows, vecs)
                else:
                    wi = delete_whatif(run, [n])
                if wi is None:
                    failed[n] = run.sim.epoch
                    if run.truncated:
                        break
                    continue
            else:
                wi = first_fit_whatif(run, [n])  # its first-fit pass also rules out what first_fit_check would
            if wi is None:
                pre = first_fit_check(run, [n]) if first_fit_applies(run, [n]) else None
                if pre is not None:
                    failed[n] = run.sim.epoch
                    run.spared.pass_over(n, pre)
                    continue
                if run.out_of_solves():
                    break
                wi = run.sim.what_if([n], max_new=1)
            fail, savings, options, note = judge(run, [n], wi)
            if fail is not None:
                failed[n] = run.sim.epoch
                run.spared.pass_over(n, fail)
                continue
            why = consolidation_why(run, [n], wi, savings, note)
            run.commit([n], wi, "underutilized", why, savings, options, method=self.name)
            did = True
            if index is not None:
                if placed is not None:
                    index.apply(n, *placed)
                else:
                    index = None  # a move the index did not see: build it again from the new state
        return did
