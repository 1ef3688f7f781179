"""What a solve returns (Karpenter's scheduler.go Results): the NodeClaims to launch, the pods placed on
existing nodes, and why the others cannot be placed.

Reasons are Reason objects (packing.scheduling.reasons): `unschedulable_reasons` and
`unusable_nodepool_reasons`. `unschedulable` and `unusable_nodepools` give the same reasons as text, in the
shapes callers have always read ((nodepool, text) pairs per pod; text per pool).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from packing.pods import Pod
from packing.resources import Resources
from packing.scheduling.reasons import Reason, pairs
from packing.taints import Taint

if TYPE_CHECKING:
    from packing.buffers import BufferReport
    from packing.poolschedule import OpenWindow

__all__ = ["ExistingPlacement", "PlannedNodeClaim", "Results"]


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
    # minValues were relaxed for it (policy BestEffort), or its options could not keep them
    min_values_relaxed: bool = False


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
    # per pod that cannot be placed (namespace/name): one Reason per NodePool, in pool order (heaviest
    # first), or one Reason about no pool in particular (no NodePool defined, requests beyond range)
    unschedulable_reasons: dict[str, list[Reason]] = field(default_factory=dict)
    pending: int = 0
    solve_seconds: float = 0.0
    lower_bound: float | None = None
    # NodePools the engine cannot launch from, with why (no instance type satisfies them, or building their
    # options failed): the solve went on with the other pools. Empty when every pool is usable.
    unusable_nodepool_reasons: dict[str, Reason] = field(default_factory=dict)
    # what the input's CapacityBuffers reserved (packing.buffers.BufferReport), set by packing.planning.plan
    buffers: list[BufferReport] = field(default_factory=list)
    # the NodePools' clock-policy windows open at the plan's time (packing.poolschedule.OpenWindow), set by
    # packing.planning.plan: their limits and replicas were in force for it
    schedules: list[OpenWindow] = field(default_factory=list)

    @property
    def unschedulable(self) -> dict[str, list[tuple[str, str]]]:
        """unschedulable_reasons as (nodepool, text) pairs ("" for no pool in particular)."""
        return {pod: pairs(rs) for pod, rs in self.unschedulable_reasons.items()}

    @property
    def unusable_nodepools(self) -> dict[str, str]:
        """unusable_nodepool_reasons as text."""
        return {name: r.text for name, r in self.unusable_nodepool_reasons.items()}

    @property
    def cost_per_hour(self) -> float:
        return float(round(sum(c.price_per_hour for c in self.nodeclaims), 6))

    @property
    def existing_cost_per_hour(self) -> float:
        return float(round(sum(e.price_per_hour or 0.0 for e in self.existing), 6))

    @property
    def scheduled(self) -> int:
        return self.pending - len(self.unschedulable_reasons)
