"""Cost-minimising bin packing for interchangeable pods (no topology, same NodePool and requirements).

Karpenter packs greedily and then launches the cheapest type that fits what it packed, which strands capacity
and mixes cpu- and memory-heavy pods badly. Here the node type is chosen first, from the aggregate demand
(which type covers cpu, memory and pod slots of the whole set at the lowest $/h), pods are packed first-fit
decreasing into that type with gap filling, and every node is then shrunk to the cheapest type that holds
what it got (so the last node is not stranded). A few leading types are tried and the cheapest plan kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Bin:
    option: int  # index into the options given to pack()
    pods: tuple[int, ...]  # indices into the pod matrix


def _fits_all(alloc: IntArray, pods: IntArray) -> bool:
    return bool((pods <= alloc).all())


def _fill(pods: IntArray, order: IntArray, alloc: IntArray, window: int = 192) -> list[list[int]]:
    """First-fit decreasing, one node at a time: take the longest prefix that fits, then fill the gaps.

    Only the head (largest remaining) and the tail (smallest remaining) of the sorted list are searched for gap
    fillers: that is where first-fit finds them, and it keeps each node O(window) instead of O(pods).
    """
    remaining = order.copy()
    rows_all = pods[remaining]
    bins: list[list[int]] = []
    while remaining.size:
        cap = alloc.copy()
        head = rows_all[:window]
        csum = np.cumsum(head, axis=0)
        ok = (csum <= cap).all(axis=1)
        k = int(np.argmin(ok)) if not ok.all() else ok.size
        k = max(k, 1)  # callers guarantee every pod fits alone
        cap = cap - csum[k - 1]
        take = np.zeros(remaining.size, dtype=bool)
        take[:k] = True
        m = remaining.size
        if m > k:
            lo = k
            hi_start = max(k, m - window)
            idx = np.arange(lo, min(m, lo + window))
            if hi_start > lo + window:
                idx = np.concatenate([idx, np.arange(hi_start, m)])
            cand = rows_all[idx]
            while idx.size:
                fit = (cand <= cap).all(axis=1)
                if not fit.any():
                    break
                j = int(np.argmax(fit))
                cap = cap - cand[j]
                take[idx[j]] = True
                fit[j] = False
                keep = np.ones(idx.size, dtype=bool)
                keep[j] = False
                idx = idx[keep]
                cand = cand[keep]
        bins.append(remaining[take].tolist())
        remaining = remaining[~take]
        rows_all = rows_all[~take]
    return bins


def cheapest_fitting(total: IntArray, allocs: IntArray, prices: npt.NDArray[np.float64]) -> int:
    """Index of the cheapest option whose allocatable holds `total`, or -1."""
    ok = (allocs >= total).all(axis=1)
    if not ok.any():
        return -1
    masked = np.where(ok, prices, np.inf)
    return int(np.argmin(masked))


def _pack_single(pods: IntArray, allocs: IntArray, prices: Sequence[float], *, tries: int = 3) -> list[Bin]:
    """Pack every pod (rows of `pods`) into nodes drawn from the options (rows of `allocs`) at minimum cost.

    Every pod must fit at least one option on its own. Deterministic: ties break on option index.
    """
    n = pods.shape[0]
    if n == 0:
        return []
    price = np.asarray(prices, dtype=np.float64)
    fits_pod = (pods[:, None, :] <= allocs[None, :, :]).all(axis=2) if n * allocs.shape[0] <= 4_000_000 else None
    result: list[Bin] = []
    todo = np.arange(n)
    while todo.size:
        sub = pods[todo]
        if fits_pod is not None:
            counts = np.asarray(fits_pod)[todo].sum(axis=0)
        else:
            counts = np.array([int((sub <= a).all(axis=1).sum()) for a in allocs])
        best_count = int(counts.max())
        if best_count == 0:
            raise ValueError("a pod fits no option")
        candidates = np.flatnonzero(counts == best_count)
        demand = sub.sum(axis=0).astype(np.float64)
        cand_alloc = allocs[candidates].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(demand[None, :] > 0, demand[None, :] / cand_alloc, 0.0)
        nodes_needed = np.nan_to_num(ratio, nan=np.inf, posinf=np.inf).max(axis=1)
        est = price[candidates] * np.maximum(nodes_needed, 1e-12)
        # several leading types: the aggregate estimate ignores fragmentation, so try a few for real
        ranked = candidates[np.lexsort((candidates, est))][:tries]
        best_bins: list[Bin] | None = None
        best_cost = np.inf
        chosen_members: IntArray | None = None
        for t in ranked.tolist():
            alloc = allocs[t]
            members = todo[(sub <= alloc).all(axis=1)]
            rows = pods[members]
            scale = np.where(alloc > 0, alloc, 1).astype(np.float64)
            size = (rows / scale).max(axis=1) + 1e-3 * (rows / scale).sum(axis=1)
            order = np.lexsort((members, -size))
            local = _fill(rows, order.astype(np.int64), alloc)
            bins: list[Bin] = []
            cost = 0.0
            for b in local:
                total = rows[b].sum(axis=0)
                o = cheapest_fitting(total, allocs, price)
                if o < 0 or price[o] > price[t]:
                    o = t
                cost += float(price[o])
                bins.append(Bin(o, tuple(int(members[i]) for i in b)))
            per_pod = cost / max(members.size, 1)
            best_per_pod = best_cost / max(chosen_members.size, 1) if chosen_members is not None else np.inf
            if best_bins is None or members.size > chosen_members.size or (  # type: ignore[union-attr]
                members.size == chosen_members.size and per_pod < best_per_pod  # type: ignore[union-attr]
            ):
                best_bins, best_cost, chosen_members = bins, cost, members
        assert best_bins is not None and chosen_members is not None
        result.extend(best_bins)
        todo = np.setdiff1d(todo, chosen_members, assume_unique=True)
    return result


def _cost(bins: list[Bin], price: npt.NDArray[np.float64]) -> float:
    return float(sum(price[b.option] for b in bins))


def _pack_by_share(pods: IntArray, allocs: IntArray, price: npt.NDArray[np.float64]) -> list[Bin]:
    """Each pod goes to the type where its share of a node ($/h x its largest fraction of the node) is lowest.

    cpu-heavy pods thus gather on compute types, memory-heavy ones on memory types, small ones on the types
    with the cheapest slots; then each type's pods are packed first-fit decreasing and the partly filled nodes
    are re-packed together so that every type does not leave its own stranded last node.
    """
    n = pods.shape[0]
    fa = np.where(allocs > 0, allocs, 1).astype(np.float64)
    best = np.empty(n, dtype=np.int64)
    for s0 in range(0, n, 512):
        chunk = pods[s0 : s0 + 512].astype(np.float64)
        frac = chunk[:, None, :] / fa[None, :, :]
        frac = np.where((allocs[None, :, :] == 0) & (chunk[:, None, :] > 0), np.inf, frac)
        share = frac.max(axis=2) * price[None, :]
        share = np.where(frac.max(axis=2) > 1.0, np.inf, share)
        best[s0 : s0 + 512] = np.argmin(share, axis=1)
    bins: list[Bin] = []
    for t in np.unique(best).tolist():
        members = np.flatnonzero(best == t)
        alloc = allocs[t]
        rows = pods[members]
        scale = np.where(alloc > 0, alloc, 1).astype(np.float64)
        size = (rows / scale).max(axis=1) + 1e-3 * (rows / scale).sum(axis=1)
        order = np.lexsort((members, -size)).astype(np.int64)
        for b in _fill(rows, order, alloc):
            total = rows[b].sum(axis=0)
            o = cheapest_fitting(total, allocs, price)
            bins.append(Bin(o if o >= 0 else t, tuple(int(members[i]) for i in b)))
    # re-pack the poorly used nodes together
    util = []
    for bn in bins:
        total = pods[list(bn.pods)].sum(axis=0).astype(np.float64)
        util.append(float((total / np.where(allocs[bn.option] > 0, allocs[bn.option], 1)).max()))
    weak = [i for i, u in enumerate(util) if u < 0.85]
    if len(weak) > 1:
        weak_pods = np.array(sorted(p for i in weak for p in bins[i].pods), dtype=np.int64)
        repacked = _pack_single(pods[weak_pods], allocs, price.tolist())
        old = sum(price[bins[i].option] for i in weak)
        if _cost(repacked, price) < old:
            keep = [b for i, b in enumerate(bins) if i not in set(weak)]
            bins = keep + [Bin(b.option, tuple(int(weak_pods[i]) for i in b.pods)) for b in repacked]
    return bins


def pack(pods: IntArray, allocs: IntArray, prices: Sequence[float], *, tries: int = 3) -> list[Bin]:
    """Pack every pod (rows of `pods`) into nodes drawn from the options (rows of `allocs`) at minimum cost.

    Two strategies are run, one node type for the whole set and one type per pod by its share of a node, and
    the cheaper plan wins. Every pod must fit at least one option on its own. Deterministic.
    """
    if pods.shape[0] == 0:
        return []
    price = np.asarray(prices, dtype=np.float64)
    single = _pack_single(pods, allocs, prices, tries=tries)
    by_share = _pack_by_share(pods, allocs, price)
    return by_share if _cost(by_share, price) < _cost(single, price) else single
