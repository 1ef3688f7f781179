"""Cost-minimising bin packing for interchangeable pods (no topology, same NodePool and requirements).

Karpenter packs greedily and then launches the cheapest type that fits what it packed, which strands capacity
and mixes cpu- and memory-heavy pods badly. Here the mix of node types is chosen first: an LP over cells of
similar pods and the node types picks how many nodes of each type cover the demand most cheaply, keeping each
pod's resources together, and deals the pods of each cell out to types in its proportions (typemix). Each type's pods
are then packed so that every node fills cpu and memory together (cpu-heavy pods paired with memory-heavy
ones), every node is shrunk to the cheapest type that holds what it got (so the last node is not stranded),
poorly used nodes are re-packed together and the emptiest nodes are emptied into the others' spare room.
On smaller sets simpler plans (one type per pod by its share of a node; one type for the whole set) are
computed too and the cheapest plan wins.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from packing.scheduling.typemix import LP_CELLS, LP_CELLS_SMALL, assign_by_lp

IntArray = npt.NDArray[np.int64]

# how many of the pods that still fit a node _fill_balanced scores for each pick
BALANCED_WINDOW = 256
# _fill packs this many pods or fewer in plain Python (_fill_small), where numpy's per-call cost dominates
SMALL_FILL = 128
# _fill_balanced's work is about (nodes x pods) of one type; beyond this the pods are packed in slices
# (_fill_balanced_chunks)
BALANCED_MAX_WORK = 1e7
# below this many pods pack() also computes the share plan, the LP-guided plan packed first-fit and the
# single-type plan, and keeps the cheapest: on larger sets they almost never win and cost several times
# pack()'s time, on small ones the single-type plan often wins (see .notes/diaries-sched.md)
SMALL_SET = 200
# _fill_balanced's mu for the second balanced plan of sets from SMALL_SET pods (the first uses its default)
STRICT_MU = 5.0


@dataclass(frozen=True)
class Bin:
    option: int  # index into the options given to pack()
    pods: tuple[int, ...]  # indices into the pod matrix


def _fits_all(alloc: IntArray, pods: IntArray) -> bool:
    return bool((pods <= alloc).all())


def _fill(pods: IntArray, order: IntArray, alloc: IntArray, window: int = 192) -> list[list[int]]:
    """First-fit decreasing, one node at a time: take the longest prefix that fits, then fill the gaps.

    Only the head (largest remaining) and the tail (smallest remaining) of the sorted list are searched for gap
    fillers: that is where first-fit finds them, and it keeps each node O(window) instead of O(pods). Placed
    pods are only marked, never removed, so no node pays for copying the whole list.
    """
    m = order.size
    if m <= SMALL_FILL:
        return _fill_small(pods, order, alloc)
    rows_all = pods[order]
    alive = np.ones(m, dtype=bool)
    start, end = 0, m
    bins: list[list[int]] = []
    while True:
        while start < end and not alive[start]:
            start += 1
        while end > start and not alive[end - 1]:
            end -= 1
        if start >= end:
            break
        head = np.flatnonzero(alive[start : min(end, start + 4 * window)])[:window] + start
        rows = rows_all[head]
        csum = np.cumsum(rows, axis=0)
        ok = (csum <= alloc).all(axis=1)
        k = int(np.argmin(ok)) if not ok.all() else ok.size
        k = max(k, 1)  # callers guarantee every pod fits alone
        cap = alloc - csum[k - 1]
        taken = [int(i) for i in head[:k]]
        alive[head[:k]] = False
        lo_tail = max(start, end - 4 * window)
        tail = np.flatnonzero(alive[lo_tail:end])[-window:] + lo_tail
        # head and tail sorted: every tail index up to head's last is alive in [start, head[-1]], so already in
        # head[k:]; the union is then a concatenation (what np.unique would give, without its sort)
        idx = np.concatenate([head[k:], tail[tail > head[-1]]])
        idx = idx[alive[idx]]
        cand = rows_all[idx]
        while idx.size:
            fit = (cand <= cap).all(axis=1)
            if not fit.any():
                break
            j = int(np.argmax(fit))
            cap = cap - cand[j]
            taken.append(int(idx[j]))
            alive[idx[j]] = False
            keep = fit.copy()
            keep[j] = False
            idx = idx[keep]
            cand = cand[keep]
        bins.append([int(order[i]) for i in taken])
    return bins


def _fill_small(pods: IntArray, order: IntArray, alloc: IntArray) -> list[list[int]]:
    """_fill for few pods, in plain Python: each node takes, in order, every remaining pod that still fits (what
    _fill's prefix and gap search come to when the window covers every pod), without numpy's per-call cost."""
    rows = pods[order].tolist()
    ids = order.tolist()
    cap0 = alloc.tolist()
    le, sub = operator.le, operator.sub
    left = list(range(len(ids)))
    bins: list[list[int]] = []
    while left:
        cap = cap0
        taken: list[int] = []
        rest: list[int] = []
        for i in left:
            r = rows[i]
            if not taken or all(map(le, r, cap)):  # the first pod always opens the node
                cap = list(map(sub, cap, r))
                taken.append(ids[i])
            else:
                rest.append(i)
        bins.append(taken)
        left = rest
    return bins


def _fill_balanced(
    pods: IntArray, alloc: IntArray, mu: float = 2.0, window: int | None = None
) -> list[list[int]]:
    """Vector bin packing that keeps every node's cpu and memory in step with what is left to place.

    First-fit decreasing by the largest share fills one resource and strands the other when pods of one
    type lean different ways. Here each node opens with the largest pod left, then takes, among the pods that
    still fit, the one that carries its usage furthest along the direction of the remaining demand while
    straying least from it (projection minus `mu` x perpendicular distance, in shares of the node). cpu-heavy
    and memory-heavy pods thus pair up, and the last nodes are not left with pods that all lean one way.
    When many pods fit, an evenly spaced sample of `window` of them (by size) is scored, and the sample is
    drawn again once none of it fits any more. Fit is checked in exact integers; the score only orders the
    candidates. Deterministic.

    The loop is bounded by numpy's per-call overhead (a few hundred candidates per call), so a pick costs
    about ten calls: with d the demand direction, a candidate c on usage u scores
    |u_perp + c_perp| - (c.d)/mu (the projection of u is the same for every candidate and the score is
    divided by mu), and |u_perp + c_perp|^2 = |u_perp|^2 + 2 u_perp.c + |c_perp|^2 is one dot product of
    [u_perp, 1, |u_perp|^2] with per-candidate rows [2c, |c_perp|^2, 1]. Candidates that stop fitting get
    an infinite penalty instead of being compacted out of the arrays.
    """
    n = pods.shape[0]
    if n == 0:
        return []
    window = max(2, window or BALANCED_WINDOW)
    scale = np.where(alloc > 0, alloc, 1).astype(np.float64)
    q_all = pods / scale
    size = q_all.max(axis=1) + 1e-3 * q_all.sum(axis=1)
    order = np.lexsort((np.arange(n), -size))
    ip = pods[order]
    neg_size = -size[order]  # ascending: where the pods small enough for some room begin
    # resources along the first axis: the fit tests reduce over it, which numpy does far faster than over a
    # short last axis
    ip_t = np.ascontiguousarray(ip.T)
    # a resource no pod requests never decides a fit (room never goes negative) and adds exact zeros to
    # every score, so it is left out of both
    active = [r for r in range(ip_t.shape[0]) if bool(ip_t[r].any())] or [0]
    ia = np.ascontiguousarray(ip_t[active])
    ia_rows = list(ia)  # row views, indexed without numpy's tuple-index overhead
    alloc_a = alloc[active]
    inv_scale = (1.0 / scale[active]).tolist()
    q = np.ascontiguousarray(q_all[order][:, active])
    q2_t = np.ascontiguousarray(2.0 * q.T)
    sq = (q * q).sum(axis=1)
    alive = np.ones(n, dtype=bool)
    rem = q.sum(axis=0)
    steps = np.arange(window)
    order_l = order.tolist()
    bins: list[list[int]] = []
    ptr = 0
    k = q.shape[1]
    inf = np.inf
    neg_inv_mu = -1.0 / mu
    while ptr < n:
        if not alive[ptr]:
            ptr += 1
            continue
        norm = float(np.sqrt(rem @ rem))
        d = rem / norm if norm > 0 else np.full(k, 1.0 / np.sqrt(k))
        d_col = d[:, None]
        alive[ptr] = False
        members = [ptr]
        room = (alloc_a - ia[:, ptr]).tolist()
        rem -= q[ptr]
        # [u_perp, 1, |u_perp|^2]: the node's usage across d
        vec = np.empty(k + 2)
        vec[:k] = q[ptr] - float(q[ptr] @ d) * d
        vec[k] = 1.0
        vec[k + 1] = float(vec[:k] @ vec[:k])
        while True:
            # a pod that fits has every share, so its size, within the room's: the pods before the first
            # one that small (sizes descend) need no test. The float bound is loosened a little: the exact
            # integer test below decides
            shares = [r * s for r, s in zip(room, inv_scale, strict=True)]
            bound = max(shares) + 1e-3 * sum(shares)
            lo = max(ptr + 1, int(neg_size.searchsorted(-(bound * (1 + 1e-9) + 1e-12))))
            if lo >= n:
                break
            # one comparison per resource into a reused mask: cheaper than building the (k, n) table
            ok = alive[lo:].copy()
            for r in range(k):
                ok &= ia_rows[r][lo:] <= room[r]
            cand = np.flatnonzero(ok)
            if not cand.size:
                break
            cand += lo
            whole = cand.size <= window
            if not whole:
                cand = cand[(steps * (cand.size - 1)) // (window - 1)]
            m = cand.size
            cip = ia[:, cand]
            rows = np.empty((k + 2, m))
            rows[:k] = q2_t[:, cand]
            along = d @ rows[:k]
            along *= 0.5
            rows[k] = sq[cand]
            rows[k] -= along * along
            rows[k + 1] = 1.0
            perp_t = rows[:k] * 0.5
            perp_t -= d_col * along
            # penalty: minus the projection (over mu), infinite once the candidate is taken or known not
            # to fit
            pen = along
            pen *= neg_inv_mu
            while True:
                t = vec @ rows
                score = np.abs(t)  # |u_perp + c_perp|^2 >= 0 but for rounding
                np.sqrt(score, out=score)
                score += pen
                while True:
                    j = int(score.argmin())
                    if score[j] == inf:
                        break
                    # the best-scoring candidate usually fits: test it alone, and only when it does not,
                    # rule out in one pass every candidate that no longer fits
                    if all(map(operator.le, cip[:, j].tolist(), room)):
                        break
                    bad = cip[0] > room[0]
                    for r in range(1, k):
                        bad |= cip[r] > room[r]
                    np.copyto(pen, inf, where=bad)
                    np.copyto(score, inf, where=bad)
                if score[j] == inf:
                    break
                pick = int(cand[j])
                members.append(pick)
                alive[pick] = False
                rem -= q[pick]
                room = list(map(operator.sub, room, cip[:, j].tolist()))
                vec[:k] += perp_t[:, j]
                vec[k + 1] = t[j]
                pen[j] = inf
            if whole:
                break
        bins.append([order_l[i] for i in members])
    return bins


def bin_totals(pods: IntArray, groups: Sequence[Sequence[int]]) -> IntArray:
    """Summed requests of each group of pod rows (an empty group sums to zero), in one numpy pass."""
    if not groups:
        return np.zeros((0, pods.shape[1]), dtype=pods.dtype)
    lens = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
    if not bool((lens > 0).all()):
        return np.array([pods[list(g)].sum(axis=0) for g in groups], dtype=pods.dtype).reshape(
            len(groups), -1
        )
    flat = np.fromiter(itertools.chain.from_iterable(groups), dtype=np.int64, count=int(lens.sum()))
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    return np.add.reduceat(pods[flat], starts, axis=0)


def _cheapest_fitting_each(totals: IntArray, allocs: IntArray, prices: npt.NDArray[np.float64]) -> IntArray:
    """cheapest_fitting for every row of `totals` at once (-1 where no option holds it)."""
    out = np.full(totals.shape[0], -1, dtype=np.int64)
    step = max(1, 4_000_000 // max(allocs.size, 1))
    for s0 in range(0, totals.shape[0], step):
        ok: npt.NDArray[np.bool_] = np.all(allocs[None, :, :] >= totals[s0 : s0 + step, None, :], axis=2)
        best = np.argmin(np.where(ok, prices[None, :], np.inf), axis=1)
        out[s0 : s0 + step] = np.where(np.any(ok, axis=1), best, -1)
    return out


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
    fits_pod = (
        (pods[:, None, :] <= allocs[None, :, :]).all(axis=2) if n * allocs.shape[0] <= 4_000_000 else None
    )
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
            # each node shrinks to the cheapest option holding what it got (never dearer than t itself)
            shrunk = _cheapest_fitting_each(bin_totals(rows, local), allocs, price)
            shrunk = np.where((shrunk < 0) | (price[np.maximum(shrunk, 0)] > price[t]), t, shrunk)
            cost = float(sum(price[shrunk].tolist()))  # summed in order, as plans are compared on it
            ids = members.tolist()
            bins = [Bin(o, tuple(ids[i] for i in b)) for o, b in zip(shrunk.tolist(), local, strict=True)]
            per_pod = cost / max(members.size, 1)
            # prefer the type that takes the most pods, then the lowest cost per pod
            if chosen_members is None:
                better = True
            else:
                best_per_pod = best_cost / max(chosen_members.size, 1)
                better = members.size > chosen_members.size or (
                    members.size == chosen_members.size and per_pod < best_per_pod
                )
            if better:
                best_bins, best_cost, chosen_members = bins, cost, members
        assert best_bins is not None and chosen_members is not None
        result.extend(best_bins)
        todo = np.setdiff1d(todo, chosen_members, assume_unique=True)
    return result


def _cost(bins: list[Bin], price: npt.NDArray[np.float64]) -> float:
    return float(sum(price[b.option] for b in bins))


def _shares(
    pods: IntArray, allocs: IntArray, price: npt.NDArray[np.float64], weight: npt.NDArray[np.float64]
) -> IntArray:
    """For each pod, the option where its share of a node ($/h x its largest fraction of the node) is lowest."""
    n = pods.shape[0]
    fa = np.where(allocs > 0, allocs, 1).astype(np.float64)
    eff = price * weight
    best = np.empty(n, dtype=np.int64)
    for s0 in range(0, n, 512):
        chunk = pods[s0 : s0 + 512].astype(np.float64)
        frac = chunk[:, None, :] / fa[None, :, :]
        frac = np.where((allocs[None, :, :] == 0) & (chunk[:, None, :] > 0), np.inf, frac)
        biggest = frac.max(axis=2)
        share = np.where(biggest > 1.0, np.inf, biggest * eff[None, :])
        best[s0 : s0 + 512] = np.argmin(share, axis=1)
    return best


def _pack_by_share(
    pods: IntArray, allocs: IntArray, price: npt.NDArray[np.float64], rounds: int = 2
) -> list[Bin]:
    """Each pod goes to the type where its share of a node is cheapest; each type's pods are then packed.

    cpu-heavy pods thus gather on compute types, memory-heavy ones on memory types, small ones on the types
    with the cheapest slots; each type's pods are packed first-fit decreasing and the partly filled nodes are
    re-packed together so that every type does not leave its own stranded last node. A second round charges
    each type what packing it really cost per unit of share (big pods strand room on small types), and the
    cheaper of the two plans is kept.
    """
    weight = np.ones(len(price))
    best_bins: list[Bin] = []
    best_cost = np.inf
    for _ in range(rounds):
        assign = _shares(pods, allocs, price, weight)
        bins = _pack_assigned(pods, allocs, price, assign)
        cost = _cost(bins, price)
        if cost < best_cost:
            best_bins, best_cost = bins, cost
        # what each type's pods cost once packed, relative to the sum of their ideal shares
        fa = np.where(allocs > 0, allocs, 1).astype(np.float64)
        for t in np.unique(assign).tolist():
            members = np.flatnonzero(assign == t)
            ideal = float(((pods[members] / fa[t]).max(axis=1)).sum() * price[t])
            real = sum(price[b.option] for b in bins if assign[b.pods[0]] == t)
            if ideal > 0:
                weight[t] = max(1.0, real / ideal)
    return best_bins


def _pack_assigned(
    pods: IntArray,
    allocs: IntArray,
    price: npt.NDArray[np.float64],
    assign: IntArray,
    *,
    balanced: bool = False,
    mu: float = 2.0,
) -> list[Bin]:
    groups: list[tuple[int, list[int], list[list[int]]]] = []  # (type, pod rows, their nodes as local indices)
    for t in np.unique(assign).tolist():
        members = np.flatnonzero(assign == t)
        alloc = allocs[t]
        rows = pods[members]
        if not bool((rows <= alloc).all()):
            return []
        scale = np.where(alloc > 0, alloc, 1).astype(np.float64)
        # _fill_balanced scans the pods left for every node it opens; where that would be too slow (very many
        # pods and nodes), the windowed first-fit decreasing is used instead
        nodes_est = float((rows.sum(axis=0) / scale).max())
        work = nodes_est * rows.shape[0]
        if balanced and work <= BALANCED_MAX_WORK:
            local = _fill_balanced(rows, alloc, mu)
        elif balanced:
            local = _fill_balanced_chunks(rows, alloc, work, mu)
        else:
            size = (rows / scale).max(axis=1) + 1e-3 * (rows / scale).sum(axis=1)
            order = np.lexsort((members, -size)).astype(np.int64)
            local = _fill(rows, order, alloc)
        groups.append((t, members.tolist(), local))
    # every node shrinks to the cheapest type that holds what it got (all types' nodes in one pass)
    owners: list[int] = []
    contents: list[list[int]] = []
    for t, ids, local in groups:
        for b in local:
            owners.append(t)
            contents.append([ids[i] for i in b])
    smallest = _cheapest_fitting_each(bin_totals(pods, contents), allocs, price).tolist() if contents else []
    bins = [Bin(o if o >= 0 else t, tuple(c)) for t, c, o in zip(owners, contents, smallest, strict=True)]
    return _consolidate(pods, allocs, price, bins)


def _fill_balanced_chunks(rows: IntArray, alloc: IntArray, work: float, mu: float) -> list[list[int]]:
    """_fill_balanced on a set too large for it, as k interleaved slices of the pods by size (each slice has
    the whole set's mix of shapes, so it packs as well as the whole would): k slices cost 1/k of the work
    of one pass over all pods. Each slice's last, poorly filled nodes are re-packed together afterwards
    (_consolidate)."""
    k = max(2, min(rows.shape[0], int(np.ceil(np.sqrt(work / max(BALANCED_MAX_WORK, 1.0))))))
    scale = np.where(alloc > 0, alloc, 1).astype(np.float64)
    q = rows / scale
    size = q.max(axis=1) + 1e-3 * q.sum(axis=1)
    order = np.lexsort((np.arange(rows.shape[0]), -size))
    local: list[list[int]] = []
    for c in range(k):
        part = order[c::k]
        ids = part.tolist()
        local.extend([ids[i] for i in b] for b in _fill_balanced(rows[part], alloc, mu))
    return local


def _consolidate(
    pods: IntArray, allocs: IntArray, price: npt.NDArray[np.float64], bins: list[Bin]
) -> list[Bin]:
    """Re-pack the poorly used nodes together when that is cheaper (each type's last node is usually one)."""
    if not bins:
        return bins
    cap = allocs[[bn.option for bn in bins]]
    util = (bin_totals(pods, [bn.pods for bn in bins]).astype(np.float64) / np.where(cap > 0, cap, 1)).max(
        axis=1
    )
    weak = np.flatnonzero(util < 0.85).tolist()
    if len(weak) > 1:
        weak_set = set(weak)
        weak_pods = np.array(sorted(p for i in weak for p in bins[i].pods), dtype=np.int64)
        repacked = _pack_single(pods[weak_pods], allocs, price.tolist(), tries=2)
        old = sum(price[bins[i].option] for i in weak)
        if _cost(repacked, price) < old:
            keep = [b for i, b in enumerate(bins) if i not in weak_set]
            bins = keep + [Bin(b.option, tuple(int(weak_pods[i]) for i in b.pods)) for b in repacked]
    return bins


def _eliminate_bins(
    pods: IntArray, allocs: IntArray, price: npt.NDArray[np.float64], bins: list[Bin], *, share: float = 0.3
) -> list[Bin]:
    """Empty the least used nodes into the spare room of the others, and drop the nodes that end up empty.

    Packing leaves a little room on most nodes; together that room often holds every pod of the emptiest
    nodes. Only whole nodes are moved (a partial move saves nothing), dearest-per-use nodes first.
    """
    if len(bins) < 2:
        return bins
    contents = [list(b.pods) for b in bins]
    used = bin_totals(pods, contents).astype(np.int64)
    pod_sum = pods.sum(axis=1).tolist()
    cap = allocs[[b.option for b in bins]]
    # resources along the first axis: the fit test reduces over it, far faster than over a short last axis
    free_t = np.ascontiguousarray((cap - used).T)
    fa = np.where(cap > 0, cap, 1).astype(np.float64)
    util = (used / fa).max(axis=1)
    alive = np.ones(len(bins), dtype=bool)
    order = np.argsort(util / np.maximum(price[[b.option for b in bins]], 1e-12), kind="stable")
    for w in order[: max(1, int(len(bins) * share))].tolist():
        alive[w] = False
        moves: list[tuple[int, int]] = []
        ok = True
        for p in sorted(contents[w], key=lambda i: -pod_sum[i]):
            need = pods[p]
            fit = alive & np.logical_and.reduce(free_t >= need[:, None], axis=0)
            j = int(fit.argmax())  # the first node with room: first fit
            if not fit[j]:
                ok = False
                break
            free_t[:, j] -= need
            moves.append((p, j))
        if not ok:
            for p, j in moves:  # the node cannot be emptied: undo its partial moves
                free_t[:, j] += pods[p]
            alive[w] = True
            continue
        for p, j in moves:
            contents[j].append(p)
        contents[w] = []
    return [Bin(b.option, tuple(contents[i])) for i, b in enumerate(bins) if alive[i] and contents[i]]


def pack(pods: IntArray, allocs: IntArray, prices: Sequence[float], *, tries: int = 3) -> list[Bin]:
    """Pack every pod (rows of `pods`) into nodes drawn from the options (rows of `allocs`) at minimum cost.

    The LP-guided plan is always computed (when the LP is small enough); on sets under SMALL_SET pods the
    share-based plan, the single-type plan and the LP-guided one packed first-fit as well, and the cheapest
    plan wins. The share-based plan is also the fallback when the LP gives no plan. Every pod must fit at least one option
    on its own. Deterministic.
    """
    if pods.shape[0] == 0:
        return []
    price = np.asarray(prices, dtype=np.float64)
    n = pods.shape[0]
    plans: list[list[Bin]] = []
    assign: IntArray | None = None
    # LP-guided: the LP picks the mix of types, each type's pods are packed keeping cpu and memory in step
    if n >= 8:
        assign = assign_by_lp(pods, allocs, price, LP_CELLS if n > 1000 else LP_CELLS_SMALL)
        if assign is not None and (assign >= 0).all():
            for balanced in (True, False) if n < SMALL_SET else (True,):
                guided = _pack_assigned(pods, allocs, price, assign, balanced=balanced)
                if guided:
                    plans.append(guided)
    # on small sets the share and single-type plans are cheap enough to compare as well; on larger ones the
    # LP-guided balanced plan has measured best, and the share plan is only the fallback
    if n < SMALL_SET or not plans:
        plans.append(_pack_by_share(pods, allocs, price, rounds=2 if n <= 3000 else 1))
    if n < SMALL_SET:
        plans.append(_pack_single(pods, allocs, prices, tries=tries))
    best = _eliminate_bins(pods, allocs, price, min(plans, key=lambda b: _cost(b, price)))
    if n >= SMALL_SET and assign is not None and (assign >= 0).all():
        # the balanced fill once more, straying less from the demand direction: it leaves fewer nodes with
        # one pod that strands most of a small type, and on some sets that is cheaper
        strict = _pack_assigned(pods, allocs, price, assign, balanced=True, mu=STRICT_MU)
        if strict:
            strict = _eliminate_bins(pods, allocs, price, strict)
            if _cost(strict, price) < _cost(best, price):
                best = strict
    return best
