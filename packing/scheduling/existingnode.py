"""An existing Node or in-flight NodeClaim, with the room left on it (Karpenter's existingnode.go).

Its size is fixed: a pod goes on it when it fits the free room, tolerates its taints, matches its labels, and
its host ports and topology groups allow it there. Every DaemonSet that runs there (DaemonSet.runs_on) but whose
pod is not listed on it yet (an in-flight NodeClaim, a node just launched, a DaemonSet just created) will have
its pod there: as Karpenter's ExistingNode reserves the remaining daemon resources, its requests are kept out of
the free room, and its host ports count as in use, as those of the pods running on it do.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING

from packing.nodepool import HOSTNAME_LABEL, DaemonSet, ExistingNodeSpec, NodePool
from packing.pods import HostPort, Pod
from packing.scheduling import reasons
from packing.scheduling.fit import FITS, Admission, Refusal
from packing.scheduling.vectors import Vec, fits
from packing.taints import first_untolerated, is_ephemeral

if TYPE_CHECKING:
    from packing.scheduling.preferences import PodContext
    from packing.scheduling.topology import Topology

__all__ = ["ExistingNode"]


class ExistingNode:
    """A Node or in-flight NodeClaim with the room left on it."""

    def __init__(
        self,
        spec: ExistingNodeSpec,
        free: Vec,
        ports: list[HostPort],
        pool: NodePool | None,
        running: Sequence[Pod] = (),
        daemonsets: Sequence[DaemonSet] = (),
    ) -> None:
        """`ports`: those of the `running` pods; `free`: the allocatable less the `running` pods' requests, to
        which the requests of the `daemonsets` that run there but not among `running` are added in `missing`
        (the caller takes them off `free`: it knows the resource keys)."""
        self.spec = spec
        self.name = spec.name
        self.nodepool = spec.nodepool or ""
        self.labels = dict(spec.labels)
        self.labels.setdefault(HOSTNAME_LABEL, spec.name)
        taints = spec.taints
        if not spec.initialized:
            # Karpenter ignores taints that will disappear once the node finishes initialising
            startup = set(pool.startup_taints) if pool else set()
            taints = tuple(t for t in taints if t not in startup and not is_ephemeral(t))
        self.taints = taints
        self.free = free
        self.ports = ports
        # host port -> "namespace/name" of the DaemonSet holding it, to name it when a pod collides
        self.daemon_ports: dict[HostPort, str] = {}
        # the DaemonSets whose pod will come here but is not running yet
        self.missing: list[DaemonSet] = []
        if daemonsets:
            here: set[str] = set()
            for p in running:
                if p.owner_kind == "DaemonSet":
                    owner = f"{p.namespace}/{p.owner_name}"
                    here.add(owner)
                    for hp in p.host_ports:
                        self.daemon_ports[hp] = owner
            for ds in daemonsets:
                if ds.key not in here and ds.runs_on(taints, self.labels):
                    self.missing.append(ds)
                    self.ports.extend(ds.pod.host_ports)
                    for hp in ds.pod.host_ports:
                        self.daemon_ports[hp] = ds.key
        self.pods: list[Pod] = []
        self.pos = -1

    def free_room(self) -> Vec:
        return self.free

    def can_add(self, ctx: PodContext, topo: Topology) -> Admission:
        if not fits(ctx.vec, self.free):
            return Refusal(reasons.insufficient_resources(self.nodepool))
        t = first_untolerated(self.taints, ctx.pod.tolerations, include_prefer=not ctx.tolerate_prefer)
        if t is not None:
            return Refusal(reasons.taint_not_tolerated(self.nodepool, t))
        if not any(term.matches(self.labels) for term in ctx.terms):
            return Refusal(reasons.node_affinity(self.nodepool))
        for hp in ctx.pod.host_ports:
            taken = next((o for o in self.ports if hp.conflicts(o)), None)
            if taken is not None:
                owner = self.daemon_ports.get(taken)
                if owner is not None:
                    return Refusal(reasons.daemonset_host_port(self.nodepool, hp.port, hp.protocol, owner))
                return Refusal(reasons.host_port_in_use(self.nodepool, hp.port, hp.protocol))
        for g in ctx.owned:
            d = self.labels.get(g.key)
            if d is None or not g.allowed([d], self_match=g.selects(ctx.pod.namespace, ctx.pod.labels)):
                return Refusal(g.reason(self.nodepool))
        for g in topo.anti_groups:
            if g.owners and g.selects(ctx.pod.namespace, ctx.pod.labels):
                d = self.labels.get(g.key)
                if d is not None and g.owners.get(d, 0) > 0:
                    return Refusal(g.reason(self.nodepool))
        return FITS

    def add(self, ctx: PodContext, topo: Topology) -> None:
        self.free = tuple(map(operator.sub, self.free, ctx.vec))
        self.ports.extend(ctx.pod.host_ports)
        self.pods.append(ctx.pod)
        topo.record(ctx.pod, ctx.owned, self.labels)
