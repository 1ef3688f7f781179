"""The move drift and expiration make: the node goes, its pods land wherever the simulation puts them.

Unlike consolidation it is not judged on money and may launch any number of new nodes; it fails only when some
pod finds no place. A failure is remembered until capacity is added (the simulation's epoch moves).
"""

from __future__ import annotations

from collections.abc import Sequence

from packing.disruption.formatting import money
from packing.disruption.state import RunState
from packing.scheduling.results import PlannedNodeClaim

__all__ = ["replace_or_delete"]


def replace_or_delete(
    run: RunState,
    failed: dict[str, int],
    name: str,
    reason: str,
    method: str,
    detail: str,
    add: Sequence[PlannedNodeClaim] = (),
) -> bool:
    """Disrupt `name` for `reason` (the action's why begins with `detail`); False when its pods cannot all move
    (the node's NotDisrupted then says so) or the simulation limit is reached. failed: the method's own memory of
    nodes that failed, by epoch. add: NodeClaims the action launches besides what its pods need (a static
    NodePool's one-for-one replacement)."""
    if failed.get(name) == run.sim.epoch or run.out_of_solves():
        return False
    wi = run.sim.what_if([name])
    if wi.failure is not None:
        failed[name] = run.sim.epoch
        run.spared.found_but(name, wi.failure.after(detail))
        return False
    if add:
        wi.claims = [*wi.claims, *add]
        wi.extra_cost += sum(c.price_per_hour for c in add)
    savings = run.price[name] - wi.extra_cost
    new = ""
    if wi.claims:
        new = (
            f" and {len(wi.claims)} new nodeclaim{'s' if len(wi.claims) > 1 else ''} "
            f"({money(sum(c.price_per_hour for c in wi.claims))})"
        )
    moved = f"; its {len(wi.evicted)} pods move to other nodes{new}" if wi.evicted else "; it runs no pods to move"
    run.commit([name], wi, reason, f"{detail}{moved}", savings, method=method)
    return True
