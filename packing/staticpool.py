"""What a static NodePool (spec.replicas) launches: one NodeClaim of its template, whatever the pods ask for.

Karpenter's static provisioning creates NodeClaims straight from the NodePool's template and lets the cloud
provider pick the instance: the cheapest its requirements allow. Here that is the first launchable type of the
pool in the order every NodeClaim finalizes on (spot first when the pool allows it, then by price, then name),
with the other launchable types as the claim's options; its requests are the overhead of the DaemonSets that land
on it. Scale-down chooses which nodes go (`scale_down_order`) as Karpenter's static deprovisioning does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from packing.instancetype import InstanceType
from packing.nodepool import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
    DaemonSet,
    NodePool,
)
from packing.resources import CPU, MEMORY, PODS, Resources
from packing.scheduling.results import PlannedNodeClaim
from packing.scheduling.scheduler import Scheduler

__all__ = ["MAX_OPTIONS", "ScaleDownCandidate", "scale_down_order", "static_nodeclaim"]

MAX_OPTIONS = 60  # instance types a claim lists as alternatives (as the solve's claims)


def static_nodeclaim(
    pool: NodePool, catalog: Sequence[InstanceType], daemonsets: Sequence[DaemonSet] = (), name: str = ""
) -> PlannedNodeClaim | None:
    """The NodeClaim a static pool launches next, or None when its requirements leave no launchable offering."""
    keys = tuple(sorted({CPU, MEMORY, PODS, *(k for ds in daemonsets for k in ds.pod.requests)}))
    # the pool as a dynamic one, so the Scheduler prepares its template (static pools launch nothing for pods)
    sched = Scheduler([dataclasses.replace(pool, replicas=None)], catalog, daemonsets=daemonsets)
    tpls = sched.templates(keys)
    if not tpls or not tpls[0].options:
        return None
    tpl = tpls[0]
    _, names, order = tpl.ranked(tpl.base)
    if not len(order):
        return None
    chosen = tpl.options[int(order[0])]
    off = chosen.offering_for(tpl.base)
    if off is None:
        return None
    labels: dict[str, str] = dict(pool.labels)
    labels.update(chosen.it.labels)
    labels.update(tpl.base.pinned_labels())
    labels.update({NODEPOOL_LABEL: pool.name, INSTANCE_TYPE_LABEL: chosen.it.name, ZONE_LABEL: off.zone,
                   CAPACITY_TYPE_LABEL: off.capacity_type})
    return PlannedNodeClaim(
        name=name or f"{pool.name}-static",
        nodepool=pool.name,
        instance_type=chosen.it.name,
        instance_type_options=list(names[:MAX_OPTIONS]),
        capacity_type=off.capacity_type,
        zone=off.zone,
        price_per_hour=float(off.price or 0.0),
        overlays=list(off.overlays),
        labels=dict(sorted(labels.items())),
        taints=list(pool.taints),
        startup_taints=list(pool.startup_taints),
        pods=[],
        requests=Resources(dict(zip(keys, chosen.ds_vec, strict=True))),
        allocatable=chosen.it.allocatable,
    )


@dataclasses.dataclass(frozen=True)
class ScaleDownCandidate:
    name: str
    launched: bool  # has an instance (Karpenter: a providerID)
    pods: int  # pods other than DaemonSet and mirror pods
    do_not_disrupt: bool  # the node or one of its pods has karpenter.sh/do-not-disrupt
    priority: int = 0  # karpenter.sh/deprovisioning-priority: higher goes first
    cost: float = 0.0  # disruption cost of its pods (Karpenter: rescheduling cost x lifetime remaining)


def scale_down_order(candidates: Sequence[ScaleDownCandidate]) -> list[ScaleDownCandidate]:
    """The order a static pool's extra nodes go in when it is scaled down (Karpenter's static deprovisioning):
    NodeClaims not launched yet, then empty nodes, then the others without do-not-disrupt before those with it;
    within each, the higher deprovisioning priority first, then the lower disruption cost, then the name."""

    def key(c: ScaleDownCandidate) -> tuple[int, int, int, float, str]:
        group = 0 if not c.launched else 1 if c.pods == 0 and not c.do_not_disrupt else 2
        return (group, int(c.do_not_disrupt), -c.priority, c.cost, c.name)

    return sorted(candidates, key=key)
