"""NodePools prepared for a solve (Karpenter's nodeclaimtemplate.go): each pool's base requirements, DaemonSet
overhead and host ports per instance type, and launchable instance types, with per-requirements tables kept for
later solves.

A DaemonSet counts on an instance type of a pool only where its pod would run: it tolerates the pool's taints and
one of its node requirement terms is compatible with the pool's requirements and the type's labels and offerings
(DaemonSet.lands_on). Each TypeOption's allocatable is net of the DaemonSets that land on it, and nothing else
adds their overhead again: a NodeClaim's `used` holds its pods' requests alone.

A PoolTemplate is built once per pool and set of resource keys (Scheduler.templates) and shared by every solve
of that Scheduler: its caches depend on the pool, the catalog and the requirements asked about, never on a
solve's usage (pools with limits keep nothing that depends on usage).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from packing.instancetype import InstanceType, Offering
from packing.nodepool import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
    DaemonSet,
    NodePool,
)
from packing.pods import HostPort
from packing.requirements import Requirement, Requirements
from packing.resources import Resources
from packing.scheduling.reservations import capacity_rank, pool_may_use
from packing.scheduling.vectors import Vec, vector

__all__ = ["LaunchOptions", "PoolTemplate", "TypeOption"]


@dataclass(eq=False)
class TypeOption:
    """An instance type as one NodePool would launch it: allocatable net of the overhead (`ds_vec`) of the
    DaemonSets that land on it (`daemonsets`)."""

    it: InstanceType
    labels: dict[str, str]
    alloc: Vec
    offerings: tuple[Offering, ...]
    index: int = 0
    ds_vec: Vec = ()
    daemonsets: tuple[DaemonSet, ...] = ()
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
            k = (capacity_rank(o), o.price or 0.0, o.zone, o.capacity_type)
            if best_key is None or k < best_key:
                best, best_key = o, k
        return best

    def offering_within(self, reqs: Requirements, room: Callable[[Offering], bool]) -> Offering | None:
        """offering_for among the offerings `room` admits (a limited offering whose pool has nothing left is
        out); not cached: what is left changes within a solve."""
        zr, cr = reqs.get(ZONE_LABEL), reqs.get(CAPACITY_TYPE_LABEL)
        best: Offering | None = None
        best_key: tuple[int, float, str, str] | None = None
        for o in self.offerings:
            if (zr is not None and not zr.has(o.zone)) or (cr is not None and not cr.has(o.capacity_type)):
                continue
            if not room(o):
                continue
            k = (capacity_rank(o), o.price or 0.0, o.zone, o.capacity_type)
            if best_key is None or k < best_key:
                best, best_key = o, k
        return best




# bulk packing's launchable (type, offering) pairs for some requirements, and their allocatable
LaunchOptions = tuple[list[tuple[TypeOption, Offering]], npt.NDArray[np.int64]]


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
        # DaemonSets whose pods tolerate the pool's taints; which of them land depends on the instance type
        tolerated = [ds for ds in daemonsets if ds.tolerates(pool.taints)]
        zero = vector(Resources(), keys)
        type_reqs = self.base.restricted(type_keys)
        zr, cr = type_reqs.get(ZONE_LABEL), type_reqs.get(CAPACITY_TYPE_LABEL)
        options: list[TypeOption] = []
        landing_any: set[int] = set()  # indices into `tolerated` of DaemonSets landing on some offered type
        overhead_of: dict[tuple[int, ...], tuple[Vec, tuple[DaemonSet, ...]]] = {(): (zero, ())}
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
                and pool_may_use(o, pool)  # a reservation: only for a pool that asks for it, of its NodeClass
            )
            if not offs:
                continue
            pairs = [(o.zone, o.capacity_type) for o in offs]
            landing = tuple(i for i, ds in enumerate(tolerated) if ds.lands_on(self.base, labels, pairs))
            landing_any.update(landing)
            hit = overhead_of.get(landing)
            if hit is None:
                total = Resources()
                for i in landing:
                    total = total + tolerated[i].pod.requests
                hit = overhead_of[landing] = (vector(total, keys), tuple(tolerated[i] for i in landing))
            ds_vec, landed = hit
            alloc = tuple(a - d for a, d in zip(vector(it.allocatable, keys), ds_vec, strict=True))
            if any(x < 0 for x in alloc):
                continue
            options.append(TypeOption(it, labels, alloc, offs, ds_vec=ds_vec, daemonsets=landed))
        # the summed requests of every DaemonSet that lands on some type the pool could offer (what a pool whose
        # types all lack room for them reports)
        overhead = Resources()
        for i in sorted(landing_any):
            overhead = overhead + tolerated[i].pod.requests
        self.ds_overhead = overhead
        # DaemonSets with host ports that land on some option: a pod asking one of those ports avoids those types
        self.port_daemonsets = any(ds.pod.host_ports for o in options for ds in o.daemonsets)
        self._port_cache: dict[tuple[HostPort, ...], npt.NDArray[np.bool_]] = {}
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
        self.launch_cache: dict[Requirements, LaunchOptions] = {}
        self.universe: dict[str, frozenset[str]] = {}  # per label key: the values domains() found

    def port_mask(self, ports: tuple[HostPort, ...]) -> npt.NDArray[np.bool_]:
        """Options none of whose DaemonSets holds one of these host ports (all of them when no DaemonSet has
        host ports)."""
        hit = self._port_cache.get(ports)
        if hit is None:
            hit = np.array([self.port_clash(ports, o) is None for o in self.options], dtype=bool)
            hit.setflags(write=False)
            self._port_cache[ports] = hit
        return hit

    @staticmethod
    def port_clash(ports: tuple[HostPort, ...], o: TypeOption) -> tuple[HostPort, DaemonSet] | None:
        """The first of these host ports a DaemonSet landing on `o` holds, with that DaemonSet."""
        for ds in o.daemonsets:
            for hp in ports:
                if any(hp.conflicts(q) for q in ds.pod.host_ports):
                    return hp, ds
        return None

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
                    ranked.append((capacity_rank(aoff), aoff.price or 0.0, alt.it.name, alt.index))
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

    def domains(self, key: str) -> frozenset[str]:
        """Every value `key` can take on a node of this pool (zones and capacity types come from offerings)."""
        hit = self.universe.get(key)
        if hit is None:
            vals: set[str] = set()
            for o in self.options:
                if key == ZONE_LABEL:
                    vals.update(x.zone for x in o.offerings)
                elif key == CAPACITY_TYPE_LABEL:
                    vals.update(x.capacity_type for x in o.offerings)
                elif key in o.labels:
                    vals.add(o.labels[key])
            r = self.base.get(key)
            if r is not None and not r.complement:
                vals |= set(r.values)
            hit = frozenset(vals)
            self.universe[key] = hit
        return hit
