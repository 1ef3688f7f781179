"""Building a consolidation move's what-if, and ruling moves out before paying for a simulation.

A pod with no placement constraint that no topology rule in the cluster can see (sim.inert) is decided by room and
taints alone, so first-fit onto the other untainted nodes (largest pod first, nodes in the order the Scheduler
tries them) is a valid placement with every constraint honoured: such pods are placed without a simulation, and
only what is left over for a new node goes through the Scheduler. The prechecks are necessary conditions (the
pods must fit in the free room of the other nodes plus one node cheaper than the move), so a move they rule out
could never have been found; they return the Refusal that becomes the node's NotDisrupted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from packing.buffers import is_virtual
from packing.disruption.firstfit import first_fit
from packing.disruption.model import EPS, NotDisruptedCategory
from packing.disruption.refusals import (
    Refusal,
    needs_several_nodes,
    no_cheaper_replacement,
    no_launchable_type,
    no_room,
)
from packing.disruption.simulation import WhatIf
from packing.disruption.state import Fact, RunState
from packing.pods import Pod
from packing.scheduling.results import Results

__all__ = [
    "delete_whatif",
    "demand",
    "first_fit_applies",
    "first_fit_check",
    "first_fit_whatif",
    "longest_plausible_prefix",
    "precheck",
    "precheck_many",
    "room_decides",
    "unconstrained",
]

DEMAND: Fact[npt.NDArray[np.int64]] = Fact("demand")


def unconstrained(p: Pod) -> bool:
    return not (
        p.node_selector or p.required_terms or p.preferred_terms or p.tolerations or p.spread or p.affinity
        or p.anti_affinity or p.preferred_affinity or p.preferred_anti_affinity or p.host_ports
    )


def room_decides(run: RunState, pods: Sequence[Pod]) -> bool:
    """True when room alone decides where these pods may go (first-fit onto existing nodes is then valid)."""
    if not pods:
        return False
    known = run.room_decides
    for p in pods:
        hit = known.get(p.key)
        if hit is None:
            hit = known[p.key] = unconstrained(p) and run.sim.inert(p) and p.requests.get("pods", 0) > 0
        if not hit:
            return False
    return True


def demand(run: RunState, name: str) -> npt.NDArray[np.int64]:
    """What the node's pods and the pending pods bound for it request, over the type table's resources."""
    return run.facts.recall(DEMAND, name, lambda n: _demand(run, n))


def _demand(run: RunState, name: str) -> npt.NDArray[np.int64]:
    keys = run.types.keys
    vecs = [p.requests.vector(keys) for p in (*run.pods(name), *run.sim.reserved_on.get(name, ()))]
    return np.array(vecs, dtype=np.int64).sum(axis=0) if vecs else np.zeros(len(keys), dtype=np.int64)


def first_fit_elsewhere(
    run: RunState, names: Sequence[str], pods: Sequence[Pod], *, all_or_nothing: bool = False
) -> tuple[dict[str, str], list[Pod], npt.NDArray[np.int64]]:
    """first_fit of `pods` onto the untainted nodes but `names`, in the order the Scheduler tries them."""
    keys = run.types.keys
    rows, free = run.sim.first_fit_matrix(keys)
    skip = [rows[n] for n in names if n in rows]  # the nodes themselves are going
    return first_fit(pods, keys, free, run.sim.first_fit_names(keys), all_or_nothing=all_or_nothing, skip=skip)


def delete_whatif(run: RunState, names: Sequence[str]) -> WhatIf | None:
    """The move that deletes `names` with every pod landing on the other nodes, launching nothing; None when the
    pods need a new node (or the simulation limit is reached). Pods that room alone decides are placed by first-fit
    without a simulation: what first-fit leaves over is exactly what the Scheduler, which fills existing nodes the
    same way, would have to open a new node for."""
    own = [p for n in names for p in run.pods(n)]
    bound = [p for n in names for p in run.sim.reserved_on.get(n, ())]
    pods = own + bound
    if not pods:
        return None
    if room_decides(run, pods):
        targets, rest, _ = first_fit_elsewhere(run, names, pods, all_or_nothing=True)
        if rest:
            return None  # a pod needs a new node
        return WhatIf(Results(), own, targets=targets, displaced=bound)
    if run.out_of_solves():
        return None
    wi = run.sim.what_if(names, max_new=1)
    return wi if wi.ok and not wi.claims else None


def first_fit_whatif(run: RunState, names: Sequence[str], *, simulate: bool = True) -> WhatIf | None:
    """The move that deletes `names`, built without a simulation when first-fit places every pod to move.

    The pending pods bound for `names` move with the evicted ones. None when room alone does not decide every pod
    (then a simulation decides). When some pods are left over, only those are simulated, against no existing node
    (sim.what_if_rest): the new node the move needs is planned by the provisioning engine without it scanning the
    whole cluster; and when no pool may launch a node, the move fails without a simulation. None also when
    simulate is off, or the simulation limit is reached."""
    own = [p for n in names for p in run.pods(n)]
    bound = [p for n in names for p in run.sim.reserved_on.get(n, ())]
    pods = own + bound
    if not room_decides(run, pods):
        return None
    types = run.types
    if not len(run.sim.first_fit_matrix(types.keys)[0]):
        return None
    targets, rest, left = first_fit_elsewhere(run, names, pods)
    if not rest:
        return WhatIf(Results(), own, targets=targets, displaced=bound)
    # what is left needs the one new node: the same necessary condition as first_fit_check, from this pass
    why = types.one_cheaper_node(np.all(types.alloc >= left, axis=1), run.cost(names))
    if why is not None:
        wi = WhatIf(Results(), [])
        wi.failure = why
        return wi
    if run.sim.no_new_node(names):
        # what first-fit leaves over needs a new node, and no pool may launch one
        wi = WhatIf(Results(), [])
        who = "pending pod" if any(p.key == rest[0].key for p in bound) else "pod"
        if is_virtual(rest[0]):
            who = "CapacityBuffer pod"
        wi.failure = Refusal(
            f"{who} {rest[0].key} would not fit elsewhere (every nodepool has reached its limits)",
            NotDisruptedCategory.PODS_DO_NOT_FIT,
        )
        return wi
    if not simulate or run.out_of_solves():
        return None
    return run.sim.what_if_rest(names, own, bound, targets, rest)


def first_fit_applies(run: RunState, names: Sequence[str]) -> bool:
    """True when the pods of `names` have no placement constraint at all and no pending pod is bound for them
    (pending pods bound elsewhere already hold their room in the free matrix)."""
    if any(run.sim.reserved_on.get(n) for n in names):
        return False  # those pending pods would have to move too: let the simulation place them
    pods = [p for n in names for p in run.pods(n)]
    return bool(pods) and all(unconstrained(p) for p in pods)


def first_fit_check(run: RunState, names: Sequence[str]) -> Refusal | None:
    """For pods with no placement constraints at all, the simulation's existing-node step is plain first-fit:
    largest pod first, nodes in name order (skipping tainted ones, which such pods cannot use). Emulating it tells
    what is left for the one new node, and whether a type cheaper than the node could hold that, without the cost of
    a simulation. None: nothing ruled out (the simulation decides)."""
    left = _first_fit_left(run, names)
    if left is None or not bool(left.any()):
        return None
    types = run.types
    return types.one_cheaper_node(np.all(types.alloc >= left, axis=1), run.cost(names))


def _first_fit_left(run: RunState, names: Sequence[str]) -> npt.NDArray[np.int64] | None:
    """What first-fit onto the other nodes leaves over of the pods of `names` (None when first_fit_applies does
    not hold). All zeros means every pod fits on an existing node, which for such pods is a valid placement
    whatever order a simulation would try nodes in."""
    if not first_fit_applies(run, names):
        return None
    return first_fit_elsewhere(run, names, [p for n in names for p in run.pods(n)])[2]


def precheck(run: RunState, names: Sequence[str]) -> Refusal | None:
    """A necessary condition, checked before paying for a simulation: the pods of `names` must fit in the free room
    of the other nodes plus one new node cheaper than `names`. Returns why not, or None to simulate."""
    types = run.types
    keys, talloc, tprice = types.keys, types.alloc, types.prices
    pods = [p for n in names for p in run.pods(n)]
    if not pods:
        return None
    cost = run.cost(names)
    _, free = run.sim.free_matrix(keys)
    row = run.sim.row_index(keys)
    drop = [row[n] for n in names if n in row]
    f = np.delete(free, drop, axis=0) if drop else free
    pm = np.array([p.requests.vector(keys) for p in pods], dtype=np.int64)
    fits = (
        np.any(np.all(pm[:, None, :] <= f[None, :, :], axis=2), axis=1)
        if len(f)
        else np.zeros(len(pods), dtype=bool)
    )
    cheaper = tprice < cost - EPS
    biggest = talloc[cheaper].max(axis=0) if bool(cheaper.any()) else np.zeros(len(keys), dtype=np.int64)
    roomy = not bool((pm.sum(axis=0) > np.clip(f, 0, None).sum(axis=0) + biggest).any())
    stuck = pm[~fits]
    if len(stuck):
        need = stuck.sum(axis=0)
        why = types.one_cheaper_node(np.asarray((talloc >= need).all(axis=1), dtype=bool), cost)
        if why is not None:
            return why
    if not roomy:
        return no_room()
    return None


def precheck_many(run: RunState, cands: Sequence[str]) -> dict[str, Refusal]:
    """precheck for many single nodes at once (one numpy pass instead of one per node)."""
    types = run.types
    keys, talloc, tprice = types.keys, types.alloc, types.prices
    names, free = run.sim.free_matrix(keys)
    row = {n: i for i, n in enumerate(names)}
    pod_rows: list[tuple[int, ...]] = []
    owner: list[int] = []
    cidx: list[int] = []
    for ci, n in enumerate(cands):
        for p in run.pods(n):
            pod_rows.append(p.requests.vector(keys))
            owner.append(row.get(n, -1))
            cidx.append(ci)
    if not pod_rows or not len(names):
        return {}
    pm = np.array(pod_rows, dtype=np.int64)
    uniq, inv = np.unique(pm, axis=0, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    fit_u = np.all(uniq[:, None, :] <= free[None, :, :], axis=2)  # distinct pod shapes x nodes
    count = fit_u.sum(axis=1)[inv]
    own_row = np.asarray(owner, dtype=np.int64)
    own_fit = np.where(own_row >= 0, fit_u[inv, np.clip(own_row, 0, None)], False)
    elsewhere = (count - own_fit.astype(np.int64)) > 0
    ci_arr = np.asarray(cidx, dtype=np.int64)
    nc = len(cands)
    stuck = np.zeros((nc, len(keys)), dtype=np.int64)
    np.add.at(stuck, ci_arr[~elsewhere], pm[~elsewhere])
    total_pods = np.zeros((nc, len(keys)), dtype=np.int64)
    np.add.at(total_pods, ci_arr, pm)
    freec = np.clip(free, 0, None)
    own_free = np.array([freec[row[n]] if n in row else np.zeros(len(keys), dtype=np.int64) for n in cands])
    costs = np.array([run.price[n] for n in cands], dtype=np.float64)
    roomy = np.all(total_pods <= freec.sum(axis=0) - own_free + types.biggest_cheaper(costs), axis=1)
    out: dict[str, Refusal] = {}
    has_stuck = np.any(stuck > 0, axis=1)
    for ci in np.flatnonzero(~roomy).tolist():
        out[cands[ci]] = no_room()
    check = np.flatnonzero(has_stuck)  # the more telling reason, when there is one, replaces the above
    if len(check):
        ok = np.all(talloc[None, :, :] >= stuck[check][:, None, :], axis=2)  # candidates x types
        priced = np.where(ok, tprice[None, :], np.inf)
        # no type at all (no pool can launch anything): no column to take the minimum over
        best = np.argmin(priced, axis=1) if priced.shape[1] else np.zeros(len(check), dtype=np.int64)
        for j, ci in enumerate(check.tolist()):
            n = cands[ci]
            if not priced.shape[1]:
                out[n] = no_launchable_type()
            elif not bool(ok[j].any()):
                out[n] = needs_several_nodes()
            elif tprice[best[j]] + EPS >= costs[ci]:
                out[n] = no_cheaper_replacement(types.cheapest_option(int(best[j])), float(costs[ci]))
    return out


def longest_plausible_prefix(run: RunState, cands: Sequence[str]) -> int:
    """The longest prefix whose pods could fit at all: their total must not exceed the free room left on the other
    nodes plus the largest type cheaper than the prefix (a necessary condition, so nothing valid is lost)."""
    keys = run.types.keys
    names, free = run.sim.free_matrix(keys)
    row = {n: i for i, n in enumerate(names)}
    freec = np.clip(free, 0, None)
    total = freec.sum(axis=0)
    # what the nodes' pods request, with the pending pods bound for them (which must move too)
    pods = np.array([demand(run, n) for n in cands], dtype=np.int64).reshape(len(cands), len(keys))
    own = np.array([freec[row[n]] if n in row else np.zeros(len(keys), dtype=np.int64) for n in cands])
    costs = np.cumsum(np.array([run.price[n] for n in cands], dtype=np.float64))
    ok = np.all(np.cumsum(pods, axis=0) <= total - np.cumsum(own, axis=0) + run.types.biggest_cheaper(costs), axis=1)
    good = np.flatnonzero(ok)
    return int(good[-1]) + 1 if len(good) else 0
