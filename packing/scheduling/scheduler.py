"""The scheduling simulation: where would pending pods go, and which nodes must be launched for them.

Structured like Karpenter's pkg/controllers/provisioning/scheduling: pods are taken largest first; each is tried
on existing nodes (and in-flight NodeClaims), then on NodeClaims opened earlier in this solve, then on a new
NodeClaim from the heaviest NodePool that accepts it, relaxing preferences one step at a time when nothing
takes it. Two departures make the plan cheaper than Karpenter's:

- pods with no topology involvement (no spread, pod (anti-)affinity or host ports, and selected by none)
  skip the pod-by-pod greedy for new capacity and are packed in bulk by packer.pack;
- pod-by-pod NodeClaims may not grow past the most cost-efficient node size for the pending pods, so
  first-fit does not end in oversized (often metal) types with poor $/resource.

solve() does no I/O and mutates nothing it was given, so the disruption engine can call it repeatedly with
nodes removed (exclude_nodes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import operator
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from packing.instancetype import CAPACITY_TYPE_SPOT, InstanceType, Offering
from packing.nodepool import (
    CAPACITY_TYPE_LABEL,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
    DaemonSet,
    ExistingNodeSpec,
    NodePool,
)
from packing.pods import HostPort, Pod
from packing.requirements import Requirement, Requirements
from packing.resources import CPU, MEMORY, PODS, Resources
from packing.scheduling.amounts import (
    beyond_reason,
    clamped_node,
    clamped_pod,
    no_options_reason,
    representable_types,
)
from packing.scheduling.packer import bin_totals, pack
from packing.scheduling.topology import AFFINITY, ANTI, SPREAD, Topology, TopologyGroup
from packing.taints import EPHEMERAL_TAINT_KEYS, Taint, first_untolerated

__all__ = ["ExistingNode", "NodeClaim", "PlannedNodeClaim", "Results", "Scheduler", "gc_paused"]

Vec = tuple[int, ...]
MAX_OPTIONS = 60
_NONE: frozenset[str] = frozenset()
_BASIC = frozenset({CPU, MEMORY, PODS})
# types per block when listing each claim's alternatives (see _Solve._alternatives)
_ALT_BLOCK = 128
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)


def largest_first(ctxs: Sequence[PodContext], *, keys: Sequence[str] = ()) -> list[PodContext]:
    """Pods by cpu, then memory, largest first; names break ties so the plan is deterministic.

    `keys`, the resource order of the contexts' vectors, lets the sort read them instead of calling each
    pod's request mapping twice (the same amounts; the calls dominate the sort on 10,000 pods)."""
    if CPU in keys and MEMORY in keys:
        ci, mi = list(keys).index(CPU), list(keys).index(MEMORY)
        return sorted(ctxs, key=lambda c: (-c.vec[ci], -c.vec[mi], c.pod.namespace, c.pod.name))
    return sorted(
        ctxs,
        key=lambda c: (-c.pod.requests.get(CPU, 0), -c.pod.requests.get(MEMORY, 0), c.pod.namespace, c.pod.name),
    )


def _fits(a: Vec, b: Vec) -> bool:
    for x, y in zip(a, b, strict=True):
        if x > y:
            return False
    return True


def _add(a: Vec, b: Vec) -> Vec:
    return tuple(map(operator.add, a, b))


def undominated(allocs: npt.NDArray[np.int64], prices: Sequence[float]) -> list[int]:
    """Indices of options that no other option beats (at least as big everywhere and no dearer).

    A dominated type is never the right choice for any set of pods, and dropping it shrinks the packer's work.
    """
    price = np.asarray(prices, dtype=np.float64)
    n = len(price)
    keep: list[int] = []
    order = np.lexsort((np.arange(n), price))
    for i in order.tolist():
        if keep:
            k = np.asarray(keep)
            if bool(((allocs[k] >= allocs[i]).all(axis=1) & (price[k] <= price[i])).any()):
                continue
        keep.append(i)
    keep.sort()
    return keep


