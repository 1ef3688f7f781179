"""Exact packing of small pod sets: the bulk packer's NodeClaims for a handful of pods re-solved as an integer
program (HiGHS, bounded in time) and replaced when a cheaper packing exists.

The bulk packer (packing.scheduling.bulk) is a heuristic: on a few pods it may launch one large node where
three small ones cost less. After it ran, each group of its claims that share a NodePool and requirements
(the pods of such a group are interchangeable there: same pool, taints tolerated, requirements met) is solved
exactly when it holds at most MAX_PODS pods, if its pool has no limits. The launchable types are those bulk
packing had (allocatable net of the pool's DaemonSet overhead, the cheapest offering for the requirements),
cut to those an optimum may need. First a cheap lower bound may prove the heuristic's plan optimal; else up to
MAX_ENUMERATED pods every split into nodes is tried (a dynamic programme over subsets), and beyond that an
integer program is solved with HiGHS (bins of at most one type each, pods of identical requests counted
together, every resource within the bin's type, price minimised below the heuristic's), within a node limit
and GROUP_SECONDS, for at most MAX_INTEGER_PROGRAMS groups per solve (a count, not a time budget, so which
groups are tried never depends on the clock); a HiGHS run stopped by its time limit is discarded. Pools whose
requirements carry minValues keep the heuristic plan (each exact claim has one instance type). The packing found is checked again in integers and only a strictly cheaper one replaces
the heuristic's claims, so the plan never costs more. Pods with topology involvement (spread, pod (anti-)affinity, host
ports) and pools with limits keep the heuristic plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from packing.instancetype import Offering
from packing.lp import solve_integer
from packing.pods import Pod
from packing.requirements import Requirements
from packing.resources import CPU, MEMORY, PODS
from packing.scheduling.nodeclaim import NodeClaim
from packing.scheduling.templates import PoolTemplate, TypeOption
from packing.scheduling.vectors import Vec, undominated

if TYPE_CHECKING:
    from packing.scheduling.solve import Solve

__all__ = ["GROUP_SECONDS", "MAX_ENUMERATED", "MAX_INTEGER_PROGRAMS", "MAX_PODS", "repack_small_groups"]

MAX_PODS = 30  # pods of one group solved exactly (each may need its own node: as many bins)
MAX_ENUMERATED = 10  # up to this many pods, every split into nodes is tried (3^n steps) instead of HiGHS
GROUP_SECONDS = 0.25  # HiGHS time limit per group
# Groups per solve given to HiGHS (those of up to MAX_ENUMERATED pods are enumerated, without a cap). Off: on the
# built-in catalog HiGHS seldom finished a group within GROUP_SECONDS, and consolidation's many small solves paid
# for it (docs/engine.md); _solve_group still takes the integer path when called on a larger group.
MAX_INTEGER_PROGRAMS = 0
_EPS = 1e-9
_BASIC = frozenset({CPU, MEMORY, PODS})


def repack_small_groups(sv: Solve, first: int, seq_before: Mapping[str, int]) -> int:
    """Re-solve exactly the small groups among sv.claims[first:] (the bulk packer's claims) and replace
    those a cheaper packing beats. seq_before: the claim counters before bulk packing, to name the claims
    again in order. Returns how many groups were replaced."""
    bulk = sv.claims.items[first:]
    if not bulk:
        return 0
    groups: dict[tuple[str, Requirements, tuple[str, ...]], list[NodeClaim]] = {}
    for c in bulk:
        groups.setdefault(_group_key(c), []).append(c)
    vec_of = {id(ctx.pod): ctx.vec for ctx in sv.ctxs}
    # Which groups are tried must not depend on the clock (the same input gives the same plan): the number of
    # groups per solve is capped, not their time; only a HiGHS run cut by its own time limit is dropped.
    integer_programs = 0
    replaced: dict[tuple[str, Requirements, tuple[str, ...]], list[NodeClaim]] = {}
    for key, claims in groups.items():
        tpl = claims[0].tpl
        pods = [p for c in claims for p in c.pods]
        if tpl.pool.limits or len(pods) > MAX_PODS or len(pods) < 2 or key[1].min_values():
            continue  # minValues: the exact packer keeps one type per claim, which no minimum survives
        launch = tpl.launch_cache.get(key[1])
        if launch is None:
            continue
        if len(pods) > MAX_ENUMERATED:
            if integer_programs >= MAX_INTEGER_PROGRAMS:
                continue
            integer_programs += 1
        heuristic = sum(float(c.offering.price or 0.0) for c in claims if c.offering is not None)
        better = _solve_group(
            tpl, key[1], pods, [vec_of[id(p)] for p in pods], launch, heuristic, GROUP_SECONDS
        )
        if better is not None:
            replaced[key] = better
    if not replaced:
        return 0
    items: list[NodeClaim] = list(sv.claims.items[:first])
    done: set[tuple[str, Requirements, tuple[str, ...]]] = set()
    new_claims: set[int] = set()
    for c in bulk:
        key = _group_key(c)
        if key not in replaced:
            items.append(c)
        elif key not in done:
            done.add(key)
            for old in groups[key]:
                assert old.chosen is not None
                sv.limits.reserve(old.tpl, old.chosen.it.capacity, -1)
            items.extend(replaced[key])
            new_claims.update(id(n) for n in replaced[key])
    for pool in {c.tpl.name for c in bulk}:
        sv.claim_seq[pool] = seq_before.get(pool, 0)
    for c in items[first:]:
        c.name = sv.new_claim_name(c.tpl.name)
        assert c.chosen is not None
        if id(c) in new_claims:
            sv.limits.reserve(c.tpl, c.chosen.it.capacity)
    sv.claims.items = items
    sv.claims.rebuild()
    return len(replaced)


def _group_key(c: NodeClaim) -> tuple[str, Requirements, tuple[str, ...]]:
    """The bulk packer's group of a claim: pool, requirements and the extended resources its pods ask for
    (bulk packing keeps pods of different extended resources apart, e.g. CPU pods off GPU nodes)."""
    ext = sorted({k for p in c.pods for k in p.requests if k not in _BASIC})
    return (c.tpl.name, c.base_reqs, tuple(ext))


def _solve_group(
    tpl: PoolTemplate,
    reqs: Requirements,
    pods: Sequence[Pod],
    vecs: Sequence[Vec],
    launch: tuple[list[tuple[TypeOption, Offering]], npt.NDArray[np.int64]],
    heuristic: float,
    time_limit: float,
) -> list[NodeClaim] | None:
    """NodeClaims for `pods` costing less than `heuristic`, or None if there is no such packing (or none was
    found within the limits)."""
    opts, allocs_all = launch
    podm = np.asarray(vecs, dtype=np.int64).reshape(len(pods), allocs_all.shape[1])
    keep = _useful_types(allocs_all, [float(off.price or 0.0) for _, off in opts], podm, heuristic)
    if not keep.size:
        return None
    allocs = allocs_all[keep].astype(np.int64)
    prices = np.array([float(opts[int(j)][1].price or 0.0) for j in keep], dtype=np.float64)
    # no plan cheaper than the heuristic's has more nodes than that many of the cheapest
    n_bins = len(pods)
    if prices.min() > 0:
        n_bins = min(n_bins, int((heuristic - _EPS) / prices.min()))
    if n_bins < 1:
        return None
    if heuristic <= _fractional_bound(allocs, prices, podm) + _EPS:
        return None  # the heuristic's plan is optimal: it meets a lower bound
    if len(pods) <= MAX_ENUMERATED:
        best = _best_partition(podm, allocs, prices)
        if best is None:
            return None
        return _claims(tpl, reqs, pods, podm, opts, keep, allocs, prices, best, heuristic)
    classes, members = _classes(podm)
    x = _build_and_solve(
        classes, np.array([len(m) for m in members]), allocs, prices, n_bins, heuristic - _EPS, time_limit
    )
    if x is None:
        return None
    bins_type, counts = x
    # checked again in integers (_claims): the program's tolerances must not overfill a node
    parts: list[list[int]] = []
    taken = [0] * len(members)
    for b, t in enumerate(bins_type):
        if t < 0:
            continue
        chosen: list[int] = []
        for c in range(len(members)):
            k = int(counts[c, b])
            chosen.extend(members[c][taken[c] : taken[c] + k])
            taken[c] += k
        if chosen:
            parts.append(chosen)
    if taken != [len(m) for m in members]:
        return None
    return _claims(tpl, reqs, pods, podm, opts, keep, allocs, prices, parts, heuristic)


def _claims(
    tpl: PoolTemplate,
    reqs: Requirements,
    pods: Sequence[Pod],
    podm: npt.NDArray[np.int64],
    opts: list[tuple[TypeOption, Offering]],
    keep: npt.NDArray[np.int64],
    allocs: npt.NDArray[np.int64],
    prices: npt.NDArray[np.float64],
    parts: list[list[int]],
    heuristic: float,
) -> list[NodeClaim] | None:
    """One NodeClaim per part (pod indices), each of the cheapest type that holds it, checked in integers;
    None unless every pod is in one part and the whole costs less than `heuristic`."""
    if sorted(i for part in parts for i in part) != list(range(len(pods))):
        return None
    plan: list[tuple[int, list[int]]] = []
    for chosen in parts:
        total = podm[chosen].sum(axis=0)
        fitting = np.flatnonzero((allocs >= total).all(axis=1))
        if not fitting.size:
            return None
        plan.append((int(fitting[np.argmin(prices[fitting])]), chosen))
    cost = float(sum(prices[t] for t, _ in plan))
    if cost >= heuristic - _EPS:
        return None
    out: list[NodeClaim] = []
    for t, chosen in sorted(plan, key=lambda tc: min(tc[1])):
        o, off = opts[int(keep[t])]
        claim = NodeClaim("", tpl, reqs, np.array([o.index], dtype=np.int64), cap_max=o.alloc)
        # allocatable is net of the DaemonSets that land on the type: `used` is the pods' requests alone
        claim.used = tuple(int(v) for v in podm[chosen].sum(axis=0).tolist())
        claim.pods = [pods[i] for i in sorted(chosen)]
        claim.fix(o, off)
        out.append(claim)
    return out


def _fractional_bound(
    allocs: npt.NDArray[np.int64], prices: npt.NDArray[np.float64], podm: npt.NDArray[np.int64]
) -> float:
    """A lower bound on any packing's cost: per resource, the total demand at the lowest price per unit of it
    (the largest of these), and the cheapest type that holds the largest pod."""
    total = podm.sum(axis=0).astype(np.float64)
    best = 0.0
    for k in np.flatnonzero(total > 0).tolist():
        has = allocs[:, k] > 0
        if has.any():
            best = max(best, float(total[k] * np.min(prices[has] / allocs[has, k])))
    each: npt.NDArray[np.bool_] = np.asarray((allocs[:, None, :] >= podm[None, :, :]).all(axis=2))
    for i in range(podm.shape[0]):
        fit = each[:, i]
        if fit.any():
            best = max(best, float(prices[fit].min()))
    return best


def _best_partition(
    podm: npt.NDArray[np.int64], allocs: npt.NDArray[np.int64], prices: npt.NDArray[np.float64]
) -> list[list[int]] | None:
    """The cheapest split of a few pods into nodes, by dynamic programming over all subsets (3^n steps): each
    subset costs the cheapest type that holds it, and the best packing of a set is the best first node (a
    subset holding its lowest pod) plus the best packing of the rest."""
    n = podm.shape[0]
    full = (1 << n) - 1
    totals = np.zeros((1 << n, podm.shape[1]), dtype=np.int64)
    for i in range(n):
        totals[1 << i : 1 << (i + 1)] = totals[: 1 << i] + podm[i]
    inf = float("inf")
    fit = (allocs[None, :, :] >= totals[:, None, :]).all(axis=2)
    node_cost = np.where(fit, prices[None, :], inf).min(axis=1).tolist()
    best = [0.0] + [inf] * full
    pick = [0] * (full + 1)
    for mask in range(1, full + 1):
        low = mask & -mask
        rest = mask ^ low
        sub = rest
        b, p = inf, 0
        while True:
            s = sub | low
            c = node_cost[s] + best[mask ^ s]
            if c < b - _EPS:
                b, p = c, s
            if not sub:
                break
            sub = (sub - 1) & rest
        best[mask], pick[mask] = b, p
    if best[full] == inf:
        return None
    parts: list[list[int]] = []
    mask = full
    while mask:
        s = pick[mask]
        parts.append([i for i in range(n) if s >> i & 1])
        mask ^= s
    return parts


def _useful_types(
    allocs: npt.NDArray[np.int64], prices: Sequence[float], podm: npt.NDArray[np.int64], heuristic: float
) -> npt.NDArray[np.int64]:
    """The types an optimal packing may need: cheaper than the heuristic's whole plan, holding at least one
    pod, and not dominated once their allocatable is capped at the pods' total demand (no node holds more
    than all pods, so two types that both hold everything differ only in price)."""
    price = np.asarray(prices, dtype=np.float64)
    total = podm.sum(axis=0)
    holds: npt.NDArray[np.bool_] = np.asarray((allocs[:, None, :] >= podm[None, :, :]).all(axis=2))
    ok = (price < heuristic - _EPS) & holds.any(axis=1)
    idx = np.flatnonzero(ok)
    if not idx.size:
        return idx.astype(np.int64)
    capped = np.minimum(allocs[idx], total[None, :])
    keep = undominated(capped, price[idx].tolist())
    return idx[np.asarray(sorted(keep), dtype=np.int64)].astype(np.int64)


def _classes(podm: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], list[list[int]]]:
    """Pods of identical requests counted together: the distinct rows and, per row, the pods that have it."""
    rows: dict[tuple[int, ...], list[int]] = {}
    for i, r in enumerate(podm.tolist()):
        rows.setdefault(tuple(r), []).append(i)
    keys = list(rows)
    return np.array(keys, dtype=np.int64).reshape(len(keys), podm.shape[1]), [rows[k] for k in keys]


def _build_and_solve(
    classes: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    allocs: npt.NDArray[np.int64],
    prices: npt.NDArray[np.float64],
    n_bins: int,
    cutoff: float,
    time_limit: float,
) -> tuple[list[int], npt.NDArray[np.int64]] | None:
    """The bin-packing program: z[b, t] (bin b is of type t), x[c, b] (pods of class c in bin b).

    Rows: every pod placed; at most one type per bin; per bin and resource, the pods' requests within the
    type's allocatable (each resource scaled to the largest allocatable, for the solver's tolerances); bins
    used in order of falling price (symmetry breaking). Returns each bin's type (-1: unused) and the counts."""
    n_cls, n_keys = int(classes.shape[0]), int(classes.shape[1])
    n_t = int(allocs.shape[0])
    scale = np.maximum(allocs.max(axis=0), 1).astype(np.float64)
    keys = [k for k in range(n_keys) if classes[:, k].any()]
    n_z = n_bins * n_t
    n_cols = n_z + n_cls * n_bins
    rows_i: list[int] = []
    cols_i: list[int] = []
    vals: list[float] = []
    lower: list[float] = []
    upper: list[float] = []

    def z(b: int, t: int) -> int:
        return b * n_t + t

    def xcol(c: int, b: int) -> int:
        return n_z + c * n_bins + b

    def row(entries: Sequence[tuple[int, float]], lo: float, hi: float) -> None:
        r = len(lower)
        for col, v in entries:
            rows_i.append(r)
            cols_i.append(col)
            vals.append(v)
        lower.append(lo)
        upper.append(hi)

    inf = float("inf")
    for c in range(n_cls):
        row([(xcol(c, b), 1.0) for b in range(n_bins)], float(sizes[c]), float(sizes[c]))
    for b in range(n_bins):
        row([(z(b, t), 1.0) for t in range(n_t)], -inf, 1.0)
        for k in keys:
            entries = [(xcol(c, b), classes[c, k] / scale[k]) for c in range(n_cls) if classes[c, k]]
            entries += [(z(b, t), -allocs[t, k] / scale[k]) for t in range(n_t) if allocs[t, k]]
            row(entries, -inf, 0.0)
        if b + 1 < n_bins:
            row(
                [(z(b, t), float(prices[t])) for t in range(n_t)]
                + [(z(b + 1, t), -float(prices[t])) for t in range(n_t)],
                0.0,
                inf,
            )
            row([(z(b, t), 1.0) for t in range(n_t)] + [(z(b + 1, t), -1.0) for t in range(n_t)], 0.0, inf)
    order = np.argsort(np.asarray(cols_i, dtype=np.int64), kind="stable")
    col_sorted = np.asarray(cols_i, dtype=np.int64)[order]
    starts = np.searchsorted(col_sorted, np.arange(n_cols)).astype(np.int32)
    cost = np.concatenate([np.tile(prices, n_bins), np.zeros(n_cls * n_bins)])
    col_upper = np.concatenate([np.ones(n_z), np.repeat(sizes.astype(np.float64), n_bins)])
    sol = solve_integer(
        np.asarray(lower),
        np.asarray(upper),
        cost,
        col_upper,
        starts,
        np.asarray(rows_i, dtype=np.int32)[order],
        np.asarray(vals, dtype=np.float64)[order],
        time_limit=time_limit,
        cutoff=cutoff,
    )
    if sol is None:
        return None
    zv = sol.col_value[:n_z].reshape(n_bins, n_t)
    types = [int(np.argmax(zv[b])) if zv[b].max() > 0.5 else -1 for b in range(n_bins)]
    counts = np.rint(sol.col_value[n_z:].reshape(n_cls, n_bins)).astype(np.int64)
    return types, counts
