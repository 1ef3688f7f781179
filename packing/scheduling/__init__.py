"""The scheduling simulation (Karpenter's pkg/controllers/provisioning/scheduling, in Python).

    sched = Scheduler(nodepools, instance_types, existing_nodes, running_pods, daemonsets)
    results = sched.solve(pending_pods)                         # new NodeClaims, placements, reasons
    what_if = sched.solve(pods_to_move, exclude_nodes={"n1"})   # disruption what-if: pretend n1 is gone

solve() does no I/O and does not mutate its inputs; per-pool instance-type tables are cached on the
Scheduler, so repeated what-if calls are cheap. check_plan() verifies any plan independently.
"""

from __future__ import annotations

from packing.scheduling.scheduler import ExistingPlacement, PlannedNodeClaim, Results, Scheduler
from packing.scheduling.verify import check_plan

__all__ = ["ExistingPlacement", "PlannedNodeClaim", "Results", "Scheduler", "check_plan"]
