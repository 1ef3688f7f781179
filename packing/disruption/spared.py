"""The nodes the action list leaves alone: why each is spared (NotDisrupted), and what a blocked move would save.

A node's reason is, first that applies: what makes it no candidate at all (hard_reason: not managed, a PDB,
do-not-disrupt...), what drift or expiration found but could not act on, an unknown price, the last refusal of a
consolidation method, its pool's consolidation settings, and otherwise that nothing cheaper was found (or the
simulation limit came first).

Once the list is complete, every node a PDB, do-not-disrupt or a budget spares is priced: what consolidating it
alone would save were the rule lifted (NotDisrupted.savings_per_hour).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from packing.disruption.consolidation import judge
from packing.disruption.model import EPS, NotDisrupted, NotDisruptedCategory
from packing.disruption.refusals import Refusal
from packing.disruption.state import RunState
from packing.disruption.whatifs import first_fit_applies, first_fit_check, first_fit_whatif, precheck_many

__all__ = ["MAX_BLOCKED_EVALUATIONS", "MAX_BLOCKED_SOLVES", "ROOMIEST", "not_disrupted", "price_blocked"]

# Simulations spent at most on pricing blocked moves (after the action list is complete): a default 10% budget on a
# thousand-node cluster blocks hundreds of nodes, and each one's price would otherwise cost a simulation
MAX_BLOCKED_SOLVES = 32
MAX_BLOCKED_EVALUATIONS = 128  # and full first-fit evaluations (each a pass over every node)
ROOMIEST = 64  # nodes the quick pricing test tries a blocked node's pods on

Roomy = tuple[dict[str, int], npt.NDArray[np.int64], npt.NDArray[np.int64]]


def not_disrupted(run: RunState, *, price: bool) -> list[NotDisrupted]:
    """A NotDisrupted for every input node no action takes, in input order. price: work out savings_per_hour for
    the blocked ones (price_blocked)."""
    out = []
    for n in run.input_order:
        if n in run.disrupted:
            continue
        r = run.hard_reason(n)
        if r is None:
            r = run.spared.found.get(n)
        if r is None and not run.price_known[n]:
            r = Refusal(
                "its price is unknown (the catalog has no offering for its instance type, zone and capacity type)",
                NotDisruptedCategory.PRICE_UNKNOWN,
            )
        if r is None:
            r = run.spared.passed.get(n)
        if r is None:
            r = run.gate_reason(n)
        if r is None:
            if run.truncated:
                r = Refusal("not evaluated: the simulation limit was reached", NotDisruptedCategory.NOT_EVALUATED)
            else:
                r = Refusal("no cheaper arrangement of its pods was found", NotDisruptedCategory.NO_CHEAPER_ARRANGEMENT)
        out.append(
            NotDisrupted(n, r.text, r.blocked_by, category=r.category, cheapest_replacement=r.cheapest, score=r.score)
        )
    prices = price_blocked(run, [x.node for x in out if x.blocked_by is not None]) if price else {}
    for x in out:
        x.savings_per_hour = prices.get(x.node)
    return out


def price_blocked(run: RunState, names: Sequence[str]) -> dict[str, float]:
    """For nodes a rule spares (PDB, do-not-disrupt, budget): the saving per hour of consolidating each alone, with
    the rule lifted, in the cluster as the action list leaves it. Judged as single-node consolidation judges a move
    (delete if the pods land elsewhere with every constraint, else one strictly cheaper replacement, spot rules
    included) but without --min-savings, which is a policy rather than a fact about the move. Nodes with no saving
    move, or that the allowance left unevaluated, are absent."""
    out: dict[str, float] = {}
    todo = [n for n in names if n in run.sim.specs and run.price_known[n] and run.gate_reason(n) is None]
    if not todo:
        return out
    early = precheck_many(run, todo)
    first = run.sim.solves
    full = 0
    roomy = _roomiest_rows(run)
    # the most expensive nodes first: when the allowance runs out, the large savings are known
    todo.sort(key=lambda n: (-run.price[n], n))
    for n in todo:
        if n in early:
            continue
        if not run.pods(n) and not run.sim.reserved_on.get(n):
            out[n] = run.price[n]  # an empty node: deleting it saves what it costs
            continue
        if _fits_in_roomiest(run, n, roomy):
            out[n] = run.price[n]  # its pods fit on other nodes as they are: deleting it saves its price
            continue
        # best effort: past the allowance nothing more is priced; those nodes stay unknown (None), and the run
        # itself is never marked truncated for it
        if full >= MAX_BLOCKED_EVALUATIONS or run.sim.solves - first >= MAX_BLOCKED_SOLVES:
            continue
        full += 1
        capped = run.sim.solves >= run.max_solves
        wi = first_fit_whatif(run, [n], simulate=not capped)
        if wi is None:
            if capped or first_fit_check(run, [n]):
                continue
            wi = run.sim.what_if([n], max_new=1)
        fail, savings, _, _ = judge(run, [n], wi, honour_min_savings=False)
        if fail is None and savings > EPS:
            out[n] = round(savings, 6)
    return out


def _roomiest_rows(run: RunState) -> Roomy:
    """The first-fit matrix's rows and the ROOMIEST + 1 rows with the most free cpu (then memory)."""
    keys = run.types.keys
    rows, free = run.sim.first_fit_matrix(keys)
    if not len(rows):
        return rows, free, np.zeros(0, dtype=np.int64)
    ci, mi = keys.index("cpu"), keys.index("memory")
    order = np.lexsort((-free[:, mi], -free[:, ci]))[: ROOMIEST + 1]
    return rows, free, order.astype(np.int64)


def _fits_in_roomiest(run: RunState, name: str, roomy: Roomy) -> bool:
    """A cheap sufficient test for pricing: the node's pods (room alone deciding where they go, none pending bound
    for it) first-fit onto the roomiest other nodes. Any placement that fits is a valid one, so a yes proves the
    delete; a no proves nothing (the full evaluation decides)."""
    rows, free, order = roomy
    pods = run.pods(name)
    if not len(order) or not first_fit_applies(run, [name]) or not all(
        run.sim.inert(p) and p.requests.get("pods", 0) > 0 for p in pods
    ):
        return False
    own = rows.get(name)
    pick = order[order != own][:ROOMIEST] if own is not None else order[:ROOMIEST]
    f = free[pick].copy()
    keys = run.types.keys
    for p in sorted(pods, key=lambda q: (-q.requests.get("cpu", 0), -q.requests.get("memory", 0), q.key)):
        v = np.array([p.requests.get(k, 0) for k in keys], dtype=np.int64)
        ok = np.flatnonzero(np.all(f >= v, axis=1))
        if not len(ok):
            return False
        f[ok[0]] -= v
    return True
