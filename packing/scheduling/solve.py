"""One solve: where pending pods go and which NodeClaims must be launched for them.

Structured like Karpenter's pkg/controllers/provisioning/scheduling: pods are taken largest first; each is tried
on existing nodes (and in-flight NodeClaims), then on NodeClaims opened earlier in this solve, then on a new
NodeClaim from the heaviest NodePool that accepts it, relaxing preferences one step at a time when nothing
takes it; a pod that still fails is retried once pods placed after it could let it in (Solve._retry, as
Karpenter's queue re-pushes it). Two departures make the plan cheaper than Karpenter's:

- pods with no topology involvement (no spread, pod (anti-)affinity or host ports, and selected by none)
  skip the pod-by-pod greedy for new capacity and are packed in bulk (packing.scheduling.bulk);
- pod-by-pod NodeClaims may not grow past the most cost-efficient node size for the pending pods, so
  first-fit does not end in oversized (often metal) types with poor $/resource.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from packing import bound
from packing.instancetype import Offering
from packing.nodepool import (
    CAPACITY_TYPE_LABEL,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from packing.pods import HostPort, NamespaceScope, Pod
from packing.requirements import Requirements
from packing.resources import CPU, MEMORY, PODS, Resources
from packing.scheduling import reasons
from packing.scheduling.bulk import pack_in_bulk
from packing.scheduling.exact import repack_small_groups
from packing.scheduling.existingnode import ExistingNode
from packing.scheduling.explain import explain
from packing.scheduling.firstfit import FirstFitIndex
from packing.scheduling.fit import Fit, Refusal
from packing.scheduling.limits import LimitUsage
from packing.scheduling.minvalues import MinValuesPolicy, holders, keep_min_values, shortfall_of
from packing.scheduling.nodeclaim import NodeClaim
from packing.scheduling.preferences import PodContext
from packing.scheduling.queue import RetryQueue, largest_first
from packing.scheduling.reasons import Reason, ReasonKind
from packing.scheduling.reservations import pool_of, reservation_labels, settle
from packing.scheduling.results import ExistingPlacement, PlannedNodeClaim, Results, limited_fields
from packing.scheduling.spreadsplit import split_spread_groups
from packing.scheduling.topology import AFFINITY, ANTI, SPREAD, Topology, TopologyGroup
from packing.scheduling.vectors import add, vector
from packing.taints import first_untolerated

if TYPE_CHECKING:
    from packing.scheduling.scheduler import Scheduler
    from packing.scheduling.templates import PoolTemplate

__all__ = ["MAX_OPTIONS", "Solve"]

MAX_OPTIONS = 60  # instance types listed per planned NodeClaim (its instance_type_options)
# types per block when listing each claim's alternatives (see Solve._alternatives)
_ALT_BLOCK = 128


def _cap_price(o: Offering) -> float:
    """The price the size caps weigh types by: a limited offering at its list price (a reservation priced 0
    would cap every claim to the reserved type, though it holds only so many)."""
    return float(o.list_price if o.list_price is not None else (o.price or 0.0))


class Solve:
    """One solve of a Scheduler: its pods, the pools prepared for their resource keys, the existing nodes
    with their free room, the NodeClaims opened so far, topology counts and limit usage.

    Scheduler.solve runs one and returns run()'s Results; the benchmark's Karpenter-style baseline
    (packing.bench.baseline) builds one for the same setup and drives the placement itself.
    """

    def __init__(
        self, s: Scheduler, pods: Sequence[Pod], exclude: frozenset[str], *, greedy: bool = False
    ) -> None:
        self.s = s
        self.greedy = greedy
        self.exclude = exclude
        self.started = time.perf_counter()
        keyset: set[str] = {CPU, MEMORY, PODS}
        self.errors: dict[str, list[Reason]] = {}
        # pod -> (pool, reservation id): bulk packing left it out once the pool's reservations were used up
        self.reservation_full: dict[str, tuple[str, str]] = {}
        beyond: list[Pod] = []
        for p in pods:
            keyset.update(p.requests)
            if not p.requests.in_range():
                beyond.append(p)
        for ds in s.daemonsets:
            keyset.update(ds.pod.requests)
        self.keys = tuple(sorted(keyset))
        self.tpls = s.templates(self.keys)
        # minValues (packing.scheduling.minvalues): see _keep_min_values_in_bulk
        self.strict_min_values = s.min_values_policy == MinValuesPolicy.STRICT
        self.any_min_values = any(tpl.base.min_values() for tpl in self.tpls)
        self.pods = list(pods)
        if beyond:
            for p in beyond:
                self.errors[p.key] = [reasons.beyond_range(p.requests)]
            gone = {id(p) for p in beyond}
            self.placeable = [p for p in self.pods if id(p) not in gone]
        else:
            self.placeable = self.pods
        self.topo = Topology()
        self.claims: FirstFitIndex[NodeClaim] = FirstFitIndex()
        self.claim_seq: dict[str, int] = {}
        # pool usage toward limits: capacity of nodes and in-flight claims already belonging to the pool
        self.limits = LimitUsage(s.nodepools)
        nodes = [n for n in s.existing_nodes if n.name not in exclude]
        running_by_node: dict[str, list[Pod]] = {}
        for p in s.running_pods:
            if p.node_name and p.node_name not in exclude:
                running_by_node.setdefault(p.node_name, []).append(p)
        pools = {p.name: p for p in s.nodepools}
        self.nodes: list[ExistingNode] = []
        # initialized nodes first, as Karpenter's sortExistingNodes (a node still booting is tried last)
        keys = self.keys
        for spec in sorted(nodes, key=lambda n: (not n.initialized, n.kind != "Node", n.name)):
            used: dict[str, int] = {}
            ports: list[HostPort] = []
            for p in running_by_node.get(spec.name, ()):
                for k, v in p.requests.items():
                    used[k] = used.get(k, 0) + v
                if p.host_ports:
                    ports.extend(p.host_ports)
            alloc = spec.allocatable
            free = tuple([alloc.get(k, 0) - used.get(k, 0) for k in keys])
            pool = pools.get(spec.nodepool or "")
            node = ExistingNode(spec, free, ports, pool, running_by_node.get(spec.name, ()), s.daemonsets)
            if node.missing:
                # the DaemonSet pods that will run there take their room first (Karpenter's remaining daemon
                # resources); a node already short of it takes no pending pod
                reserve = Resources()
                for ds in node.missing:
                    reserve = reserve + ds.pod.requests
                node.free = tuple(map(operator.sub, node.free, vector(reserve, self.keys)))
            self.nodes.append(node)
            if pool is not None:
                self.limits.count_node(pool.name, spec.capacity or spec.allocatable)
        self.node_by_name = {n.name: n for n in self.nodes}
        # hostnames a new NodeClaim must not take: topology counts pods per hostname, so a claim named like a
        # node (a disruption simulation's earlier replacement is a node named "<pool>-1") would share its counts
        self.taken_names = set(self.node_by_name) | {n.labels[HOSTNAME_LABEL] for n in self.nodes}
        # pods that failed, until a placement counted by their groups makes them due again (see _retry)
        self.retry = RetryQueue()
        # a node marked for deletion still holds its pods (topology, limits) but takes no pending pod
        self.node_index = FirstFitIndex([n for n in self.nodes if not n.spec.deleting])
        self._domain_cache: dict[tuple[str, tuple[Requirements, ...], bool], frozenset[str]] = {}
        self._setup_topology(running_by_node)

    # ----------------------------------------------------------------- topology
    def _setup_topology(self, running_by_node: Mapping[str, list[Pod]]) -> None:
        self.ctxs = [PodContext(p, self.keys) for p in self.placeable]
        for ctx in self.ctxs:
            self.register(ctx)
        if not self.topo.groups and not any(p.has_topology_rules for p in self.placeable) and not any(
            p.anti_affinity for pods in running_by_node.values() for p in pods
        ):
            # no group now, and none can come: groups are made only from the pods' rules (a relaxed pod keeps a
            # subset of them) and the running pods' anti-affinity, so the running pods would count in nothing
            return
        for node_name, pods in running_by_node.items():
            node = self.node_by_name.get(node_name)
            if node is None:
                continue
            for p in pods:
                if p.terminating:
                    continue  # as Karpenter's topology: a terminating pod counts in no domain
                owned = [
                    self.topo.group(ANTI, t.topology_key, t.selector, t.scope(p.namespace))
                    for t in p.anti_affinity
                ]
                self.topo.record(p, owned, node.labels)

    def register(self, ctx: PodContext) -> None:
        p = ctx.pod
        own_ns = NamespaceScope(frozenset({p.namespace}))
        groups: list[TopologyGroup] = []
        for sc in p.spread:
            if sc.when_unsatisfiable == "ScheduleAnyway" and not ctx.schedule_anyway:
                continue
            domains: frozenset[str] = frozenset()
            if sc.topology_key != HOSTNAME_LABEL:
                domains = self._spread_domains(sc.topology_key, ctx.terms, honor=sc.honor_node_affinity)
            groups.append(
                self.topo.group(
                    SPREAD, sc.topology_key, sc.selector, own_ns, sc.max_skew, sc.min_domains, domains
                )
            )
        for t in p.affinity:
            groups.append(self.topo.group(AFFINITY, t.topology_key, t.selector, t.scope(p.namespace)))
        for t in p.anti_affinity:
            groups.append(self.topo.group(ANTI, t.topology_key, t.selector, t.scope(p.namespace)))
        for _, t in ctx.preferred_affinity:
            groups.append(self.topo.group(AFFINITY, t.topology_key, t.selector, t.scope(p.namespace)))
        for _, t in ctx.preferred_anti:
            groups.append(
                self.topo.group(ANTI, t.topology_key, t.selector, t.scope(p.namespace), symmetric=False)
            )
        ctx.owned = groups

    def _spread_domains(self, key: str, terms: tuple[Requirements, ...], *, honor: bool = True) -> frozenset[str]:
        """Domains a spread constraint counts: values reachable through the pools or present on nodes. With
        Kubernetes' nodeAffinityPolicy Honor (the default), only the values the pod's node affinity allows, and
        only the nodes whose labels it admits; with Ignore, every value."""
        ck = (key, terms, honor)
        hit = self._domain_cache.get(ck)
        if hit is None:
            vals: set[str] = set()
            for tpl in self.tpls:
                vals.update(tpl.domains(key))
            for n in self.nodes:
                nv = n.labels.get(key)
                if nv is not None and (not honor or any(t.matches(n.labels) for t in terms)):
                    vals.add(nv)
            if honor:
                hit = frozenset(v for v in vals if any(t.get(key) is None or t[key].has(v) for t in terms))
            else:
                hit = frozenset(vals)
            self._domain_cache[ck] = hit
        return hit

    def _is_constrained(self, ctx: PodContext) -> bool:
        if ctx.owned or ctx.pod.host_ports:
            return True
        if not self.topo.groups:
            return False  # no pod or node has a topology constraint: nothing can select this pod
        if self.topo.matching(ctx.pod):
            return True
        return any(g.owners and g.selects(ctx.pod.namespace, ctx.pod.labels) for g in self.topo.anti_groups)

    # ----------------------------------------------------------------- placement
    def try_existing(self, ctx: PodContext) -> bool:
        for node in self.node_index.candidates(ctx.vec):
            if isinstance(node.can_add(ctx, self.topo), Fit):
                node.add(ctx, self.topo)
                self.node_index.update(node)
                return True
        return False

    def _try_claims(self, ctx: PodContext) -> bool:
        for claim in self.claims.candidates(ctx.vec):
            res = claim.can_add(ctx, self.topo)
            if isinstance(res, Refusal):
                continue
            limited = claim.chosen is None and bool(claim.tpl.pool.limits)
            old = self.limits.max_capacity(claim) if limited else None
            claim.add(ctx, self.topo, res)
            self.claims.update(claim)
            if old is not None:
                self.limits.reserve(claim.tpl, old, -1)
                self.limits.reserve(claim.tpl, self.limits.max_capacity(claim))
            return True
        return False

    def new_claim_name(self, pool: str) -> str:
        """The next "<pool>-<n>"; a caller that drops the claim gives its number back (claim_seq -= 1)."""
        n = self.claim_seq.get(pool, 0) + 1
        while f"{pool}-{n}" in self.taken_names:
            n += 1
        self.claim_seq[pool] = n
        return f"{pool}-{n}"

    def launchable(self, ctx: PodContext) -> Iterator[tuple[PoolTemplate, npt.NDArray[np.bool_]]]:
        """The pools, in order, whose taints the pod tolerates, each with the mask of its instance types that
        hold the pod alone within the pool's limits: where a new NodeClaim for the pod may start."""
        used = np.asarray(ctx.vec, dtype=np.int64)
        for tpl in self.tpls:
            if first_untolerated(tpl.pool.taints, ctx.pod.tolerations, include_prefer=not ctx.tolerate_prefer):
                continue
            if not tpl.options:
                continue
            mask: npt.NDArray[np.bool_] = np.asarray((tpl.alloc_matrix >= used).all(axis=1))
            if tpl.pool.limits:
                mask &= self.limits.mask(tpl)
            yield tpl, mask

    def _open_claim(self, ctx: PodContext) -> bool:
        for tpl, mask in self.launchable(ctx):
            cap = None if self._hostname_affine(ctx) else self.size_caps.get(tpl.name)
            masks = [mask]
            if cap is not None and bool((mask & cap).any()):
                # Prefer the capped sizes, but not at the price of the pod: the capped types may not
                # be offered in the zone a topology constraint pins (e.g. a spread onto a 4th zone).
                masks.insert(0, mask & cap)
            for candidate in masks:
                idx = np.flatnonzero(candidate).astype(np.int64)
                if tpl.pool.limits:
                    idx = self.limits.modest(tpl, idx)
                if not idx.size:
                    continue
                name = self.new_claim_name(tpl.name)
                claim = NodeClaim(name, tpl, tpl.base, idx, strict_min_values=self.strict_min_values)
                res = claim.can_add(ctx, self.topo)
                if isinstance(res, Fit):
                    break
                self.claim_seq[tpl.name] -= 1
            else:
                continue
            assert isinstance(res, Fit)
            claim.add(ctx, self.topo, res)
            self.limits.reserve(tpl, self.limits.max_capacity(claim))
            self.claims.append(claim)
            return True
        return False

    def _hostname_affine(self, ctx: PodContext) -> bool:
        """True when pod affinity on hostname ties this pod to others (it needs them on its node, or they need
        it on theirs): its claim must be free to grow past the size cap for them to join it."""
        if any(g.kind == AFFINITY and g.key == HOSTNAME_LABEL for g in ctx.owned):
            return True
        return any(g.kind == AFFINITY and g.key == HOSTNAME_LABEL for g in self.topo.matching(ctx.pod))

    def _schedule_constrained(self, ctx: PodContext) -> bool:
        while True:
            if self.try_existing(ctx) or self._try_claims(ctx) or self._open_claim(ctx):
                if self.retry:
                    self.retry.counted(self.topo.matching(ctx.pod))
                return True
            if not ctx.relax():
                return False
            self.register(ctx)

    def _retry(self) -> None:
        """Retry the pods that failed once placements after them could let them in (a RetryQueue).

        As Karpenter's queue re-pushes a pod that failed until a whole cycle places nothing: a pod with required
        affinity to a pod pending in the same batch fails until its target is placed (the target may sort later,
        or be a follower itself in a chain), and a spread may count pods placed after it. A pod is retried with
        its preferences back (Karpenter retries the pod as written) and only when a group it waits on has counted
        a new pod, so a solve where nothing failed, or where no placement helps, does no work here. A pod that
        fails a retry is explained again at the end (its first reason was written before the placements that
        made the retry worth it)."""
        q = self.retry
        again: dict[str, PodContext] = {}
        while due := q.take_due():
            for seq, ctx in due:
                fresh = PodContext(ctx.pod, self.keys)
                self.register(fresh)
                if self._schedule_constrained(fresh):
                    del self.errors[fresh.pod.key]
                    again.pop(fresh.pod.key, None)
                else:
                    q.wait(fresh, self._waits_on(fresh), seq)
                    again[fresh.pod.key] = fresh
        for key, ctx in again.items():
            self.errors[key] = self.explain(ctx)

    @staticmethod
    def _waits_on(ctx: PodContext) -> list[TopologyGroup]:
        """The groups whose new counts could let a failed pod in: its required spreads and pod affinities (the
        preferred ones were relaxed away before it failed)."""
        return [g for g in ctx.owned if g.kind != ANTI]

    def _try_slack(self, ctx: PodContext) -> bool:
        for claim in self.claims.candidates(ctx.vec):
            res = claim.can_add(ctx, self.topo)
            if isinstance(res, Fit):
                claim.add(ctx, self.topo, res)
                self.claims.update(claim)
                return True
        return False

    # ----------------------------------------------------------------- main
    def _compute_size_caps(self, ctxs: Sequence[PodContext]) -> None:
        """Keep pod-by-pod claims from growing past the most cost-efficient node size for these pods.

        Greedy first-fit lets the first claims swallow pods until only the largest (often metal) types fit,
        and those rarely have the best $/resource. For each pool, the type that would host the aggregate
        demand most cheaply is found, and new claims may only use types no dearer than it (unless nothing
        that cheap fits the pod).
        """
        self.size_caps: dict[str, npt.NDArray[np.bool_]] = {}
        if self.greedy or not ctxs:
            return
        demand = np.sum(np.array([c.vec for c in ctxs], dtype=np.float64), axis=0)
        biggest = np.max(np.array([c.vec for c in ctxs], dtype=np.int64), axis=0)
        for tpl in self.tpls:
            if not tpl.options:
                continue
            offs = [o.offering_for(tpl.base) or o.offerings[0] for o in tpl.options]
            prices = np.array([_cap_price(off) for off in offs])
            m = tpl.alloc_matrix
            fits = (m >= biggest).all(axis=1)
            if not fits.any():
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                need = np.where(demand > 0, demand / np.where(m > 0, m, 1), 0.0)
                need = np.where((m == 0) & (demand > 0), np.inf, need)
            est = prices * need.max(axis=1)
            est = np.where(fits, est, np.inf)
            best = int(np.argmin(est))
            cap = prices <= prices[best] + 1e-12
            if self.s.limited:
                cap |= np.array([off.limited for off in offs], dtype=bool)  # a reservation is always in reach
            self.size_caps[tpl.name] = cap

    def run(self, lower_bound: bool) -> Results:
        self._compute_size_caps([c for c in self.ctxs if self._is_constrained(c)])
        order = largest_first(self.ctxs, keys=self.keys)
        simple: list[PodContext] = []
        # spread groups dealt out to their domains up front go to bulk packing pinned to their domain
        dealt = split_spread_groups(self, order)
        for ctx in order:
            if id(ctx) in dealt:
                simple.append(ctx)
            elif self.greedy or self._is_constrained(ctx):
                if not self._schedule_constrained(ctx):
                    # explained now, while the open claims still reserve the largest size they could
                    # become: that reservation is what a limit refused, and finalizing shrinks it
                    self.errors[ctx.pod.key] = self.explain(ctx)
                    self.retry.wait(ctx, self._waits_on(ctx))
            elif not (self.nodes and self.try_existing(ctx)):
                simple.append(ctx)
        self._retry()
        self._finalize_open_claims()
        if not self.greedy:  # the Karpenter-style baseline keeps every claim's largest reservation to the end
            self._retry_under_limits()
        rest: list[PodContext] = []
        if self.claims:
            for ctx in simple:
                if not self._try_slack(ctx):
                    rest.append(ctx)
        else:
            rest = simple
        first_bulk, seq_before = len(self.claims), dict(self.claim_seq)
        failed = pack_in_bulk(self, rest)
        if self.any_min_values and self.strict_min_values:
            failed.extend(self._keep_min_values_in_bulk(first_bulk))
        for ctx in failed:
            self.errors[ctx.pod.key] = self.explain(ctx)
            full = self.reservation_full.get(ctx.pod.key)
            if full is not None:
                # the pool would take it but for a used-up reservation: say so rather than the generic reason
                why = reasons.reservation_full(*full)
                self.errors[ctx.pod.key] = [why if r.nodepool == full[0] else r for r in self.errors[ctx.pod.key]]
        if not self.greedy:
            repack_small_groups(self, first_bulk, seq_before)
        return self.results(lower_bound)

    def _retry_under_limits(self) -> None:
        """Pods a NodePool limit refused, tried again once the open claims are finalized: an open claim
        reserves the largest capacity it could still become, and its finalized type often leaves room under
        the limit for a later NodeClaim of that pool (or the pod fits another pool's claim opened since). As
        Karpenter's queue, a pass that places a pod is followed by another, until one places none."""
        by_key = {ctx.pod.key: ctx for ctx in self.ctxs}
        while True:
            refused = [
                by_key[k]
                for k, why in self.errors.items()
                if k in by_key and any(r.kind == ReasonKind.LIMIT for r in why)
            ]
            if not refused:
                return
            placed = 0
            for ctx in largest_first(refused, keys=self.keys):
                fresh = PodContext(ctx.pod, self.keys)
                self.register(fresh)
                if self._schedule_constrained(fresh):
                    del self.errors[fresh.pod.key]
                    self.retry.forget(fresh.pod.key)  # it may also wait on a spread or affinity
                    placed += 1
                else:
                    self.errors[fresh.pod.key] = self.explain(fresh)
            if not placed:
                return
            # the placements may count in groups failed pods wait on, and open claims to finalize
            self._retry()
            self._finalize_open_claims()

    def _finalize_open_claims(self) -> None:
        for claim in self.claims:
            if claim.chosen is not None:
                continue
            old = self.limits.max_capacity(claim)
            claim.finalize()
            self.limits.reserve(claim.tpl, old, -1)
            assert claim.chosen is not None
            self.limits.reserve(claim.tpl, claim.chosen.it.capacity)
        self.claims.rebuild()

    def _keep_min_values_in_bulk(self, first: int) -> list[PodContext]:
        """Strict minValues after bulk packing: a claim the cost packer made whose pods only types with too few
        values of a key can hold is dissolved, and its pods are placed pod by pod (where each claim keeps the
        minimum, or the pod is unschedulable on the pool). Returns the pods left unplaced."""
        misses: dict[tuple[str, Requirements, tuple[int, ...]], bool] = {}
        short: list[NodeClaim] = []
        for c in self.claims.items[first:]:
            if not c.has_min_values:
                continue
            key = (c.tpl.name, c.base_reqs, c.used)
            miss = misses.get(key)
            if miss is None:
                miss = misses[key] = c.min_values_shortfall(c.base_reqs, c.idx, c.used) is not None
            if miss:
                short.append(c)
        if not short:
            return []
        gone = {id(c) for c in short}
        self.claims.items = [c for c in self.claims.items if id(c) not in gone]
        self.claims.rebuild()
        for c in short:
            assert c.chosen is not None
            self.limits.reserve(c.tpl, c.chosen.it.capacity, -1)
        moved = {id(p) for c in short for p in c.pods}
        failed: list[PodContext] = []
        for ctx in largest_first([x for x in self.ctxs if id(x.pod) in moved], keys=self.keys):
            if not self._schedule_constrained(ctx):
                failed.append(ctx)
        self._finalize_open_claims()
        return failed

    def results(self, lower_bound: bool) -> Results:
        res = Results(
            pending=len(self.pods),
            unschedulable_reasons=self.errors,
            unusable_nodepool_reasons=dict(self.s.unusable_reasons),
        )
        label_cache: dict[tuple[str, str, str, str, Requirements, str | None], dict[str, str]] = {}
        alloc_cache: dict[str, Resources] = {}
        claims = list(self.claims)
        if self.s.limited:
            claims = settle(self, claims)
        options_of = self._alternatives(claims)
        if self.any_min_values and self.strict_min_values:
            claims, options_of = self._drop_truncated_below_min_values(claims, options_of)
        for claim, (names, kept_min) in zip(claims, options_of, strict=True):
            assert claim.chosen is not None and claim.offering is not None
            o, off = claim.chosen, claim.offering
            lk = (claim.tpl.name, o.it.name, off.zone, off.capacity_type, claim.reqs, pool_of(off))
            cached = label_cache.get(lk)
            if cached is None:
                labels: dict[str, str] = dict(claim.tpl.pool.labels)
                labels.update(o.it.labels)
                labels.update(claim.reqs.pinned_labels())
                labels.update(
                    {
                        NODEPOOL_LABEL: claim.tpl.name,
                        INSTANCE_TYPE_LABEL: o.it.name,
                        ZONE_LABEL: off.zone,
                        CAPACITY_TYPE_LABEL: off.capacity_type,
                    }
                )
                labels.update(reservation_labels(off))
                labels.pop(HOSTNAME_LABEL, None)
                cached = label_cache[lk] = dict(sorted(labels.items()))
            labels = dict(cached)
            # its pods' requests and the overhead of the DaemonSets that land on the chosen type
            used = Resources(dict(zip(self.keys, add(claim.used, o.ds_vec), strict=True)))
            allocatable = alloc_cache.get(o.it.name)
            if allocatable is None:
                allocatable = alloc_cache[o.it.name] = o.it.allocatable
            if off.limited:
                # pinned to the reservation (or the commitment's type): a launch must not fall off it
                names = [o.it.name]
            res.nodeclaims.append(
                PlannedNodeClaim(
                    name=claim.name,
                    nodepool=claim.tpl.name,
                    instance_type=o.it.name,
                    instance_type_options=names[:MAX_OPTIONS],
                    capacity_type=off.capacity_type,
                    zone=off.zone,
                    price_per_hour=float(off.list_price if off.list_price is not None else (off.price or 0.0)),
                    overlays=list(off.overlays),
                    labels=labels,
                    taints=list(claim.tpl.pool.taints),
                    startup_taints=list(claim.tpl.pool.startup_taints),
                    pods=list(claim.pods),
                    requests=used,
                    allocatable=allocatable,
                    min_values_relaxed=claim.min_values_relaxed or not kept_min,
                    **limited_fields(off),
                )
            )
        if self.s.limited:
            for c in res.nodeclaims:
                if c.effective_price_per_hour is None:
                    c.effective_price_per_hour = c.price_per_hour
        for node in self.nodes:
            res.existing.append(
                ExistingPlacement(node.name, node.spec.kind, list(node.pods), self.s.price_of(node.labels))
            )
        res.solve_seconds = time.perf_counter() - self.started
        if lower_bound:
            res.lower_bound = bound.lower_bound(self.s, res, self.pods)
            res.solve_seconds = time.perf_counter() - self.started
        return res

    def _drop_truncated_below_min_values(
        self, claims: list[NodeClaim], options_of: list[tuple[list[str], bool]]
    ) -> tuple[list[NodeClaim], list[tuple[list[str], bool]]]:
        """Strict minValues after the MAX_OPTIONS cut (Karpenter's Results.TruncateInstanceTypes): a claim whose
        listed options cannot keep every minimum (minValues on several keys whose values sit on different types
        can need more than MAX_OPTIONS of them) is not launched, and its pods are unschedulable on its pool with
        the key, the minimum and the values the options kept."""
        keep_claims: list[NodeClaim] = []
        keep_options: list[tuple[list[str], bool]] = []
        for claim, (names, kept_min) in zip(claims, options_of, strict=True):
            if kept_min or not claim.has_min_values:
                keep_claims.append(claim)
                keep_options.append((names, kept_min))
                continue
            by_name = {o.it.name: o for o in claim.tpl.options}
            short = shortfall_of([by_name[n] for n in names[:MAX_OPTIONS]], claim.base_reqs)
            assert short is not None
            why = reasons.min_values_not_met(claim.tpl.name, short.key, short.minimum, short.remaining)
            for p in claim.pods:
                self.errors[p.key] = [why]
        return keep_claims, keep_options

    def _alternatives(self, claims: Sequence[NodeClaim]) -> list[tuple[list[str], bool]]:
        """Per claim: its chosen type, then the other types that hold its pods, cheapest first (spot
        first), at most MAX_OPTIONS in all, and whether the list keeps the requirements' minValues. Claims
        with the same pool and requirements share one ranked table and are tested against it together, one
        numpy comparison per block of types."""
        groups: dict[tuple[str, Requirements], list[int]] = {}
        for i, claim in enumerate(claims):
            groups.setdefault((claim.tpl.name, claim.base_reqs), []).append(i)
        out: list[tuple[list[str], bool]] = [([], True) for _ in claims]
        for members in groups.values():
            first = claims[members[0]]
            if first.base_reqs.min_values():
                # claims alike (same chosen type and requests, as bulk packing makes many) share one list
                alike: dict[tuple[int, tuple[int, ...]], tuple[list[str], bool]] = {}
                for i in members:
                    c = claims[i]
                    assert c.chosen is not None
                    key = (c.chosen.index, c.used)
                    hit = alike.get(key)
                    if hit is None:
                        hit = alike[key] = self._alternatives_keeping_min_values(c)
                    out[i] = (list(hit[0]), hit[1])
                continue
            ordered_alloc_t, tnames, order = first.tpl.ranked(first.base_reqs)
            # types whose DaemonSets hold a host port of the claim's pods are no alternative for it
            allowed: npt.NDArray[np.bool_] | None = None
            if first.tpl.port_daemonsets:
                ports = [tuple(hp for p in claims[i].pods for hp in p.host_ports) for i in members]
                if any(ports):
                    allowed = np.array([first.tpl.port_mask(pt)[order] for pt in ports], dtype=bool).reshape(
                        len(members), len(order)
                    )
            used_t = (
                np.array([claims[i].used for i in members], dtype=np.int64)
                .reshape(len(members), len(self.keys))
                .T.copy()
            )
            # types are tested a block at a time, cheapest first, and a claim drops out once it has its
            # MAX_OPTIONS: small claims find them among the first block, so most of the catalog is never
            # compared with most claims
            hit_rows: list[npt.NDArray[np.int64]] = []
            hit_cols: list[npt.NDArray[np.int64]] = []
            need = np.full(len(members), MAX_OPTIONS, dtype=np.int64)
            pending = np.arange(len(members))
            for c0 in range(0, ordered_alloc_t.shape[1], _ALT_BLOCK):
                block_t = ordered_alloc_t[:, c0 : c0 + _ALT_BLOCK]
                pend_used = used_t[:, pending]
                fit = pend_used[0][:, None] <= block_t[0][None, :]
                for r in range(1, block_t.shape[0]):
                    fit &= pend_used[r][:, None] <= block_t[r][None, :]
                if allowed is not None:
                    fit &= allowed[pending, c0 : c0 + _ALT_BLOCK]
                fit &= np.cumsum(fit, axis=1) <= need[pending, None]
                rows, cols = np.nonzero(fit)
                hit_rows.append(pending[rows])
                hit_cols.append(cols + c0)
                need[pending] -= fit.sum(axis=1)
                pending = pending[need[pending] > 0]
                if not pending.size:
                    break
            # per claim, its hits in price order: blocks come cheapest first, and the sort is stable
            rows_all = np.concatenate(hit_rows) if hit_rows else np.zeros(0, dtype=np.int64)
            hit_cols.append(np.zeros(0, dtype=np.int64))
            by_claim = np.argsort(rows_all, kind="stable")
            col_list = np.concatenate(hit_cols)[by_claim].tolist()
            bounds = np.searchsorted(rows_all[by_claim], np.arange(len(members) + 1)).tolist()
            hits = [col_list[bounds[r] : bounds[r + 1]] for r in range(len(members))]
            for r, i in enumerate(members):
                chosen = claims[i].chosen
                assert chosen is not None
                name = chosen.it.name
                names = [tnames[j] for j in hits[r]]
                if name in names:
                    names.remove(name)
                    names.insert(0, name)
                    out[i] = (names, True)
                else:
                    names.insert(0, name)
                    out[i] = (names[:MAX_OPTIONS], True)
        return out

    def _alternatives_keeping_min_values(self, claim: NodeClaim) -> tuple[list[str], bool]:
        """A claim with minValues: every type that holds its pods is a candidate, and the MAX_OPTIONS cut keeps
        each minimum (packing.scheduling.minvalues.keep_min_values)."""
        assert claim.chosen is not None
        tpl, reqs = claim.tpl, claim.base_reqs
        order = holders(tpl, reqs, claim.used).tolist()
        # the cheapest few blocks nearly always meet the minimum; the whole list only when they do not
        head = [tpl.options[j] for j in order[: 4 * MAX_OPTIONS]]
        kept, met = keep_min_values(claim.chosen, head, reqs, MAX_OPTIONS)
        if not met and len(order) > len(head):
            kept, met = keep_min_values(claim.chosen, [tpl.options[j] for j in order], reqs, MAX_OPTIONS)
        return [o.it.name for o in kept], met


    def explain(self, ctx: PodContext) -> list[Reason]:
        """Why no pool takes the pod, one Reason per pool (packing.scheduling.explain)."""
        return explain(self, ctx)
