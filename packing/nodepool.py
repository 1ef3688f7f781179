"""NodePools, DaemonSets, existing nodes and in-flight NodeClaims."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from packing.pods import Pod
from packing.requirements import Requirements
from packing.resources import Resources
from packing.taints import Taint

__all__ = ["DaemonSet", "ExistingNodeSpec", "NodePool", "PodDisruptionBudget"]

NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
INITIALIZED_LABEL = "karpenter.sh/initialized"

# Karpenter v1's CRD defaults for the NodePool fields a manifest may leave out, spelled as in the manifest.
# Written once here: the disruption engine, the console's field table (console/fleet/fieldtable.py), its
# model, forms and API all take them from these names.
EXPIRE_AFTER_DEFAULT = "720h"                            # spec.template.spec.expireAfter
CONSOLIDATION_POLICY_DEFAULT = "WhenEmptyOrUnderutilized"  # spec.disruption.consolidationPolicy
CONSOLIDATE_AFTER_DEFAULT = "0s"                         # spec.disruption.consolidateAfter
BUDGET_NODES_DEFAULT = "10%"                             # spec.disruption.budgets[].nodes, and the one budget
                                                         # a NodePool without spec.disruption.budgets gets


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


@dataclass(frozen=True)
class DaemonSet:
    namespace: str
    name: str
    pod: Pod  # the template, as a pod; its requests are the per-node overhead


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

    @property
    def nodepool(self) -> str | None:
        return self.labels.get(NODEPOOL_LABEL)
