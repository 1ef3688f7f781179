"""Zone spread decided up front: pods whose only topology constraint is a DoNotSchedule spread over a key such
as the zone are dealt out to the domains evenly and then packed in bulk, each pinned to its domain.

Pod by pod, a spread pod goes to whichever claim of an allowed domain takes it first, so each domain's
claims are packed first-fit, one pod at a time. When a spread group's counts depend on nothing but its own
pending pods (no existing node, every pod its selector matches is one of its owners, and nothing else selects
them), the final counts are all that the constraint restricts: dealing the group's pods round-robin over its
domains gives counts that differ by at most one (within any maxSkew) and every domain the same mix of sizes.
Each pod then carries its domain as a node requirement and goes to the cost packer (packing.scheduling.bulk)
with the other simple pods, one packing per domain.

Groups that do not qualify (existing nodes, pools with limits, minDomains above the number of domains, pods
with preferences or other topology terms, a domain where some pod fits no type) keep the pod-by-pod path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from packing.nodepool import HOSTNAME_LABEL
from packing.requirements import Requirement, Requirements
from packing.scheduling.bulk import pool_candidates
from packing.scheduling.preferences import PodContext
from packing.scheduling.topology import SPREAD, TopologyGroup
from packing.scheduling.vectors import fits_any

if TYPE_CHECKING:
    from packing.scheduling.solve import Solve

__all__ = ["split_spread_groups"]


def _sole_spread(ctx: PodContext) -> TopologyGroup | None:
    """The pod's one spread group when that is its only topology term and nothing about it can relax."""
    p = ctx.pod
    if len(p.spread) != 1 or len(ctx.owned) != 1:
        return None
    sc = p.spread[0]
    if sc.when_unsatisfiable != "DoNotSchedule" or sc.topology_key == HOSTNAME_LABEL:
        return None
    if p.affinity or p.anti_affinity or p.host_ports or ctx.preferred_node:
        return None
    if ctx.preferred_affinity or ctx.preferred_anti:
        return None
    g = ctx.owned[0]
    if g.kind != SPREAD or not g.domains or len(g.domains) < g.min_domains or g.counts:
        return None
    return g


def _pin_terms(
    terms: tuple[Requirements, ...], key: str, domain: str, memo: dict[tuple[object, ...], tuple[Requirements, ...]]
) -> tuple[Requirements, ...]:
    """The pod's node-affinity terms with the domain required (one shared tuple per terms and domain)."""
    mk = (terms, key, domain)
    hit = memo.get(mk)
    if hit is None:
        pin = Requirements([Requirement.new(key, "In", [domain])])
        hit = memo[mk] = tuple(t.intersect(pin) for t in terms if t.conflict(pin) is None)
    return hit


def split_spread_groups(sv: Solve, order: Sequence[PodContext]) -> set[int]:
    """Deal out the pods of every qualifying spread group: each one's context (by id in the returned set) gets
    its domain added to its node-affinity terms and leaves its spread group (the domain pins the count).
    Pods in `order` (largest first) are dealt in that order, a snake over the sorted domains (forth, back,
    forth...), so every domain gets the same share of large and small pods and counts that differ by at most
    one."""
    if sv.greedy or sv.nodes or any(t.pool.limits for t in sv.tpls):
        return set()
    members: dict[int, list[PodContext]] = {}
    group: dict[int, TopologyGroup] = {}
    bad: set[int] = set()
    for ctx in order:
        matched = sv.topo.matching(ctx.pod)
        g = _sole_spread(ctx)
        if g is None or len(matched) != 1 or matched[0] is not g:
            # a group that selects a pod it cannot deal out, or whose owner is counted elsewhere, keeps
            # the pod-by-pod path
            bad.update(id(m) for m in matched)
            if g is not None:
                bad.add(id(g))
            continue
        members.setdefault(id(g), []).append(ctx)
        group[id(g)] = g
    out: set[int] = set()
    cache: dict[tuple[object, ...], object] = {}
    memo: dict[tuple[object, ...], tuple[Requirements, ...]] = {}
    for gid, ctxs in members.items():
        if gid in bad:
            continue
        g = group[gid]
        doms = sorted(g.domains)
        dealt: list[tuple[Requirements, ...]] = []
        for i, ctx in enumerate(ctxs):
            rnd, pos = divmod(i, len(doms))
            terms = _pin_terms(ctx.terms, g.key, doms[pos] if rnd % 2 == 0 else doms[-1 - pos], memo)
            if not terms:
                break
            dealt.append(terms)
        if len(dealt) != len(ctxs) or not _all_fit(sv, ctxs, dealt, cache):
            continue
        for ctx, terms in zip(ctxs, dealt, strict=True):
            ctx.terms = terms
            ctx.owned = []
            out.add(id(ctx))
    return out


def _all_fit(
    sv: Solve,
    ctxs: Sequence[PodContext],
    dealt: Sequence[tuple[Requirements, ...]],
    cache: dict[tuple[object, ...], object],
) -> bool:
    """Whether every pod fits some type of some pool that admits it with its dealt terms."""
    by_sig: dict[tuple[object, ...], tuple[tuple[Requirements, ...], bool, list[int]]] = {}
    for i, (c, terms) in enumerate(zip(ctxs, dealt, strict=True)):
        sig = (c.pod.tolerations, terms, c.tolerate_prefer)
        by_sig.setdefault(sig, (terms, c.tolerate_prefer, []))[2].append(i)
    for terms, prefer, idx in by_sig.values():
        probe = PodContext(ctxs[idx[0]].pod, sv.keys)
        probe.terms, probe.tolerate_prefer = terms, prefer
        vecs = np.array([ctxs[i].vec for i in idx], dtype=np.int64).reshape(len(idx), len(sv.keys))
        left = np.ones(len(idx), dtype=bool)
        for _tpl, _reqs, frontier in pool_candidates(sv, probe, (), cache):
            if frontier.size:
                left &= ~fits_any(vecs, frontier)
        if left.any():
            return False
    return True
