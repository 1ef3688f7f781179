"""Bulk packing: pods with no topology involvement, packed together into new NodeClaims by the cost packer.

Such pods (no spread, pod (anti-)affinity or host ports, and selected by none) are interchangeable within a
NodePool and set of requirements, so instead of Karpenter's pod-by-pod first-fit each group goes to
packer.pack, which picks the cheapest mix of instance types for the whole group. Each pod goes to the heaviest
pool that admits it and has a type it fits in (within limits); pods a pool cannot take try the next pool.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from packing.instancetype import Offering
from packing.requirements import Requirements
from packing.resources import CPU, MEMORY, PODS
from packing.scheduling.nodeclaim import NodeClaim
from packing.scheduling.packer import Bin, bin_totals, pack
from packing.scheduling.reservations import Ledger, packing_price
from packing.scheduling.templates import LaunchOptions, PoolTemplate, TypeOption
from packing.scheduling.vectors import fits_any, undominated
from packing.taints import first_untolerated

if TYPE_CHECKING:
    from packing.scheduling.preferences import PodContext
    from packing.scheduling.solve import Solve

__all__ = ["launch_options", "pack_in_bulk", "pool_candidates"]

_NONE: frozenset[str] = frozenset()
_BASIC = frozenset({CPU, MEMORY, PODS})


def pack_in_bulk(sv: Solve, ctxs: list[PodContext]) -> list[PodContext]:
    """Pack simple pods into new claims per (pool, requirements); returns the pods left over."""
    excluded: dict[int, set[str]] = {}
    todo = ctxs
    failed: list[PodContext] = []
    for _round in range(len(sv.tpls) + 2):
        if not todo:
            break
        chosen, gave_up = _choose_pools(sv, todo, excluded)
        failed.extend(gave_up)
        groups: dict[tuple[str, Requirements, tuple[str, ...]], list[PodContext]] = {}
        tpl_of: dict[str, PoolTemplate] = {}
        for ctx, tpl, reqs in chosen:
            tpl_of[tpl.name] = tpl
            req = ctx.pod.requests
            ext = () if _BASIC.issuperset(req) else tuple(k for k in req if k not in _BASIC)
            groups.setdefault((tpl.name, reqs, ext), []).append(ctx)
        todo = []
        for (pname, reqs, _ext), members in groups.items():
            todo.extend(_pack_group(sv, tpl_of[pname], reqs, members, excluded))
    return failed + todo


def pool_candidates(
    sv: Solve, ctx: PodContext, excluded: Collection[str], cache: dict[tuple[object, ...], object]
) -> list[tuple[PoolTemplate, Requirements, npt.NDArray[np.int64]]]:
    """Pools (heaviest first) whose taints and requirements admit the pod, with their size frontier."""
    sig = (ctx.pod.tolerations, ctx.terms, ctx.tolerate_prefer, frozenset(excluded))
    hit = cache.get(sig)
    if hit is None:
        found: list[tuple[PoolTemplate, Requirements, npt.NDArray[np.int64]]] = []
        for tpl in sv.tpls:
            if tpl.name in excluded or not tpl.options:
                continue
            if first_untolerated(
                tpl.pool.taints, ctx.pod.tolerations, include_prefer=not ctx.tolerate_prefer
            ):
                continue
            for term in ctx.terms:
                if tpl.base.conflict(term) is not None:
                    continue
                reqs = tpl.base.intersect(term)
                if tpl.pool_key_failure(reqs) is not None:
                    continue
                found.append((tpl, reqs, _size_frontier(sv, tpl, reqs)))
        cache[sig] = hit = found
    assert isinstance(hit, list)
    return hit


def _size_frontier(sv: Solve, tpl: PoolTemplate, reqs: Requirements) -> npt.NDArray[np.int64]:
    """Allocatable of the viable options (within limits) that no other is at least as big as: only
    these matter for "does it fit anywhere". Without limits it depends on the requirements alone and is
    kept on the template for later solves."""
    if not tpl.pool.limits:
        hit = tpl.frontier_cache.get(reqs)
        if hit is not None:
            return hit
    mask = tpl.viable_mask(reqs)
    if tpl.pool.limits:
        mask = mask & sv.limits.mask(tpl)
    m = tpl.alloc_matrix[mask]
    m = m[undominated(m, [0.0] * len(m))] if len(m) else m
    if not tpl.pool.limits:
        m.setflags(write=False)  # shared by later solves
        tpl.frontier_cache[reqs] = m
    return m


def _choose_pools(
    sv: Solve, ctxs: list[PodContext], excluded: dict[int, set[str]]
) -> tuple[list[tuple[PodContext, PoolTemplate, Requirements]], list[PodContext]]:
    """For each pod, the heaviest pool that accepts it and has an option it fits in (within limits).

    Pods with the same constraints are checked together with one numpy comparison per candidate pool.
    """
    cache: dict[tuple[object, ...], object] = {}
    chosen: list[tuple[PodContext, PoolTemplate, Requirements]] = []
    failed: list[PodContext] = []
    todo = ctxs
    while todo:
        by_sig: dict[tuple[object, ...], list[PodContext]] = {}
        for ctx in todo:
            ex = excluded.get(id(ctx))
            sig = (ctx.pod.tolerations, ctx.terms, ctx.tolerate_prefer, frozenset(ex) if ex else _NONE)
            by_sig.setdefault(sig, []).append(ctx)
        todo = []
        for members in by_sig.values():
            cands = pool_candidates(sv, members[0], excluded.get(id(members[0]), ()), cache)
            vecs = np.array([c.vec for c in members], dtype=np.int64).reshape(
                len(members), len(sv.keys)
            )
            left = np.ones(len(members), dtype=bool)
            for tpl, reqs, m in cands:
                if not m.size or not left.any():
                    continue
                ok = left & fits_any(vecs, m)
                for i in np.flatnonzero(ok).tolist():
                    chosen.append((members[i], tpl, reqs))
                left &= ~ok
            for i in np.flatnonzero(left).tolist():
                ctx = members[i]
                # nothing takes it as it stands: relax a preference and try again, else give up
                (todo if ctx.relax() else failed).append(ctx)
    return chosen, failed


def launch_options(sv: Solve, tpl: PoolTemplate, reqs: Requirements) -> LaunchOptions:
    """The undominated (type, cheapest offering) pairs bulk packing may launch for these requirements,
    with their allocatable. Without limits it depends on the requirements alone and is kept on the
    template."""
    if not tpl.pool.limits:
        hit = tpl.launch_cache.get(reqs)
        if hit is not None:
            return hit
    opts: list[tuple[TypeOption, Offering]] = []
    for o in tpl.viable(reqs):
        off = o.offering_for(reqs)
        if off is not None:
            opts.append((o, off))
    # o.alloc is already net of the pool's DaemonSet overhead
    allocs = np.array([list(o.alloc) for o, _ in opts], dtype=np.int64).reshape(len(opts), len(sv.keys))
    if tpl.pool.limits:
        lm = sv.limits.mask(tpl)
        keep = [j for j, (o, _) in enumerate(opts) if lm[o.index]]
        opts = [opts[j] for j in keep]
        allocs = allocs[keep]
    if opts:
        keep_idx = undominated(allocs, [off.price or 0.0 for _, off in opts])
        opts = [opts[j] for j in keep_idx]
        allocs = allocs[keep_idx]
    if not tpl.pool.limits:
        allocs.setflags(write=False)  # shared by later solves
        tpl.launch_cache[reqs] = (opts, allocs)
    return opts, allocs


def _options_within(sv: Solve, tpl: PoolTemplate, reqs: Requirements, ledger: Ledger) -> LaunchOptions:
    """launch_options with the limited offerings whose pools have nothing left taken out (not cached)."""
    opts: list[tuple[TypeOption, Offering]] = []
    for o in tpl.viable(reqs):
        off = o.offering_within(reqs, ledger.room)
        if off is not None:
            opts.append((o, off))
    allocs = np.array([list(o.alloc) for o, _ in opts], dtype=np.int64).reshape(len(opts), len(sv.keys))
    if tpl.pool.limits:
        lm = sv.limits.mask(tpl)
        keep = [j for j, (o, _) in enumerate(opts) if lm[o.index]]
        opts = [opts[j] for j in keep]
        allocs = allocs[keep]
    if opts:
        keep_idx = undominated(allocs, [off.price or 0.0 for _, off in opts])
        opts = [opts[j] for j in keep_idx]
        allocs = allocs[keep_idx]
    return opts, allocs


def _used_up_reservation(ledger: Ledger) -> str | None:
    """The first reservation (by id) with nothing left, for the reason of pods only it could have taken."""
    gone = sorted(k for k, v in ledger.left.items() if k.startswith("reservation/") and v < 1.0 - 1e-9)
    return gone[0].removeprefix("reservation/") if gone else None


def _running_ledger(sv: Solve) -> Ledger:
    """What the limited pools have left after the claims the solve holds so far."""
    ledger = Ledger(sv.s.instance_types, sv.s.existing_nodes, sv.s.input_nodes)
    for c in sv.claims:
        if c.offering is not None and c.offering.limited:
            ledger.take(c.offering)
    return ledger


def _pack_group(
    sv: Solve, tpl: PoolTemplate, reqs: Requirements, members: list[PodContext], excluded: dict[int, set[str]]
) -> list[PodContext]:
    opts, allocs = launch_options(sv, tpl, reqs)
    podm = np.array([c.vec for c in members], dtype=np.int64).reshape(len(members), len(sv.keys))
    ledger = _running_ledger(sv) if sv.s.limited else None
    left: list[PodContext] = []
    idx = list(range(len(members)))
    # without limited offerings one pass; with them, the pods of bins beyond a pool's count are packed again
    # on what is left (each pass uses up at least one pool, or packs everything)
    for npass in range(len(ledger.left) + 2 if ledger is not None else 1):
        fits_some = fits_any(podm[idx], allocs) if opts else np.zeros(len(idx), dtype=bool)
        used_up = _used_up_reservation(ledger) if npass and ledger is not None else None
        for i in np.flatnonzero(~fits_some).tolist():
            c = members[idx[i]]
            excluded.setdefault(id(c), set()).add(tpl.name)
            left.append(c)
            if used_up is not None:
                sv.reservation_full[c.pod.key] = (tpl.name, used_up)
        idx = [idx[i] for i in np.flatnonzero(fits_some).tolist()]
        if not idx:
            return left
        bins = pack(podm[idx], allocs, [packing_price(off) for _, off in opts])
        over: list[int] = []
        if ledger is not None:
            kept: list[Bin] = []
            for b in bins:
                if ledger.take(opts[b.option][1]):
                    kept.append(b)
                else:
                    over.extend(idx[i] for i in b.pods)
            bins = kept
        _make_claims(sv, tpl, reqs, members, idx, podm, opts, allocs, bins, excluded, left)
        if not over or ledger is None:
            return left
        idx = sorted(over)
        opts, allocs = _options_within(sv, tpl, reqs, ledger)
    for i in idx:
        excluded.setdefault(id(members[i]), set()).add(tpl.name)
        left.append(members[i])
    return left


def _make_claims(
    sv: Solve,
    tpl: PoolTemplate,
    reqs: Requirements,
    members: list[PodContext],
    idx: list[int],
    podm: npt.NDArray[np.int64],
    opts: list[tuple[TypeOption, Offering]],
    allocs: npt.NDArray[np.int64],
    bins: list[Bin],
    excluded: dict[int, set[str]],
    left: list[PodContext],
) -> None:
    """One NodeClaim per bin (of the cheapest option the pool's limits allow); pods of a bin no option within
    the limits holds go to `left`."""
    sub = podm[idx]
    # each claim's requests in one numpy pass (integer sums: the same as adding pod by pod)
    sums = bin_totals(sub, [b.pods for b in bins])
    totals = [tuple(t) for t in sums.tolist()]
    for b, used in zip(bins, totals, strict=True):
        o, off = opts[b.option]
        bin_ctxs = [members[idx[i]] for i in b.pods]
        if not sv.limits.ok(tpl, o.it.capacity):
            total = podm[[idx[i] for i in b.pods]].sum(axis=0)
            alt = None
            for j, (o2, off2) in enumerate(opts):
                if (allocs[j] >= total).all() and sv.limits.ok(tpl, o2.it.capacity):
                    if alt is None or (off2.price or 0.0) < (alt[1].price or 0.0):
                        alt = (o2, off2)
            if alt is None:
                for c in bin_ctxs:
                    excluded.setdefault(id(c), set()).add(tpl.name)
                left.extend(bin_ctxs)
                continue
            o, off = alt
        claim = NodeClaim(
            sv.new_claim_name(tpl.name),
            tpl,
            reqs,
            np.array([o.index], dtype=np.int64),
            cap_max=o.alloc,
        )
        claim.used = used
        claim.pods = [c.pod for c in bin_ctxs]
        claim.fix(o, off)
        sv.limits.reserve(tpl, o.it.capacity)
        sv.claims.append(claim)
