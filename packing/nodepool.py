"""NodePools, DaemonSets, existing nodes and in-flight NodeClaims."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from packing.pods import Pod
from packing.requirements import Requirements
from packing.resources import Resources
from packing.taints import Taint, first_untolerated

if TYPE_CHECKING:
    from packing.poolschedule import PoolWindow

__all__ = ["WELL_KNOWN_LABELS", "DaemonSet", "ExistingNodeSpec", "NodePool", "PodDisruptionBudget"]

NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
INITIALIZED_LABEL = "karpenter.sh/initialized"
# Taints every DaemonSet pod tolerates: the DaemonSet controller adds the tolerations (node conditions, cordon)
DAEMONSET_TOLERATED_TAINT_KEYS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
    }
)
# Labels a DaemonSet may require of a new node although neither its NodePool nor its instance type defines them:
# Kubernetes, the cloud provider or Karpenter (once the node registers and initializes) sets them on every node
# (Karpenter's AllowUndefinedWellKnownLabels).
WELL_KNOWN_LABELS = frozenset(
    {
        NODEPOOL_LABEL,
        INITIALIZED_LABEL,
        "karpenter.sh/registered",
        CAPACITY_TYPE_LABEL,
        INSTANCE_TYPE_LABEL,
        ZONE_LABEL,
        "topology.kubernetes.io/region",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/windows-build",
    }
)

# Karpenter v1's CRD defaults for the NodePool fields a manifest may leave out, spelled as in the manifest.
# Written once here: the disruption engine, the console's field table (console/fleet/fieldtable.py), its
# model, forms and API all take them from these names.
EXPIRE_AFTER_DEFAULT = "720h"                            # spec.template.spec.expireAfter
CONSOLIDATION_POLICY_DEFAULT = "WhenEmptyOrUnderutilized"  # spec.disruption.consolidationPolicy
CONSOLIDATE_AFTER_DEFAULT = "0s"                         # spec.disruption.consolidateAfter
BUDGET_NODES_DEFAULT = "10%"                             # spec.disruption.budgets[].nodes, and the one budget
                                                         # a NodePool without spec.disruption.budgets gets
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")  # Karpenter v1.14's CRD enum
# A static NodePool (spec.replicas set, Karpenter v1.14, alpha) may limit only its number of nodes.
STATIC_LIMIT_KEYS = frozenset({"nodes"})


@dataclass(frozen=True)
class NodePool:
    name: str
    requirements: Requirements = field(default_factory=Requirements)
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    # capacity summed over the pool's nodes, in milli-units; "nodes" counts nodes (1000 per node). Any mapping:
    # Resources drops zero entries, a plain mapping keeps them (a limit of 0 allows no capacity, as in
    # Karpenter). Limits beyond int64 are unbounded in practice (see packing.resources.MAX_AMOUNT).
    limits: Mapping[str, int] | None = None
    weight: int = 0
    node_class: str = ""
    # spec.replicas: a static NodePool keeps this many nodes whatever the pods ask for; it launches no node for
    # pending pods (pods may still schedule onto its nodes) and consolidation leaves its nodes alone. None: dynamic.
    replicas: int | None = None
    # Loadmaster's clock policies (packing.poolschedule, annotation loadmaster.dev/schedules): windows that change
    # limits, consolidation policy or replicas while open. packing.poolschedule.pools_at applies them.
    windows: tuple[PoolWindow, ...] = ()

    @property
    def static(self) -> bool:
        return self.replicas is not None


@dataclass(frozen=True)
class DaemonSet:
    namespace: str
    name: str
    pod: Pod  # the template, as a pod; its requests are the per-node overhead

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def tolerates(self, taints: Iterable[Taint]) -> bool:
        """Does its pod tolerate these taints (PreferNoSchedule never keeps it off)?"""
        return first_untolerated(taints, self.pod.tolerations) is None

    def runs_on(self, taints: Iterable[Taint], labels: Mapping[str, str]) -> bool:
        """Would its pod run on a node with these taints and labels (an existing node)? The DaemonSet
        controller tolerates the node-condition taints itself."""
        if not self.tolerates(t for t in taints if t.key not in DAEMONSET_TOLERATED_TAINT_KEYS):
            return False
        return any(
            all(k == HOSTNAME_LABEL or r.has(labels.get(k)) for k, r in term.items())
            for term in self.pod.node_requirement_terms()
        )

    def lands_on(
        self, base: Requirements, labels: Mapping[str, str], offered: Iterable[tuple[str, str]]
    ) -> bool:
        """Would its pod run on a new node of one instance type launched from a NodePool, taints aside?

        `base`: the NodePool's requirements (labels included); `labels`: the instance type's; `offered`: the
        (zone, capacity type) pairs the pool may launch it with. Like Karpenter's compatibility check, a
        requirement passes when some node of the pool and type could satisfy it: a key the type labels is
        decided by its value, a key only the pool constrains by overlapping with the pool's requirement,
        and a key neither defines only when it allows the label's absence or is well known (the DaemonSet
        for `node-role.kubernetes.io/control-plane`, or any label no pool offers, lands nowhere)."""
        pairs = tuple(offered)
        return any(_admits(term, base, labels, pairs) for term in self.pod.node_requirement_terms())


def _admits(
    term: Requirements, base: Requirements, labels: Mapping[str, str], offered: tuple[tuple[str, str], ...]
) -> bool:
    zr, cr = term.get(ZONE_LABEL), term.get(CAPACITY_TYPE_LABEL)
    if (zr is not None or cr is not None) and not any(
        (zr is None or zr.has(z)) and (cr is None or cr.has(c)) for z, c in offered
    ):
        return False
    for k, r in term.items():
        if k in (ZONE_LABEL, CAPACITY_TYPE_LABEL, HOSTNAME_LABEL):
            continue
        v = labels.get(k)
        if v is not None:
            if not r.has(v):
                return False
        elif k in base:
            if r.intersect(base[k]).is_empty():
                return False
        elif not r.has(None) and k not in WELL_KNOWN_LABELS:
            return False
    return True


@dataclass(frozen=True)
class PodDisruptionBudget:
    namespace: str
    name: str
    selector: Mapping[str, Any]
    min_available: str | None = None
    max_unavailable: str | None = None


@dataclass
class ExistingNodeSpec:
    """A Node, or an in-flight NodeClaim (kind="NodeClaim") that will become one."""

    name: str
    labels: Mapping[str, str]
    allocatable: Resources
    taints: tuple[Taint, ...] = ()
    initialized: bool = True
    kind: str = "Node"
    provider_id: str = ""
    capacity: Resources | None = None
    # metadata.deletionTimestamp is set: Karpenter places no pending pod on a node marked for deletion
    deleting: bool = False

    @property
    def nodepool(self) -> str | None:
        return self.labels.get(NODEPOOL_LABEL)
