"""The simulated account's capacity reservations, answered the way the AWS backend resolves
capacityReservationSelectorTerms (console.backends.aws_reservations): by id, or by tags with ownerID and
instanceMatchCriteria; active only; a Capacity Block "expiring" in its last 40 minutes.

The demo account holds two, tagged karpenter.sh/discovery=demo like its subnets: an On-Demand Capacity Reservation of
two m5.xlarge in us-east-1a, and a Capacity Block of one p5.48xlarge in us-east-1b that runs from 00:00 to 00:00 UTC
the next day (a daily window, so the demo always shows one). Their free count is what the simulated instances launched
into them leave."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from console.backends.aws_reservations import CAPACITY_BLOCK_LEAD_TIME
from console.backends.base import CapacityReservation

DEMO_OWNER = "111122223333"
DEMO_TAGS = {"karpenter.sh/discovery": "demo"}
LABEL_RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"


@dataclass(frozen=True)
class SimReservation:
    id: str
    instance_type: str
    zone: str
    total: int
    type: str = "default"
    instance_match_criteria: str = "targeted"
    owner_id: str = DEMO_OWNER
    tags: Mapping[str, str] = field(default_factory=lambda: dict(DEMO_TAGS))
    daily_window: bool = False          # a Capacity Block from 00:00 to 00:00 UTC of the day


DEMO_RESERVATIONS: tuple[SimReservation, ...] = (
    SimReservation("cr-0demo0odcr0m5xl01", "m5.xlarge", "us-east-1a", 2),
    SimReservation("cr-0demo0block0p5001", "p5.48xlarge", "us-east-1b", 1, type="capacity-block", daily_window=True),
)


def _matches(r: SimReservation, term: Mapping[str, Any]) -> bool:
    if term.get("id"):
        return bool(term["id"] == r.id)
    tags = {str(k): str(v) for k, v in (term.get("tags") or {}).items()}
    if not tags and not term.get("instanceMatchCriteria"):
        return False
    if term.get("ownerID") and term["ownerID"] != r.owner_id:
        return False
    if term.get("instanceMatchCriteria") and term["instanceMatchCriteria"] != r.instance_match_criteria:
        return False
    return all(k in r.tags and (v == "*" or r.tags[k] == v) for k, v in tags.items())


def resolve(terms: Sequence[Mapping[str, Any]], *, now: datetime, used: Mapping[str, int],
            reservations: Iterable[SimReservation] = DEMO_RESERVATIONS) -> list[CapacityReservation]:
    """The reservations the terms select, with `used` (reservation id -> live instances in it) taken off."""
    out = []
    for r in reservations:
        if not any(_matches(r, t) for t in terms):
            continue
        starts = ends = None
        state = "active"
        if r.daily_window:
            starts = now.replace(hour=0, minute=0, second=0, microsecond=0)
            ends = starts + timedelta(days=1)
            if now >= ends - CAPACITY_BLOCK_LEAD_TIME:
                state = "expiring"
        out.append(CapacityReservation(
            id=r.id, instance_type=r.instance_type, zone=r.zone, available=max(0, r.total - used.get(r.id, 0)),
            total=r.total, owner_id=r.owner_id, instance_match_criteria=r.instance_match_criteria, type=r.type,
            starts=starts, ends=ends, state=state))
    return sorted(out, key=lambda c: c.id)
