"""Multi-node consolidation (Karpenter's multinodeconsolidation.go): the longest prefix of the candidates, in order,
that can go together, replaced by at most one cheaper node; found by binary search over the prefix length.

With delete_only (Loadmaster's order with repack on, see engine.py) only prefixes whose pods all land on the other
nodes count, launching nothing.
"""

from __future__ import annotations

from packing.disruption.consolidation import consolidatable, consolidation_why, judge, within_limits
from packing.disruption.simulation import WhatIf
from packing.disruption.state import RunState
from packing.disruption.whatifs import (
    delete_whatif,
    first_fit_check,
    first_fit_whatif,
    longest_plausible_prefix,
    precheck,
)

__all__ = ["MAX_MULTI_CANDIDATES", "MultiNode"]

MAX_MULTI_CANDIDATES = 100  # Karpenter considers at most 100 nodes per multi-node consolidation


class MultiNode:
    name = "multi-node"
    chains = False

    def __init__(self, run: RunState, *, delete_only: bool = False) -> None:
        self.run = run
        self.delete_only = delete_only
        self.waits_for_chain = delete_only
        # the epoch its search last found nothing at: a search that found nothing is not repeated until capacity
        # has been added (a replacement launched), since deletions only took room away, which cannot make a
        # larger set fit
        self.failed_epoch: int | None = None

    def act(self) -> bool:
        run = self.run
        if self.failed_epoch == run.sim.epoch:
            return False
        cands = within_limits(run, consolidatable(run), MAX_MULTI_CANDIDATES)
        if len(cands) < 2 or not self._search(cands):
            self.failed_epoch = run.sim.epoch
            return False
        return True

    def _search(self, cands: list[str]) -> bool:
        """Karpenter's multi-node search over `cands` in order: the longest prefix that can go (binary search)."""
        run = self.run
        delete_only = self.delete_only
        best: tuple[list[str], WhatIf, float, dict[str, list[str]], str] | None = None

        def attempt(n: int) -> bool:
            nonlocal best
            prefix = cands[:n]
            # (a delete's own first-fit is a cheaper test than the precheck's necessary condition)
            if not delete_only and precheck(run, prefix):
                return False
            if delete_only:
                wi = delete_whatif(run, prefix)
                if wi is None:
                    return False
            else:
                wi = first_fit_whatif(run, prefix)  # its own first-fit pass also rules out first_fit_check's
            if wi is None:
                if first_fit_check(run, prefix) or run.out_of_solves():
                    return False
                wi = run.sim.what_if(prefix, max_new=1)
            fail, savings, options, note = judge(run, prefix, wi)
            if fail is not None:
                return False
            best = (prefix, wi, savings, options, note)
            return True

        # The whole list is probed first: when it works no smaller prefix can be larger, and on a fragmented
        # cluster it often does, which saves the search's other simulations.
        hi = longest_plausible_prefix(run, cands)
        if hi >= 1 and not attempt(hi):
            lo, hi = 1, hi - 1
            while lo <= hi and not run.truncated:
                mid = (lo + hi) // 2
                if attempt(mid):
                    lo = mid + 1
                else:
                    hi = mid - 1
        if best is None:
            return False
        prefix, wi, savings, options, note = best
        why = consolidation_why(run, prefix, wi, savings, note)
        run.commit(prefix, wi, "underutilized", why, savings, options, method=self.name)
        return True
