"""A drifted node of a static NodePool (spec.replicas) is replaced one for one, as Karpenter's StaticDrift does: the
action launches one NodeClaim from the pool's template (packing.staticpool) besides whatever its pods need, so the
pool keeps its count. Its pods move as any drifted node's do (the static pool launches nothing for them)."""

from __future__ import annotations

from packing.disruption.state import RunState
from packing.scheduling.results import PlannedNodeClaim
from packing.staticpool import static_nodeclaim

__all__ = ["static_replacement"]


def static_replacement(
    run: RunState, known: dict[str, PlannedNodeClaim | None], pool_name: str
) -> tuple[tuple[PlannedNodeClaim, ...], str]:
    """(the replacement to add, "") for a static pool's node; ((), "") for a dynamic pool's; ((), why) when the
    static pool can launch nothing. known: the method's cache, per pool."""
    pool = run.pools.get(pool_name)
    if pool is None or pool.replicas is None:
        return (), ""
    if pool_name not in known:
        known[pool_name] = static_nodeclaim(
            pool, run.cluster.catalog, run.cluster.daemonsets, name=f"{pool_name}-static-replacement"
        )
    claim = known[pool_name]
    if claim is None:
        return (), f"its static nodepool {pool_name} has no launchable instance type for the one-for-one replacement"
    return (claim,), ""