def _fits_any(vecs: npt.NDArray[np.int64], allocs: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """For each row of `vecs`, whether some row of `allocs` holds it.

    The options are tried largest first, each only against the rows still unplaced: most rows fit one of
    the first few, so this touches far fewer (row, option) pairs than comparing all of them at once.
    """
    ok = np.zeros(vecs.shape[0], dtype=bool)
    if not allocs.size or not vecs.size:
        return ok
    size = (allocs / np.maximum(allocs.max(axis=0), 1)).sum(axis=1)
    todo = np.arange(vecs.shape[0])
    for j in np.argsort(-size, kind="stable").tolist():
        hit = np.all(vecs[todo] <= allocs[j], axis=1)
        ok[todo[hit]] = True
        todo = todo[~hit]
        if not todo.size:
            break
    return ok


def _vec(r: Mapping[str, int], keys: Sequence[str]) -> Vec:
    if isinstance(r, Resources):
        return r.vector(keys)
    return tuple(r.get(k, 0) for k in keys)


@dataclass(eq=False)
class TypeOption:
    """An instance type as one NodePool would launch it: allocatable net of that pool's DaemonSet overhead."""

    it: InstanceType
    labels: dict[str, str]
    alloc: Vec
    offerings: tuple[Offering, ...]
    index: int = 0
    _offer_cache: dict[tuple[Requirement | None, Requirement | None], Offering | None] = field(
        default_factory=dict
    )

    def offering_for(self, reqs: Requirements) -> Offering | None:
        """Cheapest available offering the requirements allow, spot first when spot is allowed."""
        zr = reqs.get(ZONE_LABEL)
        cr = reqs.get(CAPACITY_TYPE_LABEL)
        ck = (zr, cr)
        if ck in self._offer_cache:
            return self._offer_cache[ck]
        best = self._offering_for(zr, cr)
        self._offer_cache[ck] = best
        return best

    def _offering_for(self, zr: Requirement | None, cr: Requirement | None) -> Offering | None:
        best: Offering | None = None
        best_key: tuple[int, float, str, str] | None = None
        for o in self.offerings:
            if zr is not None and not zr.has(o.zone):
                continue
            if cr is not None and not cr.has(o.capacity_type):
                continue
            k = (0 if o.capacity_type == CAPACITY_TYPE_SPOT else 1, o.price or 0.0, o.zone, o.capacity_type)
            if best_key is None or k < best_key:
                best, best_key = o, k
        return best


# bulk packing's launchable (type, offering) pairs for some requirements, and their allocatable
_LaunchOptions = tuple[list[tuple[TypeOption, Offering]], npt.NDArray[np.int64]]


class PoolTemplate:
    """A NodePool prepared for one set of resource keys: base requirements, DaemonSet overhead, type options."""

    def __init__(
        self,
        pool: NodePool,
        catalog: Sequence[InstanceType],
        daemonsets: Sequence[DaemonSet],
        keys: Sequence[str],
        type_keys: frozenset[str],
    ) -> None:
        self.pool = pool
        self.name = pool.name
        self.keys = keys
        self.type_keys = type_keys
        base = pool.requirements.intersect(Requirements.from_labels(pool.labels))
        self.base = base.intersect(Requirements([Requirement.new(NODEPOOL_LABEL, "In", [pool.name])]))
        self.pool_keys = frozenset(k for k in self.base if k not in type_keys)
        overhead = Resources()
        for ds in daemonsets:
            if first_untolerated(pool.taints, ds.pod.tolerations) is not None:
                continue
            if not any(term.compatible(self.base) for term in ds.pod.node_requirement_terms()):
                continue
            overhead = overhead + ds.pod.requests
        self.ds_overhead = overhead
        self.ds_vec = _vec(overhead, keys)
        type_reqs = self.base.restricted(type_keys)
        zr, cr = type_reqs.get(ZONE_LABEL), type_reqs.get(CAPACITY_TYPE_LABEL)
        options: list[TypeOption] = []
        for it in catalog:
            labels = dict(it.labels)
            labels[INSTANCE_TYPE_LABEL] = it.name
            if not all(
                r.has(labels.get(k))
                for k, r in type_reqs.items()
                if k not in (ZONE_LABEL, CAPACITY_TYPE_LABEL)
            ):
                continue
            offs = tuple(
                o
                for o in it.offerings
                if o.available
                and o.price is not None
                and (zr is None or zr.has(o.zone))
                and (cr is None or cr.has(o.capacity_type))
            )
            if not offs:
                continue
            alloc = tuple(a - d for a, d in zip(_vec(it.allocatable, keys), self.ds_vec, strict=True))
            if any(x < 0 for x in alloc):
                continue
            options.append(TypeOption(it, labels, alloc, offs))
        options.sort(key=lambda o: (min(x.price or 0.0 for x in o.offerings), o.it.name))
        for i, o in enumerate(options):
            o.index = i
        self.options = options
        self.alloc_matrix = np.array([list(o.alloc) for o in options], dtype=np.int64).reshape(
            len(options), len(keys)
        )
        self._viable_cache: dict[Requirements, list[TypeOption]] = {}
        # NodeClaim.fix: requirements pinned to one (type, zone, capacity type), shared by every claim alike
        self.pin_cache: dict[tuple[Requirements, str, str, str], Requirements] = {}
        self._mask_cache: dict[Requirements, npt.NDArray[np.bool_]] = {}
        self._ranked_cache: dict[Requirements, tuple[npt.NDArray[np.int64], list[str], npt.NDArray[np.int64]]] = {}
        # per requirements, for pools without limits (limits make both depend on the solve's usage)
        self.frontier_cache: dict[Requirements, npt.NDArray[np.int64]] = {}
        self.launch_cache: dict[Requirements, _LaunchOptions] = {}
        self.universe: dict[str, frozenset[str]] = {}

    def viable(self, reqs: Requirements) -> list[TypeOption]:
        """Options whose labels and some offering satisfy the type-determined part of `reqs`, cheapest first."""
        tr = reqs.restricted(self.type_keys)
        hit = self._viable_cache.get(tr)
        if hit is None:
            plain = [(k, r) for k, r in tr.items() if k not in (ZONE_LABEL, CAPACITY_TYPE_LABEL)]
            zr, cr = tr.get(ZONE_LABEL), tr.get(CAPACITY_TYPE_LABEL)
            hit = []
            for o in self.options:
                if not all(r.has(o.labels.get(k)) for k, r in plain):
                    continue
                if (zr is not None or cr is not None) and not any(
                    (zr is None or zr.has(x.zone)) and (cr is None or cr.has(x.capacity_type))
                    for x in o.offerings
                ):
                    continue
                hit.append(o)
            self._viable_cache[tr] = hit
        return hit

    def ranked(self, reqs: Requirements) -> tuple[npt.NDArray[np.int64], list[str], npt.NDArray[np.int64]]:
        """The viable options' allocatable (resources along the first axis), names and indices, in the order
        NodeClaims list alternatives and finalize on: spot first, then by price, then name. It depends on the
        requirements alone (offerings do not change within a template), so it is kept for later solves."""
        hit = self._ranked_cache.get(reqs)
        if hit is None:
            ranked: list[tuple[int, float, str, int]] = []
            for alt in self.viable(reqs):
                aoff = alt.offering_for(reqs)
                if aoff is not None:
                    spot = 0 if aoff.capacity_type == CAPACITY_TYPE_SPOT else 1
                    ranked.append((spot, aoff.price or 0.0, alt.it.name, alt.index))
            ranked.sort()
            order = np.array([r[3] for r in ranked], dtype=np.int64)
            order.setflags(write=False)
            # resources along the first axis: one 2-D comparison per resource is far faster than a 3-D one
            # reduced over a short last axis
            alloc_t = np.ascontiguousarray(self.alloc_matrix[order].T)
            alloc_t.setflags(write=False)
            hit = self._ranked_cache[reqs] = (alloc_t, [r[2] for r in ranked], order)
        return hit

    def cheapest_holding(self, reqs: Requirements, idx: npt.NDArray[np.int64], used: Vec) -> TypeOption | None:
        """The first option in ranked order (spot first, then price, then name) among `idx` whose allocatable
        holds `used` and that has an offering for `reqs`: what NodeClaim.finalize launches."""
        alloc_t, _, order = self.ranked(reqs)
        if not order.size:
            return None
        member = np.zeros(len(self.options), dtype=bool)
        member[idx] = True
        ok = member[order]
        for r, u in enumerate(used):
            ok &= alloc_t[r] >= u
        first = int(np.argmax(ok))
        return self.options[int(order[first])] if ok[first] else None

    def viable_mask(self, reqs: Requirements) -> npt.NDArray[np.bool_]:
        tr = reqs.restricted(self.type_keys)
        hit = self._mask_cache.get(tr)
        if hit is None:
            hit = np.zeros(len(self.options), dtype=bool)
            for o in self.viable(tr):
                hit[o.index] = True
            self._mask_cache[tr] = hit
        return hit

    def pool_key_failure(self, reqs: Requirements) -> Requirement | None:
        """A pod requirement on a label that only the NodePool decides, and that it cannot satisfy."""
        for k in sorted(reqs):
            if k in self.type_keys:
                continue
            r = reqs[k]
            if k in self.pool_keys:
                if r.intersect(self.base[k]).is_empty():
                    return r
            elif not r.has(None):
                return r
        return None


class PodContext:
    """A pending pod with its effective (possibly relaxed) constraints for this solve."""

    def __init__(self, pod: Pod, keys: Sequence[str]) -> None:
        self.pod = pod
        self.vec = _vec(pod.requests, keys)
        # most pods have no preferences: skip the sorts (and their key calls) for them
        self.preferred_node = (
            sorted(pod.preferred_terms, key=lambda wt: -wt[0]) if pod.preferred_terms else []
        )
        self.preferred_affinity = (
            sorted(pod.preferred_affinity, key=lambda wt: wt[0]) if pod.preferred_affinity else []
        )
        self.preferred_anti = (
            sorted(pod.preferred_anti_affinity, key=lambda wt: wt[0]) if pod.preferred_anti_affinity else []
        )
        self.schedule_anyway = True  # ScheduleAnyway spread is honoured until relaxed away
        self.tolerate_prefer = False
        self.owned: list[TopologyGroup] = []
        self.terms: tuple[Requirements, ...] = ()
        self.relaxed = 0
        self._build_terms()

    def _build_terms(self) -> None:
        base = self.pod.node_requirement_terms()
        if self.preferred_node:
            pref = self.preferred_node[0][1]
            self.terms = tuple(t.intersect(pref) for t in base)
        else:
            self.terms = base

    def relax(self) -> bool:
        """Drop one preference, Karpenter's order; False when nothing is left to relax."""
        self.relaxed += 1
        if self.preferred_affinity:
            self.preferred_affinity.pop(0)
            return True
        if self.preferred_anti:
            self.preferred_anti.pop(0)
            return True
        if self.preferred_node:
            self.preferred_node.pop(0)
            self._build_terms()
            return True
        if self.schedule_anyway and any(s.when_unsatisfiable == "ScheduleAnyway" for s in self.pod.spread):
            self.schedule_anyway = False
            return True
        if not self.tolerate_prefer:
            self.tolerate_prefer = True
            return True
        return False


class ExistingNode:
    """A Node or in-flight NodeClaim with the room left on it."""

    def __init__(
        self, spec: ExistingNodeSpec, free: Vec, ports: list[HostPort], pool: NodePool | None
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.labels = dict(spec.labels)
        self.labels.setdefault(HOSTNAME_LABEL, spec.name)
        taints = spec.taints
        if not spec.initialized:
            # Karpenter ignores taints that will disappear once the node finishes initialising
            startup = set(pool.startup_taints) if pool else set()
            taints = tuple(t for t in taints if t not in startup and t.key not in EPHEMERAL_TAINT_KEYS)
        self.taints = taints
        self.free = free
        self.ports = ports
        self.pods: list[Pod] = []
        self.pos = -1

    def free_room(self) -> Vec:
        return self.free

    def can_add(self, ctx: PodContext, topo: Topology) -> str | None:
        if not _fits(ctx.vec, self.free):
            return "insufficient resources"
        t = first_untolerated(self.taints, ctx.pod.tolerations, include_prefer=not ctx.tolerate_prefer)
        if t is not None:
            return f"taint {t} not tolerated"
        if not any(term.matches(self.labels) for term in ctx.terms):
            return "node affinity"
        for hp in ctx.pod.host_ports:
            if any(hp.conflicts(o) for o in self.ports):
                return f"host port {hp.port}/{hp.protocol} in use"
        for g in ctx.owned:
            d = self.labels.get(g.key)
            if d is None or not g.allowed([d], self_match=g.selects(ctx.pod.namespace, ctx.pod.labels)):
                return g.describe()
        for g in topo.anti_groups:
            if g.owners and g.selects(ctx.pod.namespace, ctx.pod.labels):
                d = self.labels.get(g.key)
                if d is not None and g.owners.get(d, 0) > 0:
                    return g.describe()
        return None

    def add(self, ctx: PodContext, topo: Topology) -> None:
        self.free = tuple(map(operator.sub, self.free, ctx.vec))
        self.ports.extend(ctx.pod.host_ports)
        self.pods.append(ctx.pod)
        topo.record(ctx.pod, ctx.owned, self.labels)


class NodeClaim:
    """A node this solve would launch; its type stays open (narrowing) until finalize().

    The compatible types are kept as an index array into the pool's options so that narrowing is a numpy mask,
    not a Python loop over a thousand types for every pod.
    """

    def __init__(
        self,
        name: str,
        tpl: PoolTemplate,
        reqs: Requirements,
        idx: npt.NDArray[np.int64],
        *,
        cap_max: Vec | None = None,
    ) -> None:
        self.name = name
        self.tpl = tpl
        self.reqs = reqs
        self.idx = idx
        self.used: Vec = tpl.ds_vec
        self.pods: list[Pod] = []
        self.ports: list[HostPort] = []
        # callers that already know the largest allocatable among idx (one type) pass it: no numpy per claim
        self.cap_max: Vec = (
            cap_max if cap_max is not None else tuple(int(x) for x in tpl.alloc_matrix[idx].max(axis=0))
        )
        self.chosen: TypeOption | None = None
        self.offering: Offering | None = None
        self.base_reqs = reqs
        self.pos = -1

    def free_room(self) -> Vec:
        return tuple(map(operator.sub, self.cap_max, self.used))

    @property
    def options(self) -> list[TypeOption]:
        return [self.tpl.options[i] for i in self.idx.tolist()]

    @property
    def labels_for_topology(self) -> dict[str, str]:
        out = self.reqs.pinned_labels()
        out[HOSTNAME_LABEL] = self.name
        return out

    def can_add(self, ctx: PodContext, topo: Topology) -> tuple[Requirements, npt.NDArray[np.int64]] | str:
        used = _add(self.used, ctx.vec)
        if not _fits(used, self.cap_max):
            return "insufficient resources"
        tpl = self.tpl
        if tpl.pool.taints and first_untolerated(
            tpl.pool.taints, ctx.pod.tolerations, include_prefer=not ctx.tolerate_prefer
        ):
            return "taint"
        for hp in ctx.pod.host_ports:
            if any(hp.conflicts(o) for o in self.ports):
                return f"host port {hp.port}/{hp.protocol} in use"
        last = "node affinity"
        for term in ctx.terms:
            if term:
                if self.reqs.conflict(term) is not None:
                    continue
                reqs = self.reqs.intersect(term)
                if tpl.pool_key_failure(reqs) is not None:
                    continue
            else:
                reqs = self.reqs
            pinned = topology_pins(ctx, topo, self.name, reqs, tpl)
            if isinstance(pinned, str):
                last = pinned
                continue
            reqs = pinned
            idx = self.idx
            if reqs is not self.reqs and reqs != self.reqs:
                idx = idx[tpl.viable_mask(reqs)[idx]]
            fit = idx[(tpl.alloc_matrix[idx] >= np.asarray(used, dtype=np.int64)).all(axis=1)]
            if fit.size:
                return reqs, fit
            last = "insufficient resources"
        return last

    def add(self, ctx: PodContext, topo: Topology, reqs: Requirements, idx: npt.NDArray[np.int64]) -> None:
        self.used = _add(self.used, ctx.vec)
        self.reqs = reqs
        if idx.size != self.idx.size:
            self.idx = idx
            self.cap_max = tuple(int(x) for x in self.tpl.alloc_matrix[idx].max(axis=0))
        self.pods.append(ctx.pod)
        self.ports.extend(ctx.pod.host_ports)
        topo.record(ctx.pod, ctx.owned, self.labels_for_topology)

    def finalize(self) -> None:
        """Pick the cheapest fitting type and offering (spot first), and pin the claim to it."""
        o = self.tpl.cheapest_holding(self.reqs, self.idx, self.used)
        off = o.offering_for(self.reqs) if o is not None else None
        if o is None or off is None:
            raise RuntimeError(f"nodeclaim {self.name} has no launchable offering")
        self.fix(o, off)

    def fix(self, o: TypeOption, off: Offering) -> None:
        self.chosen, self.offering = o, off
        self.base_reqs = self.reqs
        ck = (self.reqs, o.it.name, off.zone, off.capacity_type)
        pinned = self.tpl.pin_cache.get(ck)
        if pinned is None:
            pins = Requirements(
                [
                    Requirement.new(ZONE_LABEL, "In", [off.zone]),
                    Requirement.new(CAPACITY_TYPE_LABEL, "In", [off.capacity_type]),
                    Requirement.new(INSTANCE_TYPE_LABEL, "In", [o.it.name]),
                ]
            )
            pinned = self.tpl.pin_cache[ck] = self.reqs.intersect(pins)
        self.reqs = pinned
        self.idx = np.array([o.index], dtype=np.int64)
        self.cap_max = o.alloc


class _HasRoom(Protocol):
    pos: int

    def free_room(self) -> Vec: ...


RoomT = TypeVar("RoomT", bound=_HasRoom)


class _FirstFitIndex(Generic[RoomT]):
    """Nodes or NodeClaims in first-fit order, with their free rooms as the rows of one matrix.

    First-fit over thousands of candidates would test every one for every pod in Python; here one numpy
    comparison finds, in order, those whose free room holds the pod. Callers add the pod to at most one
    candidate and then stop iterating, so the list found when iteration starts stays exact (update() is
    called after every change of an item's room).
    """

    def __init__(self, items: Iterable[RoomT] = ()) -> None:
        self.items: list[RoomT] = []
        self._free = np.zeros((0, 0), dtype=np.int64)
        for it in items:
            self.append(it)

    def append(self, item: RoomT) -> None:
        item.pos = len(self.items)
        self.items.append(item)
        free = item.free_room()
        if self._free.shape[1] != len(free) or item.pos >= self._free.shape[0]:
            grown = np.zeros((max(16, 2 * item.pos + 1), len(free)), dtype=np.int64)
            if self._free.shape[1] == len(free):
                grown[: item.pos] = self._free[: item.pos]
            self._free = grown
        self._free[item.pos] = free

    def update(self, item: RoomT) -> None:
        self._free[item.pos] = item.free_room()

    def rebuild(self) -> None:
        items = self.items
        self.items = []
        self._free = np.zeros((0, 0), dtype=np.int64)
        for c in items:
            self.append(c)

    def candidates(self, vec: Vec) -> Iterator[RoomT]:
        n = len(self.items)
        if not n:
            return iter(())
        hold = np.flatnonzero((self._free[:n] >= np.asarray(vec, dtype=np.int64)).all(axis=1))
        items = self.items
        return iter([items[i] for i in hold.tolist()])

    def __iter__(self) -> Iterator[RoomT]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def topology_pins(
    ctx: PodContext, topo: Topology, hostname: str, reqs: Requirements, tpl: PoolTemplate
) -> Requirements | str:
    """Check the pod's topology groups against a NodeClaim and pin the claim's domains where needed."""
    pod = ctx.pod
    involved: list[TopologyGroup] = list(ctx.owned)
    matched = topo.matching(pod)
    keys = {g.key for g in involved} | {g.key for g in matched}
    for g in topo.anti_groups:
        if g.owners and g.selects(pod.namespace, pod.labels):
            keys.add(g.key)
    for key in sorted(keys):
        if key == HOSTNAME_LABEL:
            dom = [hostname]
            for g in involved:
                if g.key == key and not g.allowed(dom, self_match=g.selects(pod.namespace, pod.labels)):
                    return g.describe()
            for g in topo.anti_groups:
                if g.key == key and g.owners.get(hostname, 0) and g.selects(pod.namespace, pod.labels):
                    return g.describe()
            continue
        current = reqs.get(key)
        universe = topo_universe(tpl, key)
        cands = sorted(v for v in universe if current is None or current.has(v))
        order: list[str] | None = None
        for g in involved:
            if g.key != key:
                continue
            allowed = g.allowed(cands, self_match=g.selects(pod.namespace, pod.labels))
            if not allowed:
                return g.describe()
            if order is None:
                order = allowed
            keep = set(allowed)
            cands = [c for c in cands if c in keep]
            order = [c for c in order if c in keep]
        for g in topo.anti_groups:
            if g.key == key and g.owners and g.selects(pod.namespace, pod.labels):
                cands = [c for c in cands if not g.owners.get(c, 0)]
                if not cands:
                    return g.describe()
        if not cands:
            return f"no {key} domain available"
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


def topo_universe(tpl: PoolTemplate, key: str) -> frozenset[str]:
    """Every value `key` can take on a node of this pool (zones and capacity types come from offerings)."""
    hit = tpl.universe.get(key)
    if hit is None:
        vals: set[str] = set()
        for o in tpl.options:
            if key == ZONE_LABEL:
                vals.update(x.zone for x in o.offerings)
            elif key == CAPACITY_TYPE_LABEL:
                vals.update(x.capacity_type for x in o.offerings)
            elif key in o.labels:
                vals.add(o.labels[key])
        r = tpl.base.get(key)
        if r is not None and not r.complement:
            vals |= set(r.values)
        hit = frozenset(vals)
        tpl.universe[key] = hit
    return hit


@dataclass
class PlannedNodeClaim:
    name: str
    nodepool: str
    instance_type: str
    instance_type_options: list[str]
    capacity_type: str
    zone: str
    price_per_hour: float
    labels: dict[str, str]
    taints: list[Taint]
    startup_taints: list[Taint]
    pods: list[Pod]
    requests: Resources
    allocatable: Resources


@dataclass
class ExistingPlacement:
    name: str
    kind: str
    pods: list[Pod]
    price_per_hour: float | None


@dataclass
class Results:
    nodeclaims: list[PlannedNodeClaim] = field(default_factory=list)
    existing: list[ExistingPlacement] = field(default_factory=list)
    unschedulable: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    pending: int = 0
    solve_seconds: float = 0.0
    lower_bound: float | None = None
    # NodePools the engine cannot launch from, with why (no instance type satisfies them, or building their
    # options failed): the solve went on with the other pools. Empty when every pool is usable.
    unusable_nodepools: dict[str, str] = field(default_factory=dict)

    @property
    def cost_per_hour(self) -> float:
        return float(round(sum(c.price_per_hour for c in self.nodeclaims), 6))

    @property
    def existing_cost_per_hour(self) -> float:
        return float(round(sum(e.price_per_hour or 0.0 for e in self.existing), 6))

    @property
    def scheduled(self) -> int:
        return self.pending - len(self.unschedulable)


class Scheduler:
    """Plans capacity for pending pods. Construct once; solve() is pure and may be called many times."""

    def __init__(
        self,
        nodepools: Sequence[NodePool],
        instance_types: Sequence[InstanceType],
        existing_nodes: Sequence[ExistingNodeSpec] = (),
        running_pods: Sequence[Pod] = (),
        daemonsets: Sequence[DaemonSet] = (),
    ) -> None:
        # heavier pools first, then by name so that the plan never depends on input order
        self.nodepools = sorted(nodepools, key=lambda p: (-p.weight, p.name))
        # amounts beyond MAX_AMOUNT are not computed with (see packing.resources.MAX_AMOUNT)
        self.instance_types = representable_types(instance_types)
        self.existing_nodes = [clamped_node(n) for n in existing_nodes]
        self.running_pods = [clamped_pod(p) for p in running_pods]
        self.daemonsets = [
            ds if ds.pod.requests.in_range() else dataclasses.replace(ds, pod=clamped_pod(ds.pod))
            for ds in daemonsets
        ]
        # pool name -> why the engine cannot launch from it, filled as templates are built (see templates())
        self.unusable: dict[str, str] = {}
        tk: set[str] = {ZONE_LABEL, CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL}
        for it in self.instance_types:
            tk.update(it.labels)
        tk.discard(NODEPOOL_LABEL)
        tk.discard(HOSTNAME_LABEL)
        self.type_keys = frozenset(tk)
        self._tpl_cache: dict[tuple[str, ...], list[PoolTemplate]] = {}
        self._price: dict[tuple[str, str, str], float] = {}
        for it in self.instance_types:
            for o in it.offerings:
                if o.price is not None:
                    self._price[(it.name, o.zone, o.capacity_type)] = o.price

    def price_of(self, labels: Mapping[str, str]) -> float | None:
        return self._price.get(
            (
                labels.get(INSTANCE_TYPE_LABEL, ""),
                labels.get(ZONE_LABEL, ""),
                labels.get(CAPACITY_TYPE_LABEL, ""),
            )
        )

    def templates(self, keys: tuple[str, ...]) -> list[PoolTemplate]:
        """The pools prepared for these resource keys, heaviest first. A pool whose preparation fails is left
        out (and named in `unusable` with the error) so that every other pool is still planned; a pool with no
        launchable type stays in (its pods' reasons say so) and is named in `unusable` too."""
        hit = self._tpl_cache.get(keys)
        if hit is None:
            hit = []
            for p in self.nodepools:
                try:
                    tpl = PoolTemplate(p, self.instance_types, self.daemonsets, keys, self.type_keys)
                except Exception as e:  # noqa: BLE001 - contained: one broken pool must not stop the others
                    self.unusable.setdefault(p.name, f"the engine could not prepare it ({type(e).__name__}: {e})")
                    continue
                if not tpl.options:
                    self.unusable.setdefault(p.name, no_options_reason(tpl, self.instance_types))
                hit.append(tpl)
            self._tpl_cache[keys] = hit
        return hit

    def unusable_nodepools(self, keys: Sequence[str] = ()) -> dict[str, str]:
        """Pools the engine cannot launch from, with why, once templates for `keys` (with cpu, memory and
        pods) are built: what Results.unusable_nodepools reports, for callers that run no solve."""
        self.templates(tuple(sorted({CPU, MEMORY, PODS, *keys})))
        return dict(self.unusable)

    def solve(
        self,
        pods: Sequence[Pod],
        *,
        exclude_nodes: Collection[str] = (),
        lower_bound: bool = False,
        strategy: str = "cost",
    ) -> Results:
        """Plan for `pods`. exclude_nodes: existing nodes to pretend are gone (what-if for disruption).

        strategy="greedy" sends every pod through Karpenter's pod-by-pod first-fit instead of the cost packer;
        the benchmark uses it as the Karpenter-style baseline.
        """
        if strategy not in ("cost", "greedy"):
            raise ValueError(f"unknown strategy {strategy!r}")
        with gc_paused():
            return _Solve(self, pods, frozenset(exclude_nodes), greedy=strategy == "greedy").run(lower_bound)


_gc_lock = threading.Lock()
_gc_holders = 0  # solves (on any thread) inside gc_paused right now
_gc_was_enabled = False  # the collector's state when the first of them entered


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off the cyclic garbage collector for one solve (or one consolidation run, which nests solves).

    A solve allocates tens of thousands of short-lived objects that reference counting frees, and no cycles
    worth collecting; each allocation burst still triggers collections that walk everything the process
    holds (catalog, pools), about a tenth of a 10,000-pod solve.

    The collector is process-wide, so under threads the pause is counted: the first solve to enter records
    whether collection was on and switches it off, the last one to leave restores that state. Nested pauses
    (a consolidation run's solves) and solves on several threads at once therefore never switch the
    collector back on under a solve that is still running, nor leave it off after the last one.
    """
    global _gc_holders, _gc_was_enabled
    with _gc_lock:
        if _gc_holders == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_holders += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders -= 1
            if _gc_holders == 0 and _gc_was_enabled:
                gc.enable()


class _Solve:
    def __init__(
        self, s: Scheduler, pods: Sequence[Pod], exclude: frozenset[str], *, greedy: bool = False
    ) -> None:
        self.s = s
        self.greedy = greedy
        self.started = time.perf_counter()
        keyset: set[str] = {CPU, MEMORY, PODS}
        self.errors: dict[str, list[tuple[str, str]]] = {}
        beyond: list[Pod] = []
        for p in pods:
            keyset.update(p.requests)
            if not p.requests.in_range():
                beyond.append(p)
        for ds in s.daemonsets:
            keyset.update(ds.pod.requests)
        self.keys = tuple(sorted(keyset))
        self.tpls = s.templates(self.keys)
        self.pods = list(pods)
        if beyond:
            for p in beyond:
                self.errors[p.key] = [("", beyond_reason(p.requests))]
            gone = {id(p) for p in beyond}
            self.placeable = [p for p in self.pods if id(p) not in gone]
        else:
            self.placeable = self.pods
        self.topo = Topology()
        self.claims: _FirstFitIndex[NodeClaim] = _FirstFitIndex()
        self.claim_seq: dict[str, int] = {}
        # pool usage toward limits: capacity of nodes and in-flight claims already belonging to the pool
        self.limit_used: dict[str, dict[str, int]] = {p.name: {} for p in s.nodepools}
        nodes = [n for n in s.existing_nodes if n.name not in exclude]
        running_by_node: dict[str, list[Pod]] = {}
        for p in s.running_pods:
            if p.node_name and p.node_name not in exclude:
                running_by_node.setdefault(p.node_name, []).append(p)
        pools = {p.name: p for p in s.nodepools}
        self.nodes: list[ExistingNode] = []
        for spec in sorted(nodes, key=lambda n: (0 if n.kind == "Node" else 1, n.name)):
            used = Resources()
            ports: list[HostPort] = []
            for p in running_by_node.get(spec.name, ()):
                used = used + p.requests
                ports.extend(p.host_ports)
            free = tuple(
                a - u for a, u in zip(_vec(spec.allocatable, self.keys), _vec(used, self.keys), strict=True)
            )
            pool = pools.get(spec.nodepool or "")
            self.nodes.append(ExistingNode(spec, free, ports, pool))
            if pool is not None:
                lu = self.limit_used[pool.name]
                for k, v in (spec.capacity or spec.allocatable).items():
                    lu[k] = lu.get(k, 0) + v
                lu["nodes"] = lu.get("nodes", 0) + 1000
        self.node_by_name = {n.name: n for n in self.nodes}
        self.node_index = _FirstFitIndex(self.nodes)
        self._domain_cache: dict[tuple[str, tuple[Requirements, ...]], frozenset[str]] = {}
        self._setup_topology(running_by_node)

    # ----------------------------------------------------------------- topology
    def _setup_topology(self, running_by_node: Mapping[str, list[Pod]]) -> None:
        self.ctxs = [PodContext(p, self.keys) for p in self.placeable]
        for ctx in self.ctxs:
            self._register(ctx)
        for node_name, pods in running_by_node.items():
            node = self.node_by_name.get(node_name)
            if node is None:
                continue
            for p in pods:
                owned = [
                    self.topo.group(
                        ANTI, t.topology_key, t.selector, t.namespaces or frozenset({p.namespace})
                    )
                    for t in p.anti_affinity
                ]
                self.topo.record(p, owned, node.labels)

    def _register(self, ctx: PodContext) -> None:
        p = ctx.pod
        own_ns = frozenset({p.namespace})
        groups: list[TopologyGroup] = []
        for sc in p.spread:
            if sc.when_unsatisfiable == "ScheduleAnyway" and not ctx.schedule_anyway:
                continue
            domains: frozenset[str] = frozenset()
            if sc.topology_key != HOSTNAME_LABEL:
                domains = self._spread_domains(sc.topology_key, ctx.terms)
            groups.append(
                self.topo.group(
                    SPREAD, sc.topology_key, sc.selector, own_ns, sc.max_skew, sc.min_domains, domains
                )
            )
        for t in p.affinity:
            groups.append(self.topo.group(AFFINITY, t.topology_key, t.selector, t.namespaces or own_ns))
        for t in p.anti_affinity:
            groups.append(self.topo.group(ANTI, t.topology_key, t.selector, t.namespaces or own_ns))
        for _, t in ctx.preferred_affinity:
            groups.append(self.topo.group(AFFINITY, t.topology_key, t.selector, t.namespaces or own_ns))
        for _, t in ctx.preferred_anti:
            groups.append(
                self.topo.group(ANTI, t.topology_key, t.selector, t.namespaces or own_ns, symmetric=False)
            )
        ctx.owned = groups

    def _spread_domains(self, key: str, terms: tuple[Requirements, ...]) -> frozenset[str]:
        """Domains a spread constraint counts: values reachable through the pools or present on nodes,
        restricted to those the pod's node affinity allows (Kubernetes' nodeAffinityPolicy: Honor)."""
        ck = (key, terms)
        hit = self._domain_cache.get(ck)
        if hit is None:
            vals: set[str] = set()
            for tpl in self.tpls:
                vals.update(topo_universe(tpl, key))
            for n in self.nodes:
                nv = n.labels.get(key)
                if nv is not None:
                    vals.add(nv)
            hit = frozenset(v for v in vals if any(t.get(key) is None or t[key].has(v) for t in terms))
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

    # ----------------------------------------------------------------- limits
    def _limit_ok(self, tpl: PoolTemplate, cap: Resources, extra_nodes: int = 1) -> bool:
        limits = tpl.pool.limits
        if not limits:
            return True
        used = self.limit_used[tpl.name]
        for k, lim in limits.items():
            add = extra_nodes * 1000 if k == "nodes" else cap.get(k, 0)
            if used.get(k, 0) + add > lim:
                return False
        return True

    def _reserve(self, tpl: PoolTemplate, cap: Mapping[str, int], sign: int = 1) -> None:
        if not tpl.pool.limits:
            return
        used = self.limit_used[tpl.name]
        for k in tpl.pool.limits:
            add = 1000 if k == "nodes" else cap.get(k, 0)
            used[k] = used.get(k, 0) + sign * add

    def _limit_mask(self, tpl: PoolTemplate) -> npt.NDArray[np.bool_]:
        """Options whose capacity still fits under the pool's limits."""
        limits = tpl.pool.limits
        if not limits:
            return np.ones(len(tpl.options), dtype=bool)
        used = self.limit_used[tpl.name]
        lkeys = sorted(limits)
        # a limit beyond int64 (e.g. memory: 8Ei in milli-units) is compared as int64's maximum: exact, since
        # every capacity is at most MAX_AMOUNT
        room = np.array([max(_INT64_MIN, min(_INT64_MAX, limits[k] - used.get(k, 0))) for k in lkeys], dtype=np.int64)
        caps = np.array(
            [[1000 if k == "nodes" else o.it.capacity.get(k, 0) for k in lkeys] for o in tpl.options],
            dtype=np.int64,
        ).reshape(len(tpl.options), len(lkeys))
        return np.asarray((caps <= room).all(axis=1))

    def _modest_under_limits(self, tpl: PoolTemplate, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """A claim in a pool with limits reserves the largest capacity among its options until it is
        finalized (so limits hold whatever type is picked). Keeping every size there would let the
        first claims reserve the whole limit and starve the rest — Karpenter's known behaviour — so
        keep only options up to 4x the smallest option's capacity in each limited resource."""
        keys = [k for k in tpl.pool.limits or {} if k != "nodes"]
        if not keys or idx.size <= 1:
            return idx
        caps = np.array([[tpl.options[i].it.capacity.get(k, 0) for k in keys] for i in idx.tolist()],
                        dtype=np.int64).reshape(idx.size, len(keys))
        ceiling = caps.min(axis=0) * 4
        keep = (caps <= np.maximum(ceiling, 1)).all(axis=1)
        return idx[keep] if keep.any() else idx

    @staticmethod
    def _max_capacity(claim: NodeClaim) -> dict[str, int]:
        out: dict[str, int] = {}
        if not claim.tpl.pool.limits:
            return out
        for o in claim.options:
            for k, v in o.it.capacity.items():
                if v > out.get(k, 0):
                    out[k] = v
        return out

    # ----------------------------------------------------------------- placement
    def _try_existing(self, ctx: PodContext) -> bool:
        for node in self.node_index.candidates(ctx.vec):
            if node.can_add(ctx, self.topo) is None:
                node.add(ctx, self.topo)
                self.node_index.update(node)
                return True
        return False

    def _try_claims(self, ctx: PodContext) -> bool:
        for claim in self.claims.candidates(ctx.vec):
            res = claim.can_add(ctx, self.topo)
            if isinstance(res, str):
                continue
            limited = claim.chosen is None and bool(claim.tpl.pool.limits)
            old = self._max_capacity(claim) if limited else None
            claim.add(ctx, self.topo, *res)
            self.claims.update(claim)
            if old is not None:
                self._reserve(claim.tpl, old, -1)
                self._reserve(claim.tpl, self._max_capacity(claim))
            return True
        return False

    def _new_claim_name(self, pool: str) -> str:
        n = self.claim_seq.get(pool, 0) + 1
        self.claim_seq[pool] = n
        return f"{pool}-{n}"

    def _open_claim(self, ctx: PodContext) -> bool:
        for tpl in self.tpls:
            if first_untolerated(
                tpl.pool.taints, ctx.pod.tolerations, include_prefer=not ctx.tolerate_prefer
            ):
                continue
            if not tpl.options:
                continue
            used = np.asarray(_add(tpl.ds_vec, ctx.vec), dtype=np.int64)
            mask = (tpl.alloc_matrix >= used).all(axis=1)
            if tpl.pool.limits:
                mask &= self._limit_mask(tpl)
            cap = self.size_caps.get(tpl.name)
            masks = [mask]
            if cap is not None and bool((mask & cap).any()):
                # Prefer the capped sizes, but not at the price of the pod: the capped types may not
                # be offered in the zone a topology constraint pins (e.g. a spread onto a 4th zone).
                masks.insert(0, mask & cap)
            for candidate in masks:
                idx = np.flatnonzero(candidate).astype(np.int64)
                if tpl.pool.limits:
                    idx = self._modest_under_limits(tpl, idx)
                if not idx.size:
                    continue
                name = self._new_claim_name(tpl.name)
                claim = NodeClaim(name, tpl, tpl.base, idx)
                res = claim.can_add(ctx, self.topo)
                if not isinstance(res, str):
                    break
                self.claim_seq[tpl.name] -= 1
            else:
                continue
            claim.add(ctx, self.topo, *res)
            self._reserve(tpl, self._max_capacity(claim))
            self.claims.append(claim)
            return True
        return False

    def _schedule_constrained(self, ctx: PodContext) -> bool:
        while True:
            if self._try_existing(ctx) or self._try_claims(ctx) or self._open_claim(ctx):
                return True
            if not ctx.relax():
                return False
            self._register(ctx)

    # ----------------------------------------------------------------- bulk packing
    def _pool_candidates(
        self, ctx: PodContext, excluded: Collection[str], cache: dict[tuple[object, ...], object]
    ) -> list[tuple[PoolTemplate, Requirements, npt.NDArray[np.int64]]]:
        """Pools (heaviest first) whose taints and requirements admit the pod, with their size frontier."""
        sig = (ctx.pod.tolerations, ctx.terms, ctx.tolerate_prefer, frozenset(excluded))
        hit = cache.get(sig)
        if hit is None:
            found: list[tuple[PoolTemplate, Requirements, npt.NDArray[np.int64]]] = []
            for tpl in self.tpls:
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
                    found.append((tpl, reqs, self._size_frontier(tpl, reqs)))
            cache[sig] = hit = found
        assert isinstance(hit, list)
        return hit

    def _size_frontier(self, tpl: PoolTemplate, reqs: Requirements) -> npt.NDArray[np.int64]:
        """Allocatable of the viable options (within limits) that no other is at least as big as: only
        these matter for "does it fit anywhere". Without limits it depends on the requirements alone and is
        kept on the template for later solves."""
        if not tpl.pool.limits:
            hit = tpl.frontier_cache.get(reqs)
            if hit is not None:
                return hit
        mask = tpl.viable_mask(reqs)
        if tpl.pool.limits:
            mask = mask & self._limit_mask(tpl)
        m = tpl.alloc_matrix[mask]
        m = m[undominated(m, [0.0] * len(m))] if len(m) else m
        if not tpl.pool.limits:
            m.setflags(write=False)  # shared by later solves
            tpl.frontier_cache[reqs] = m
        return m

    def _choose_pools(
        self, ctxs: list[PodContext], excluded: dict[int, set[str]]
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
                cands = self._pool_candidates(members[0], excluded.get(id(members[0]), ()), cache)
                vecs = np.array([c.vec for c in members], dtype=np.int64).reshape(
                    len(members), len(self.keys)
                )
                left = np.ones(len(members), dtype=bool)
                for tpl, reqs, m in cands:
                    if not m.size or not left.any():
                        continue
                    ok = left & _fits_any(vecs, m)
                    for i in np.flatnonzero(ok).tolist():
                        chosen.append((members[i], tpl, reqs))
                    left &= ~ok
                for i in np.flatnonzero(left).tolist():
                    ctx = members[i]
                    # nothing takes it as it stands: relax a preference and try again, else give up
                    (todo if ctx.relax() else failed).append(ctx)
        return chosen, failed

    def _try_slack(self, ctx: PodContext) -> bool:
        for claim in self.claims.candidates(ctx.vec):
            res = claim.can_add(ctx, self.topo)
            if not isinstance(res, str):
                claim.add(ctx, self.topo, *res)
                self.claims.update(claim)
                return True
        return False

    def _bulk(self, ctxs: list[PodContext]) -> list[PodContext]:
        """Pack simple pods into new claims per (pool, requirements); returns the pods left over."""
        excluded: dict[int, set[str]] = {}
        todo = ctxs
        failed: list[PodContext] = []
        for _round in range(len(self.tpls) + 2):
            if not todo:
                break
            chosen, gave_up = self._choose_pools(todo, excluded)
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
                todo.extend(self._pack_group(tpl_of[pname], reqs, members, excluded))
        return failed + todo

    def _launch_options(
        self, tpl: PoolTemplate, reqs: Requirements
    ) -> tuple[list[tuple[TypeOption, Offering]], npt.NDArray[np.int64]]:
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
        allocs = np.array([list(o.alloc) for o, _ in opts], dtype=np.int64).reshape(len(opts), len(self.keys))
        if tpl.pool.limits:
            lm = self._limit_mask(tpl)
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

    def _pack_group(
        self, tpl: PoolTemplate, reqs: Requirements, members: list[PodContext], excluded: dict[int, set[str]]
    ) -> list[PodContext]:
        opts, allocs = self._launch_options(tpl, reqs)
        prices = [off.price or 0.0 for _, off in opts]
        podm = np.array([c.vec for c in members], dtype=np.int64).reshape(len(members), len(self.keys))
        fits_any = np.zeros(len(members), dtype=bool)
        if opts:
            fits_any = _fits_any(podm, allocs)
        left: list[PodContext] = [members[i] for i in np.flatnonzero(~fits_any).tolist()]
        for c in left:
            excluded.setdefault(id(c), set()).add(tpl.name)
        idx = np.flatnonzero(fits_any).tolist()
        if not idx:
            return left
        sub = podm[idx]
        bins = pack(sub, allocs, prices)
        # each claim's requests in one numpy pass (integer sums: the same as adding pod by pod)
        sums = bin_totals(sub, [b.pods for b in bins]) + np.asarray(tpl.ds_vec, dtype=np.int64)
        totals = [tuple(t) for t in sums.tolist()]
        for b, used in zip(bins, totals, strict=True):
            o, off = opts[b.option]
            bin_ctxs = [members[idx[i]] for i in b.pods]
            if not self._limit_ok(tpl, o.it.capacity):
                total = podm[[idx[i] for i in b.pods]].sum(axis=0)
                alt = None
                for j, (o2, off2) in enumerate(opts):
                    if (allocs[j] >= total).all() and self._limit_ok(tpl, o2.it.capacity):
                        if alt is None or (off2.price or 0.0) < (alt[1].price or 0.0):
                            alt = (o2, off2)
                if alt is None:
                    for c in bin_ctxs:
                        excluded.setdefault(id(c), set()).add(tpl.name)
                    left.extend(bin_ctxs)
                    continue
                o, off = alt
            claim = NodeClaim(
                self._new_claim_name(tpl.name),
                tpl,
                reqs,
                np.array([o.index], dtype=np.int64),
                cap_max=o.alloc,
            )
            claim.used = used
            claim.pods = [c.pod for c in bin_ctxs]
            claim.fix(o, off)
            self._reserve(tpl, o.it.capacity)
            self.claims.append(claim)
        return left

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
            prices = np.array(
                [(o.offering_for(tpl.base) or o.offerings[0]).price or 0.0 for o in tpl.options]
            )
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
            self.size_caps[tpl.name] = prices <= prices[best] + 1e-12

    def run(self, lower_bound: bool) -> Results:
        self._compute_size_caps([c for c in self.ctxs if self._is_constrained(c)])
        order = largest_first(self.ctxs, keys=self.keys)
        simple: list[PodContext] = []
        for ctx in order:
            if self.greedy or self._is_constrained(ctx):
                if not self._schedule_constrained(ctx):
                    # explained now, while the open claims still reserve the largest size they could
                    # become: that reservation is what a limit refused, and finalizing shrinks it
                    self.errors[ctx.pod.key] = self._explain(ctx)
            elif not (self.nodes and self._try_existing(ctx)):
                simple.append(ctx)
        for claim in self.claims:
            old = self._max_capacity(claim)
            claim.finalize()
            self._reserve(claim.tpl, old, -1)
            assert claim.chosen is not None
            self._reserve(claim.tpl, claim.chosen.it.capacity)
        self.claims.rebuild()
        rest: list[PodContext] = []
        if self.claims:
            for ctx in simple:
                if not self._try_slack(ctx):
                    rest.append(ctx)
        else:
            rest = simple
        for ctx in self._bulk(rest):
            self.errors[ctx.pod.key] = self._explain(ctx)
        return self._results(lower_bound)

    def _results(self, lower_bound: bool) -> Results:
        res = Results(pending=len(self.pods), unschedulable=self.errors, unusable_nodepools=dict(self.s.unusable))
        label_cache: dict[tuple[str, str, str, str, Requirements], dict[str, str]] = {}
        alloc_cache: dict[str, Resources] = {}
        claims = list(self.claims)
        options_of = self._alternatives(claims)
        for claim, names in zip(claims, options_of, strict=True):
            assert claim.chosen is not None and claim.offering is not None
            o, off = claim.chosen, claim.offering
            lk = (claim.tpl.name, o.it.name, off.zone, off.capacity_type, claim.reqs)
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
                labels.pop(HOSTNAME_LABEL, None)
                cached = label_cache[lk] = dict(sorted(labels.items()))
            labels = dict(cached)
            used = Resources(dict(zip(self.keys, claim.used, strict=True)))
            allocatable = alloc_cache.get(o.it.name)
            if allocatable is None:
                allocatable = alloc_cache[o.it.name] = o.it.allocatable
            res.nodeclaims.append(
                PlannedNodeClaim(
                    name=claim.name,
                    nodepool=claim.tpl.name,
                    instance_type=o.it.name,
                    instance_type_options=names[:MAX_OPTIONS],
                    capacity_type=off.capacity_type,
                    zone=off.zone,
                    price_per_hour=float(off.price or 0.0),
                    labels=labels,
                    taints=list(claim.tpl.pool.taints),
                    startup_taints=list(claim.tpl.pool.startup_taints),
                    pods=list(claim.pods),
                    requests=used,
                    allocatable=allocatable,
                )
            )
        for node in self.nodes:
            res.existing.append(
                ExistingPlacement(node.name, node.spec.kind, list(node.pods), self.s.price_of(node.labels))
            )
        res.solve_seconds = time.perf_counter() - self.started
        if lower_bound:
            from packing.bound import lower_bound as lb

            res.lower_bound = lb(self.s, res, self.pods)
            res.solve_seconds = time.perf_counter() - self.started
        return res

    def _alternatives(self, claims: Sequence[NodeClaim]) -> list[list[str]]:
        """Per claim: its chosen type, then the other types that hold its pods, cheapest first (spot
        first), at most MAX_OPTIONS in all. Claims with the same pool and requirements share one ranked
        table and are tested against it together, one numpy comparison per block of types."""
        groups: dict[tuple[str, Requirements], list[int]] = {}
        for i, claim in enumerate(claims):
            groups.setdefault((claim.tpl.name, claim.base_reqs), []).append(i)
        out: list[list[str]] = [[] for _ in claims]
        for members in groups.values():
            first = claims[members[0]]
            ordered_alloc_t, tnames, _ = first.tpl.ranked(first.base_reqs)
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
                    out[i] = names
                else:
                    names.insert(0, name)
                    out[i] = names[:MAX_OPTIONS]
        return out

    # ----------------------------------------------------------------- reasons
    def _explain(self, ctx: PodContext) -> list[tuple[str, str]]:
        from packing.scheduling.reasons import explain

        reasons: list[tuple[str, str]] = explain(self, ctx)
        return reasons
