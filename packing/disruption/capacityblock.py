"""Capacity Block expiry: nodes on a Capacity Block are drained and replaced before the block ends.

EC2 begins terminating the instances of a Capacity Block 30 minutes before its end time; the AWS provider's
capacityreservation.expiration controller deletes the NodeClaims on a block 40 minutes before the end, 10 minutes
before EC2 starts reclaiming them, in line with the EC2 warning event (aws/karpenter-provider-aws,
pkg/controllers/capacityreservation/expiration/controller.go, and its docs' tasks/odcrs.md "Capacity Blocks").
Like expiration it is not budgeted and not judged on money: the node goes whatever it costs, its pods land
wherever the simulation puts them. The blocks that end within the lead time are offered to no new node
(packing.scheduling.reservations.without_expiring_blocks), so the replacement is never launched onto the block that is ending.
"""

from __future__ import annotations

from datetime import datetime

from packing.disruption.formatting import format_time
from packing.disruption.replacement import replace_or_delete
from packing.disruption.state import RunState
from packing.instancetype import Reservation, ReservationType
from packing.scheduling.reservations import CAPACITY_BLOCK_LEAD, RESERVATION_ID_LABEL, expiring

__all__ = ["REASON", "CapacityBlockExpiry"]

REASON = "capacity-block-expiring"


class CapacityBlockExpiry:
    name = "capacity-block"
    chains = False
    waits_for_chain = False

    def __init__(self, run: RunState) -> None:
        self.run = run
        self.failed: dict[str, int] = {}  # node -> epoch its move failed at
        blocks: dict[str, Reservation] = {}
        for it in run.cluster.catalog if run.cluster.capacity_block_expiry else ():
            for o in it.offerings:
                r = o.reservation
                if r is not None and r.type == ReservationType.CAPACITY_BLOCK and r.ends is not None:
                    blocks.setdefault(r.id, r)
        self.blocks = blocks
        self._due: list[tuple[datetime, str, str]] | None = None

    def _find_due(self) -> list[tuple[datetime, str, str]]:
        run = self.run
        out = []
        for n in run.candidates():
            r = self.blocks.get(run.info[n].spec.labels.get(RESERVATION_ID_LABEL, ""))
            if r is None or r.ends is None or not expiring(r, run.at):
                continue
            detail = (
                f"capacity block {r.id} ends {format_time(r.ends)}: its nodes are drained "
                f"{int(CAPACITY_BLOCK_LEAD.total_seconds() // 60)} minutes before the end"
            )
            out.append((r.ends, n, detail))
        return sorted(out)

    def act(self) -> bool:
        if not self.blocks:
            return False
        run = self.run
        if self._due is None:
            self._due = self._find_due()
        for _, n, detail in self._due:
            if n in run.disrupted or n not in run.sim.specs or run.forceful_reason(n):
                continue
            if replace_or_delete(run, self.failed, n, REASON, self.name, detail):
                return True
        return False
