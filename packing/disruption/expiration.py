"""Expiration: nodes older than their NodePool's expireAfter are replaced, the oldest first.

In Karpenter v1 expiration belongs to the NodeClaim's lifecycle rather than to the disruption methods; the dry run
keeps it in the loop so that the list says what will happen. It is not budgeted, but the nodes it takes count as
disrupting for the budgets of the actions after it.
"""

from __future__ import annotations

from datetime import datetime

from packing.disruption.formatting import format_time
from packing.disruption.replacement import replace_or_delete
from packing.disruption.state import RunState
from packing.durations import format_duration

__all__ = ["Expiration"]


class Expiration:
    name = "expiration"
    chains = False
    waits_for_chain = False

    def __init__(self, run: RunState) -> None:
        self.run = run
        self.failed: dict[str, int] = {}  # node -> epoch its move failed at
        # (created, node, why) of the nodes past expireAfter: the clock is fixed for the run, so found once
        self._expired: list[tuple[datetime, str, str]] | None = None

    def _find_expired(self) -> list[tuple[datetime, str, str]]:
        run = self.run
        out = []
        for n in run.candidates():
            info = run.info[n]
            st = run.cluster.settings_for(info.nodepool or "")
            if st.expire_after is None or info.created is None or info.nodepool not in run.pools:
                continue
            if info.created + st.expire_after <= run.at:
                detail = (
                    f"expired: created {format_time(info.created)}, older than expireAfter "
                    f"{format_duration(st.expire_after)}"
                )
                out.append((info.created, n, detail))
        return out

    def act(self) -> bool:
        run = self.run
        if self._expired is None:
            self._expired = self._find_expired()
        expired = [
            e for e in self._expired if e[1] not in run.disrupted and e[1] in run.sim.specs and not run.forceful_reason(e[1])
        ]
        expired.sort()
        for _, n, detail in expired:
            if replace_or_delete(run, self.failed, n, "expired", self.name, detail):
                return True
        return False
