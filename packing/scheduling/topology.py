"""Topology groups: spread constraints and pod (anti-)affinity, counted per domain (hostname, zone, ...).

Structured like Karpenter's scheduling/topology.go: every distinct constraint becomes one group shared by
all pods that carry it; each placement increments the counts of every group whose selector matches the pod.
topology_pins checks a pod's groups against a NodeClaim and pins the claim to the domains they allow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from packing.pods import HOSTNAME, LabelSelector, NamespaceScope, Pod
from packing.requirements import Requirement, Requirements
from packing.scheduling import reasons

if TYPE_CHECKING:
    from packing.scheduling.preferences import PodContext
    from packing.scheduling.templates import PoolTemplate

__all__ = ["AFFINITY", "ANTI", "SPREAD", "GroupKind", "Topology", "TopologyGroup", "topology_pins"]


class GroupKind(StrEnum):
    SPREAD = "spread"
    AFFINITY = "affinity"
    ANTI = "anti-affinity"


SPREAD = GroupKind.SPREAD
AFFINITY = GroupKind.AFFINITY
ANTI = GroupKind.ANTI


@dataclass(eq=False)
class TopologyGroup:
    kind: GroupKind
    key: str
    selector: LabelSelector
    namespaces: NamespaceScope
    max_skew: int = 1
    min_domains: int = 1
    # every domain value the group may use (zone spread needs to know the empty zones too)
    domains: frozenset[str] = frozenset()
    counts: dict[str, int] = field(default_factory=dict)
    # for anti-affinity: where the owners of the constraint run, so that matching pods keep away from them
    owners: dict[str, int] = field(default_factory=dict)
    # required anti-affinity is symmetric (matching pods must keep away from the owner too); preferred is not
    symmetric: bool = True
    # selects() per (namespace, labels object): a solve asks about the same pods' labels hundreds of thousands
    # of times. Keyed by identity, with the mapping kept so that its id cannot be reused while cached (groups
    # live for one solve, during which no pod's labels change).
    _selects_cache: dict[tuple[str, int], tuple[Mapping[str, str], bool]] = field(
        default_factory=dict, init=False, repr=False
    )

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        ck = (namespace, id(labels))
        hit = self._selects_cache.get(ck)
        if hit is not None and hit[0] is labels:
            return hit[1]
        found = self.namespaces.contains(namespace) and self.selector.matches(labels)
        self._selects_cache[ck] = (labels, found)
        return found

    def total(self) -> int:
        return sum(self.counts.values())

    def describe(self) -> str:
        if self.kind == SPREAD:
            return f"topology spread on {self.key} would exceed maxSkew {self.max_skew}"
        if self.kind == AFFINITY:
            return f"pod affinity on {self.key} ({self.selector}) matches no pod in a reachable domain"
        return f"pod anti-affinity on {self.key} ({self.selector}) conflicts with a running or planned pod"

    def reason(self, nodepool: str) -> reasons.Reason:
        """Why this group refuses its pod a place in `nodepool` (the text is describe())."""
        return reasons.topology(nodepool, self.kind, self.key, str(self.selector), self.max_skew, self.describe())

    def allowed(self, candidates: Iterable[str], *, self_match: bool) -> list[str]:
        """The candidate domain values this group lets its owner pod use, best first."""
        counts = self.counts
        if self.kind == SPREAD:
            if self.key == HOSTNAME:
                # every new node is a new, empty hostname domain, so the global minimum is always 0
                return sorted(d for d in candidates if counts.get(d, 0) + 1 <= self.max_skew)
            doms = self.domains
            if doms:
                floor = min(counts.get(d, 0) for d in doms)
                if len(doms) < self.min_domains:
                    floor = 0
            else:
                floor = 0
            ok = [
                d
                for d in candidates
                if (not doms or d in doms) and counts.get(d, 0) + 1 - floor <= self.max_skew
            ]
            ok.sort(key=lambda d: (counts.get(d, 0), d))
            return ok
        if self.kind == AFFINITY:
            if self.total() == 0 and self_match:
                # nothing to be near yet: the first pod of a self-affine set may go anywhere
                return sorted(candidates)
            return sorted((d for d in candidates if counts.get(d, 0) > 0), key=lambda d: (-counts[d], d))
        return sorted(d for d in candidates if counts.get(d, 0) == 0)


class Topology:
    """All topology groups of one solve, with the per-domain pod counts."""

    def __init__(self) -> None:
        self.groups: dict[tuple[object, ...], TopologyGroup] = {}
        self._match_cache: dict[tuple[str, frozenset[tuple[str, str]]], list[TopologyGroup]] = {}
        self.anti_groups: list[TopologyGroup] = []

    def group(
        self,
        kind: GroupKind,
        key: str,
        selector: LabelSelector,
        namespaces: NamespaceScope,
        max_skew: int = 1,
        min_domains: int = 1,
        domains: frozenset[str] = frozenset(),
        symmetric: bool = True,
    ) -> TopologyGroup:
        ident = (kind, key, selector, namespaces, max_skew, min_domains, domains, symmetric)
        g = self.groups.get(ident)
        if g is None:
            g = TopologyGroup(
                kind, key, selector, namespaces, max_skew, min_domains, domains, symmetric=symmetric
            )
            self.groups[ident] = g
            self._match_cache.clear()
            if kind == ANTI and symmetric:
                self.anti_groups.append(g)
        return g

    def matching(self, pod: Pod) -> list[TopologyGroup]:
        """Groups whose selector selects this pod (their counts move when it is placed)."""
        ck = (pod.namespace, frozenset(pod.labels.items()))
        hit = self._match_cache.get(ck)
        if hit is None:
            hit = [g for g in self.groups.values() if g.selects(pod.namespace, pod.labels)]
            self._match_cache[ck] = hit
        return hit

    def record(self, pod: Pod, owned: Iterable[TopologyGroup], domain_of: Mapping[str, str]) -> None:
        for g in self.matching(pod):
            d = domain_of.get(g.key)
            if d is not None:
                g.counts[d] = g.counts.get(d, 0) + 1
        for g in owned:
            if g.kind == ANTI and g.symmetric:
                d = domain_of.get(g.key)
                if d is not None:
                    g.owners[d] = g.owners.get(d, 0) + 1


def topology_pins(
    ctx: PodContext, topo: Topology, hostname: str, reqs: Requirements, tpl: PoolTemplate
) -> Requirements | reasons.Reason:
    """Check the pod's topology groups against a NodeClaim and pin the claim's domains where needed."""
    pod = ctx.pod
    involved: list[TopologyGroup] = list(ctx.owned)
    matched = topo.matching(pod)
    keys = {g.key for g in involved} | {g.key for g in matched}
    for g in topo.anti_groups:
        if g.owners and g.selects(pod.namespace, pod.labels):
            keys.add(g.key)
    for key in sorted(keys):
        if key == HOSTNAME:
            dom = [hostname]
            for g in involved:
                if g.key == key and not g.allowed(dom, self_match=g.selects(pod.namespace, pod.labels)):
                    return g.reason(tpl.name)
            for g in topo.anti_groups:
                if g.key == key and g.owners.get(hostname, 0) and g.selects(pod.namespace, pod.labels):
                    return g.reason(tpl.name)
            continue
        current = reqs.get(key)
        universe = tpl.domains(key)
        if not universe:
            for g in involved:
                if g.kind == SPREAD and g.key == key:
                    # a spread counts only nodes that carry its key, and no node of this pool would
                    return reasons.label_not_carried(tpl.name, g.kind, key, on_some_node=bool(g.domains))
        cands = sorted(v for v in universe if current is None or current.has(v))
        order: list[str] | None = None
        for g in involved:
            if g.key != key:
                continue
            allowed = g.allowed(cands, self_match=g.selects(pod.namespace, pod.labels))
            if not allowed:
                return g.reason(tpl.name)
            if order is None:
                order = allowed
            keep = set(allowed)
            cands = [c for c in cands if c in keep]
            order = [c for c in order if c in keep]
        for g in topo.anti_groups:
            if g.key == key and g.owners and g.selects(pod.namespace, pod.labels):
                cands = [c for c in cands if not g.owners.get(c, 0)]
                if not cands:
                    return g.reason(tpl.name)
                if order is not None:
                    # the pod's own groups ranked the domains before this one ruled some out
                    order = [c for c in order if not g.owners.get(c, 0)]
        if not cands:
            return reasons.no_domain(tpl.name, key)
        pick = (order or cands)[0]
        if current is None or current.single_value() != pick:
            reqs = reqs.intersect(Requirements([Requirement.new(key, "In", [pick])]))
            if not tpl.viable(reqs):
                # the preferred domain has no offering for this pool: fall back to any other allowed one
                for alt in order or cands:
                    r2 = reqs.intersect(Requirements([Requirement.new(key, "In", [alt])]))
                    if tpl.viable(r2):
                        reqs = r2
                        break
    return reqs

