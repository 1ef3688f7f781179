"""A pending pod's effective constraints in one solve, and their relaxation (Karpenter's preferences.go).

When nothing takes a pod as it stands, the solve drops one preference and tries again, in Karpenter's order:
preferred pod affinity, preferred pod anti-affinity, preferred node affinity (heaviest term first), then
ScheduleAnyway topology spread, then tolerating PreferNoSchedule taints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from packing.pods import Pod
from packing.requirements import Requirements
from packing.scheduling.vectors import vector

if TYPE_CHECKING:
    from packing.scheduling.topology import TopologyGroup

__all__ = ["PodContext"]


class PodContext:
    """A pending pod with its effective (possibly relaxed) constraints for this solve."""

    def __init__(self, pod: Pod, keys: Sequence[str]) -> None:
        self.pod = pod
        self.vec = vector(pod.requests, keys)
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

