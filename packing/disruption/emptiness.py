"""Emptiness: nodes running no pods besides DaemonSet and mirror pods are deleted, all at once per round.

Within each pool's Empty budget, the dearest first. An empty node a pending pod would schedule on is not idle:
deleting it would only launch another.
"""

from __future__ import annotations

from packing.disruption.formatting import money
from packing.disruption.model import NotDisruptedCategory
from packing.disruption.refusals import Refusal, below_min_savings, budget_refusal
from packing.disruption.simulation import WhatIf
from packing.disruption.state import RunState
from packing.scheduling.results import Results

__all__ = ["Emptiness"]


class Emptiness:
    name = "emptiness"
    chains = False
    waits_for_chain = False

    def __init__(self, run: RunState) -> None:
        self.run = run

    def act(self) -> bool:
        run = self.run
        empties: list[str] = []
        for n in run.candidates():
            if run.pods(n):
                continue
            r = run.hard_reason(n) or run.gate_reason(n)
            if r:
                continue
            empties.append(n)
        if not empties:
            return False
        for n in list(empties):
            bound = run.sim.reserved_on.get(n)
            if bound:
                run.spared.pass_over(
                    n,
                    Refusal(
                        f"pending pod {min(p.key for p in bound)} would schedule on it",
                        NotDisruptedCategory.PENDING_POD_BOUND,
                    ),
                )
                empties.remove(n)
        chosen: list[str] = []
        by_pool: dict[str, list[str]] = {}
        for n in empties:
            by_pool.setdefault(run.info[n].nodepool or "", []).append(n)
        for pool, names in sorted(by_pool.items()):
            names.sort(key=lambda n: (-run.price[n], n))
            room, text = run.budget_room(pool, "empty")
            take = names if room is None else names[:room]
            chosen.extend(take)
            for n in names[len(take) :]:
                run.spared.pass_over(n, budget_refusal(text))
        if not chosen:
            return False
        chosen.sort(key=run.input_order.index)
        savings = sum(run.price[n] for n in chosen)
        if run.min_savings is not None and not run.min_savings.allows(savings, savings):
            for n in chosen:
                run.spared.pass_over(n, below_min_savings(savings, run.min_savings))
            return False
        what = f"node {chosen[0]} is" if len(chosen) == 1 else f"{len(chosen)} nodes are"
        run.commit(
            chosen,
            WhatIf(Results(), []),
            "empty",
            f"empty: {what} running no pods besides DaemonSet and mirror pods; saves {money(savings)}",
            savings,
            method=self.name,
        )
        return True
