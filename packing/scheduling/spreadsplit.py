"""Zone spread decided up front: pods whose only topology constraint is a DoNotSchedule spread over a key such
as the zone are dealt out to the domains and then packed in bulk, each pinned to its domain.

Pod by pod, a spread pod goes to whichever claim of an allowed domain takes it first, so each domain's
claims are packed first-fit, one pod at a time. When a spread group's counts depend on nothing but its own
pending pods (no existing node, every pod its selector matches is one of its owners, and nothing else selects
them), the final counts are all that the constraint restricts, and any deal that gives every domain the same
count within one keeps every maxSkew. On zones the deal follows the zone-spread LP (packing.spreadbound):
groups over one set of zones whose pods share tolerations and node affinity are dealt together so that each
zone gets the pods its own offerings host most cheaply (a zone without the cheap types gets small pods),
each group still within one pod of the same count in every zone. The LP's deal is its relaxation's rounded
to pods, so both deals are packed per zone (the cost packer at each zone's offerings) and the LP's is kept
only when it costs no more than the even one. Otherwise (or when the LP cannot be solved) the pods are dealt
evenly, largest first, forth and back over the sorted domains. Each pod then
carries its domain as a node requirement and goes to the cost packer (packing.scheduling.bulk) with the
other simple pods, one packing per domain.

Groups that do not qualify (existing nodes, pools with limits, minDomains above the number of domains, pods
with preferences or other topology terms, a domain where some pod fits no type) keep the pod-by-pod path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from packing.nodepool import HOSTNAME_LABEL, ZONE_LABEL
from packing.requirements import Requirement, Requirements
from packing.scheduling.bulk import launch_options, pool_candidates
from packing.scheduling.packer import pack
from packing.scheduling.preferences import PodContext
from packing.scheduling.topology import SPREAD, TopologyGroup
from packing.scheduling.vectors import fits_any
from packing.spreadbound import ZoneOption, zone_quotas

if TYPE_CHECKING:
    from packing.scheduling.solve import Solve

__all__ = ["LP_GUIDE_MIN_PODS", "split_spread_groups"]

# fewer pods than this over one set of zones are dealt evenly: the LP costs more time than it saves there
LP_GUIDE_MIN_PODS = 1000


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
    live = [gid for gid in members if gid not in bad]
    guide = _lp_guides(sv, [group[gid] for gid in live], [members[gid] for gid in live], cache, memo)
    for gid in live:
        ctxs = members[gid]
        g = group[gid]
        doms = sorted(g.domains)
        zones = guide.get(gid)
        dealt: list[tuple[Requirements, ...]] = []
        for i, ctx in enumerate(ctxs):
            if zones is not None:
                d = zones[i]
            else:
                rnd, pos = divmod(i, len(doms))
                d = doms[pos] if rnd % 2 == 0 else doms[-1 - pos]
            terms = _pin_terms(ctx.terms, g.key, d, memo)
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


def _lp_guides(
    sv: Solve,
    groups: Sequence[TopologyGroup],
    members: Sequence[Sequence[PodContext]],
    cache: dict[tuple[object, ...], object],
    memo: dict[tuple[object, ...], tuple[Requirements, ...]],
) -> dict[int, list[str]]:
    """Per group (by id), the domain of each of its pods as the zone-spread LP (packing.spreadbound) would
    deal them: the groups over one set of zones whose pods share tolerations and node affinity are dealt
    together, each zone's share at that zone's own offerings and prices, so a dear zone gets the pods it
    hosts most cheaply. Each group still gets counts within one of each other in every zone. Groups it cannot
    guide, and sets of fewer than LP_GUIDE_MIN_PODS pods, are left to the even deal."""
    out: dict[int, list[str]] = {}
    by_set: dict[tuple[object, ...], list[int]] = {}
    for gi, (g, ctxs) in enumerate(zip(groups, members, strict=True)):
        first = ctxs[0]
        if g.key != ZONE_LABEL or any(
            c.terms != first.terms or c.pod.tolerations != first.pod.tolerations for c in ctxs
        ):
            continue
        by_set.setdefault((g.domains, first.terms, first.pod.tolerations, first.tolerate_prefer), []).append(gi)
    for (doms_obj, _t, _tol, _p), gis in by_set.items():
        assert isinstance(doms_obj, frozenset)
        doms = sorted(doms_obj)
        ctxs_all = [c for gi in gis for c in members[gi]]
        if len(ctxs_all) < LP_GUIDE_MIN_PODS:
            continue
        probe_src = members[gis[0]][0]
        options: ZoneOption = {}
        packs: dict[str, tuple[npt.NDArray[np.int64], list[float]]] = {}  # per zone: what bulk packing launches
        for d in doms:
            probe = PodContext(probe_src.pod, sv.keys)
            probe.terms, probe.tolerate_prefer = _pin_terms(probe_src.terms, ZONE_LABEL, d, memo), probe_src.tolerate_prefer
            for tpl, reqs, _frontier in pool_candidates(sv, probe, (), cache):
                opts, allocs = launch_options(sv, tpl, reqs)
                for (o, off), alloc in zip(opts, allocs.astype(np.float64), strict=True):
                    options[(o.it.name, d, frozenset({0}))] = (float(off.price or 0.0), alloc)
                packs[d] = (allocs, [off.price or 0.0 for _, off in opts])
                break  # the heaviest pool that admits the pods is where bulk packing sends them
        reqm = np.array([c.vec for c in ctxs_all], dtype=np.float64).reshape(len(ctxs_all), len(sv.keys))
        need = 0
        for gi in gis:
            n, skew = len(members[gi]), groups[gi].max_skew
            need += max(0, math.ceil((n - (len(doms) - 1) * skew) / len(doms)))
        solved = zone_quotas(reqm, [0] * len(ctxs_all), [(doms_obj, need)], options) if need else None
        if solved is None:
            continue
        cell_idx, quota, zones = solved
        if sorted(zones) != doms:
            continue
        quota = quota.copy()
        zone_total = quota.sum(axis=0)
        pos = 0
        guided: dict[int, list[str]] = {}
        for gi in gis:
            ctxs = members[gi]
            base, extra = divmod(len(ctxs), len(zones))
            # the zones the LP fills most take a group's pods beyond a whole round
            rank = sorted(range(len(zones)), key=lambda z: (-zone_total[z], zones[z]))
            target = [base] * len(zones)
            for z in rank[:extra]:
                target[z] += 1
            left = list(target)
            picked: list[str] = []
            for k in range(len(ctxs)):
                c = int(cell_idx[pos + k])
                open_z = [z for z in range(len(zones)) if left[z] > 0]
                # the zone with the most of the LP's share of this pod's cell left per place it still has for
                # the group (plain most-left fills a zone's places before its share is reached elsewhere)
                z = max(open_z, key=lambda zz: (quota[c, zz] / left[zz], -zz))
                quota[c, z] -= 1.0
                left[z] -= 1
                picked.append(zones[z])
            pos += len(ctxs)
            guided[id(groups[gi])] = picked
        # the LP's deal is its relaxation's, rounded: packed, it can cost more than the even deal; keep the cheaper
        even = {id(groups[gi]): _even_deal(len(members[gi]), doms) for gi in gis}
        pods = [members[gi] for gi in gis]
        keys = [id(groups[gi]) for gi in gis]
        if _deal_cost(sv, pods, [guided[k] for k in keys], packs) <= _deal_cost(
            sv, pods, [even[k] for k in keys], packs
        ):
            out.update(guided)
    return out


def _even_deal(n: int, doms: Sequence[str]) -> list[str]:
    """The domain of each of a group's `n` pods (largest first) in the even deal: a snake over the domains."""
    out = []
    for i in range(n):
        rnd, pos = divmod(i, len(doms))
        out.append(doms[pos] if rnd % 2 == 0 else doms[-1 - pos])
    return out


def _deal_cost(
    sv: Solve,
    members: Sequence[Sequence[PodContext]],
    deals: Sequence[Sequence[str]],
    packs: dict[str, tuple[npt.NDArray[np.int64], list[float]]],
) -> float:
    """What the cost packer launches, per zone at that zone's options, for the pods of the groups dealt so
    (infinite when a pod fits no option of its zone)."""
    by_zone: dict[str, list[PodContext]] = {}
    for ctxs, deal in zip(members, deals, strict=True):
        for ctx, zone in zip(ctxs, deal, strict=True):
            by_zone.setdefault(zone, []).append(ctx)
    total = 0.0
    for zone, ctxs in by_zone.items():
        allocs, prices = packs.get(zone, (None, []))
        if allocs is None or not prices:
            return math.inf
        podm = np.array([c.vec for c in ctxs], dtype=np.int64).reshape(len(ctxs), len(sv.keys))
        if not fits_any(podm, allocs).all():
            return math.inf
        total += sum(prices[b.option] for b in pack(podm, allocs, prices))
    return total


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
