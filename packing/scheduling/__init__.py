"""The scheduling simulation (Karpenter's pkg/controllers/provisioning/scheduling, in Python).

    from packing.scheduling.scheduler import Scheduler
    sched = Scheduler(nodepools, instance_types, existing_nodes, running_pods, daemonsets)
    results = sched.solve(pending_pods)                         # new NodeClaims, placements, reasons
    what_if = sched.solve(pods_to_move, exclude_nodes={"n1"})   # disruption what-if: pretend n1 is gone

solve() does no I/O and does not mutate its inputs; per-pool instance-type tables are cached on the
Scheduler, so repeated what-if calls are cheap. verify.check_plan() verifies any plan independently.

The modules, in the order a solve uses them (each imports only those above it, and packing.bound):
- vectors: resource vectors and the dominance helpers; reasons: Reason and its kinds; fit: Fit or Refusal
- templates: NodePools prepared for a solve (TypeOption, PoolTemplate); amounts: what the engine computes with
- topology: topology groups and the domain pins of a NodeClaim; preferences: a pod's constraints and their
  relaxation (PodContext); queue: the order pods are taken in
- existingnode, nodeclaim, firstfit: where a pod can go; limits: NodePool limit usage
- packer (with typemix, the LP-guided type mix): cost packing of interchangeable pods; bulk: its use here
- explain: the Reason a pool gives a pod; results: what a solve returns; solve: one solve; scheduler: the
  Scheduler (packing.gcpause holds the collector off during solves)
- verify: an independent check of any plan

This package's __init__ imports none of them, so that packing.bound (which the solve imports) can import
packing.scheduling.vectors without running the solve's modules first.
"""
