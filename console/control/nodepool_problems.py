"""NodePools a control loop cannot use: kept in NodePoolProblem, told once in the ledger.

The provision and disrupt loops leave such a pool out and carry on with every other pool. Each run
reports the set it found: a new pool, or a new reason, gets one FAILURE decision (not one per tick);
a pool no longer reported is usable again and its row goes. The pool's page and /metrics read the rows.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from django.db import transaction

from console.fleet.models import Decision, NodePool
from console.telemetry.models import NodePoolProblem

log = logging.getLogger(__name__)

_KEEPS_GOING = {NodePoolProblem.PROVISION: "provisioned", NodePoolProblem.DISRUPT: "consolidated"}


@transaction.atomic
def nodepool_problems_record(*, loop: str, problems: Mapping[str, str], now: datetime,
                             complete: bool = True) -> list[str]:
    """Store what this run of `loop` found (pool name -> why it is unusable). Returns the pools that
    are newly reported (or with a new reason), which got a ledger entry. ``complete=False``: the run
    checked only part (the engine did not run), so pools it did not report keep their rows."""
    told = []
    current = {p.nodepool: p for p in NodePoolProblem.objects.select_for_update().filter(loop=loop)}
    for name, reason in sorted(problems.items()):
        reason = str(reason)[:2000]
        row = current.get(name)
        if row is not None and row.reason == reason:
            row.seen_at = now
            row.save(update_fields=["seen_at"])
            continue
        if row is None:
            NodePoolProblem.objects.create(nodepool=name, loop=loop, reason=reason, since=now, seen_at=now)
        else:
            row.reason, row.since, row.seen_at = reason, now, now
            row.save(update_fields=["reason", "since", "seen_at"])
        pool = NodePool.objects.filter(name=name).first()
        Decision.objects.create(
            at=now, kind=Decision.FAILURE, nodepool=pool, nodepool_name=name[:63],
            why=f"nodepool {name} cannot be used by the {loop} loop: {reason}; "
                f"every other NodePool is still {_KEEPS_GOING.get(loop, 'served')}",
            details={"unusable_nodepool": name, "loop": loop, "reason": reason})
        log.warning("%s: nodepool %s left out: %s", loop, name, reason)
        told.append(name)
    gone = [name for name in current if name not in problems] if complete else []
    if gone:
        NodePoolProblem.objects.filter(loop=loop, nodepool__in=gone).delete()
        log.info("%s: nodepool(s) %s usable again", loop, ", ".join(sorted(gone)))
    return told
