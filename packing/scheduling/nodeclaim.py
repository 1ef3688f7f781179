"""A node the solve would launch (Karpenter's nodeclaim.go): its pool, requirements and the instance types still
open to it, narrowing as pods join, until finalize() picks the cheapest that holds them.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from packing.instancetype import Offering
from packing.nodepool import CAPACITY_TYPE_LABEL, HOSTNAME_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL
from packing.pods import HostPort, Pod
from packing.requirements import Requirement, Requirements
from packing.scheduling import reasons
from packing.scheduling.fit import Admission, Fit, Refusal
from packing.scheduling.minvalues import Shortfall, holders, shortfall
from packing.scheduling.topology import topology_pins
from packing.scheduling.vectors import Vec, add, fits
from packing.taints import first_untolerated

if TYPE_CHECKING:
    from packing.scheduling.preferences import PodContext
    from packing.scheduling.templates import PoolTemplate, TypeOption
    from packing.scheduling.topology import Topology

__all__ = ["NodeClaim"]


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
        strict_min_values: bool = True,
    ) -> None:
        self.name = name
        self.tpl = tpl
        self.reqs = reqs
        self.idx = idx
        self.used: Vec = (0,) * len(tpl.keys)  # its pods' requests; options' allocatable is net of DaemonSets
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
        # minValues: Strict refuses a pod that would leave fewer values than a minimum; BestEffort takes it
        # and records the relaxation (min_values_relaxed on the planned NodeClaim)
        self.has_min_values = bool(reqs.min_values())
        self.strict_min_values = strict_min_values
        self.min_values_relaxed = False

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

    def can_add(self, ctx: PodContext, topo: Topology) -> Admission:
        used = add(self.used, ctx.vec)
        tpl = self.tpl
        if not fits(used, self.cap_max):
            return Refusal(reasons.insufficient_resources(tpl.name))
        if tpl.pool.taints:
            t = first_untolerated(tpl.pool.taints, ctx.pod.tolerations, include_prefer=not ctx.tolerate_prefer)
            if t is not None:
                return Refusal(reasons.taint_not_tolerated(tpl.name, t))
        for hp in ctx.pod.host_ports:
            if any(hp.conflicts(o) for o in self.ports):
                return Refusal(reasons.host_port_in_use(tpl.name, hp.port, hp.protocol))
        base_idx = self.idx
        if ctx.pod.host_ports and tpl.port_daemonsets:
            # types whose DaemonSets hold one of the pod's host ports are out
            base_idx = base_idx[tpl.port_mask(ctx.pod.host_ports)[base_idx]]
            if not base_idx.size:
                clash = tpl.port_clash(ctx.pod.host_ports, tpl.options[int(self.idx[0])])
                assert clash is not None
                return Refusal(reasons.daemonset_host_port(tpl.name, clash[0].port, clash[0].protocol, clash[1].key))
        last: reasons.Reason | None = None
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
            if isinstance(pinned, reasons.Reason):
                last = pinned
                continue
            reqs = pinned
            idx = base_idx
            if reqs is not self.reqs and reqs != self.reqs:
                idx = idx[tpl.viable_mask(reqs)[idx]]
            fit = idx[(tpl.alloc_matrix[idx] >= np.asarray(used, dtype=np.int64)).all(axis=1)]
            if fit.size and self.has_min_values and self.strict_min_values:
                short = self.min_values_shortfall(reqs, fit, used)
                if short is not None:
                    last = reasons.min_values_not_met(tpl.name, short.key, short.minimum, short.remaining)
                    continue
            if fit.size:
                return Fit(reqs, fit)
            last = reasons.insufficient_resources(tpl.name)
        return Refusal(last if last is not None else reasons.node_affinity(tpl.name))

    def add(self, ctx: PodContext, topo: Topology, fit: Fit) -> None:
        """Take the pod on the terms can_add found (`fit` narrows the claim's requirements and types)."""
        reqs, idx = fit.reqs, fit.types
        assert reqs is not None and idx is not None, "a NodeClaim's fit always narrows"
        self.used = add(self.used, ctx.vec)
        self.reqs = reqs
        if idx.size != self.idx.size:
            self.idx = idx
            self.cap_max = tuple(int(x) for x in self.tpl.alloc_matrix[idx].max(axis=0))
        if self.has_min_values and not self.strict_min_values and not self.min_values_relaxed:
            self.min_values_relaxed = self.min_values_shortfall(reqs, self.idx, self.used) is not None
        self.pods.append(ctx.pod)
        self.ports.extend(ctx.pod.host_ports)
        topo.record(ctx.pod, ctx.owned, self.labels_for_topology)

    def min_values_shortfall(self, reqs: Requirements, idx: npt.NDArray[np.int64], used: Vec) -> Shortfall | None:
        """The minValues the claim would miss holding `used`: among `idx` while its type is open; once it is
        finalized, among every type that holds `used` (its instance_type_options are drawn from those)."""
        if self.chosen is None:
            return shortfall(self.tpl, reqs, idx)
        return shortfall(self.tpl, self.base_reqs, holders(self.tpl, self.base_reqs, used))

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
