"""Capacity reservations on EC2: an EC2NodeClass's capacityReservationSelectorTerms resolved through
DescribeCapacityReservations, and what a launch into one reservation adds to the launch template and CreateFleet.

As Karpenter (aws/karpenter-provider-aws pkg/providers/capacityreservation, pkg/apis/v1 CapacityReservationFromEC2):
- a term with an `id` is one query by CapacityReservationIds; a term with `tags` or `instanceMatchCriteria` is one
  query by filters (its `ownerID` as owner-id, each tag as tag:K=V or tag-key for "*", instance-match-criteria);
  every query asks for state "active" only, and a by-id query for an id that does not exist finds nothing;
- reservations are deduplicated by id, those past their EndDate dropped, and those with an instance match
  criteria or reservation type EC2 may add later refused (logged, left out) rather than guessed at;
- a Capacity Block is "expiring" from 40 minutes before its end: EC2 starts reclaiming its instances 30 minutes
  before the end, and the 10 minutes before that are the drain (EC2's own interruption notice comes then too).
- a launch into a reservation uses a launch template that targets that reservation with
  CapacityReservationPreference capacity-reservations-only, so it either lands in the reservation or fails (it never
  falls off onto plain on-demand); a Capacity Block adds InstanceMarketOptions MarketType capacity-block and the
  fleet's DefaultTargetCapacityType capacity-block, an interruptible reservation MarketType
  interruptible-capacity-reservation and DefaultTargetCapacityType reserved-capacity.

No Django here, and no client of its own: the provider hands in its EC2 client.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from console.backends.base import CapacityReservation, LaunchOption

log = logging.getLogger(__name__)

# Karpenter's capacityReservationExpirationPeriod: a Capacity Block's nodes go this long before its end.
CAPACITY_BLOCK_LEAD_TIME = timedelta(minutes=40)
INSTANCE_MATCH_CRITERIA = ("open", "targeted")
RESERVATION_TYPES = ("default", "capacity-block")
# DescribeCapacityReservations caps MaxResults at 1000 (and refuses it together with CapacityReservationIds).
MAX_RESULTS = 1000


@dataclass(frozen=True)
class Query:
    """One DescribeCapacityReservations call a selector term asks for."""

    id: str = ""
    owner_id: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)
    instance_match_criteria: str = ""

    def request(self) -> dict[str, Any]:
        filters: list[dict[str, Any]] = [{"Name": "state", "Values": ["active"]}]
        if self.id:
            return {"CapacityReservationIds": [self.id], "Filters": filters}
        if self.owner_id:
            filters.append({"Name": "owner-id", "Values": [self.owner_id]})
        for key, value in sorted(self.tags.items()):
            filters.append({"Name": "tag-key", "Values": [key]} if value == "*"
                           else {"Name": f"tag:{key}", "Values": [value]})
        if self.instance_match_criteria:
            filters.append({"Name": "instance-match-criteria", "Values": [self.instance_match_criteria]})
        return {"Filters": filters, "MaxResults": MAX_RESULTS}


def queries(terms: Iterable[Mapping[str, Any]]) -> list[Query]:
    """The queries of capacityReservationSelectorTerms (validation already refused malformed terms)."""
    out: list[Query] = []
    for term in terms:
        if term.get("id"):
            out.append(Query(id=str(term["id"])))
        tags = {str(k): str(v) for k, v in (term.get("tags") or {}).items()}
        if tags or term.get("instanceMatchCriteria"):
            out.append(Query(owner_id=str(term.get("ownerID") or ""), tags=tags,
                             instance_match_criteria=str(term.get("instanceMatchCriteria") or "")))
    return out


def _utc(value: Any) -> datetime | None:
    if value is None:
        return None
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def parse_reservation(raw: Mapping[str, Any], now: datetime) -> CapacityReservation | None:
    """One CapacityReservation of a DescribeCapacityReservations response; None (logged) for one Loadmaster cannot
    use: an instance match criteria or a reservation type it does not know."""
    rid = str(raw.get("CapacityReservationId", ""))
    criteria = str(raw.get("InstanceMatchCriteria", ""))
    if criteria not in INSTANCE_MATCH_CRITERIA:
        log.warning("capacity reservation %s: instance match criteria %r is not supported; left out", rid, criteria)
        return None
    rtype = str(raw.get("ReservationType") or "default")
    if rtype not in RESERVATION_TYPES:
        log.warning("capacity reservation %s: reservation type %r is not supported; left out", rid, rtype)
        return None
    ends = _utc(raw.get("EndDate"))
    expiring = rtype == "capacity-block" and ends is not None and now >= ends - CAPACITY_BLOCK_LEAD_TIME
    return CapacityReservation(
        id=rid, instance_type=str(raw["InstanceType"]), zone=str(raw["AvailabilityZone"]),
        available=int(raw.get("AvailableInstanceCount") or 0), total=int(raw.get("TotalInstanceCount") or 0),
        owner_id=str(raw.get("OwnerId", "")), instance_match_criteria=criteria, type=rtype,
        interruptible=bool(raw.get("Interruptible", False)), starts=_utc(raw.get("StartDate")), ends=ends,
        state="expiring" if expiring else "active")


def parse_reservations(raws: Iterable[Mapping[str, Any]], now: datetime) -> list[CapacityReservation]:
    """Deduplicated by id (several terms may select one reservation), without those already ended, sorted by id."""
    seen: dict[str, CapacityReservation] = {}
    for raw in raws:
        parsed = parse_reservation(raw, now)
        if parsed is None or parsed.id in seen or (parsed.ends is not None and parsed.ends <= now):
            continue
        seen[parsed.id] = parsed
    return [seen[k] for k in sorted(seen)]


def describe(ec2: Any, terms: Sequence[Mapping[str, Any]], now: datetime) -> list[CapacityReservation]:
    """Resolve the terms with one paginated DescribeCapacityReservations per query."""
    raws: list[Mapping[str, Any]] = []
    paginator = ec2.get_paginator("describe_capacity_reservations")
    for query in queries(terms):
        try:
            for page in paginator.paginate(**query.request()):
                raws += page.get("CapacityReservations") or []
        except ClientError as e:
            # A term naming a reservation that does not exist (or no longer does) selects nothing, as in Karpenter.
            if query.id and str(e.response.get("Error", {}).get("Code", "")).startswith(
                    "InvalidCapacityReservationId"):
                log.info("capacity reservation %s not found", query.id)
                continue
            raise
    return parse_reservations(raws, now)


# --- launching into a reservation ------------------------------------------------------------------------

def template_data(option: LaunchOption) -> dict[str, Any]:
    """What a launch template for `option`'s reservation adds to the NodeClass's template data."""
    data: dict[str, Any] = {"CapacityReservationSpecification": {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": option.reservation_id}}}
    if option.reservation_type == "capacity-block":
        data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    elif option.reservation_interruptible:
        data["InstanceMarketOptions"] = {"MarketType": "interruptible-capacity-reservation"}
    return data


def fleet_capacity_type(option: LaunchOption) -> str:
    """CreateFleet's DefaultTargetCapacityType for a launch into `option`'s reservation."""
    if option.reservation_type == "capacity-block":
        return "capacity-block"
    return "reserved-capacity" if option.reservation_interruptible else "on-demand"


def fleet_options(option: LaunchOption) -> dict[str, Any]:
    """The allocation options CreateFleet takes with that capacity type (a Capacity Block takes none)."""
    if option.reservation_type == "capacity-block":
        return {}
    if option.reservation_interruptible:
        return {"ReservedCapacityOptions": {"ReservationTypes": ["interruptible-capacity-reservation"]}}
    return {"OnDemandOptions": {"AllocationStrategy": "lowest-price"}}


def partition(options: Sequence[LaunchOption]) -> list[LaunchOption]:
    """The reserved options one CreateFleet may carry: those of the cheapest option's kind of reservation (one
    DefaultTargetCapacityType per fleet, as Karpenter partitions them), one per reservation, cheapest first."""
    reserved = sorted((o for o in options if o.capacity_type == "reserved" and o.reservation_id),
                      key=lambda o: (o.price, o.instance_type, o.reservation_id))
    if not reserved:
        return []
    kind = (reserved[0].reservation_type, reserved[0].reservation_interruptible)
    seen: set[str] = set()
    out = []
    for o in reserved:
        if (o.reservation_type, o.reservation_interruptible) == kind and o.reservation_id not in seen:
            seen.add(o.reservation_id)
            out.append(o)
    return out


def instance_reservation(raw: Mapping[str, Any]) -> str:
    """The reservation an instance of DescribeInstances runs in, when it was launched into one on purpose (targeted
    with capacity-reservations-only, or a Capacity Block): "" for an instance that merely matched an open one."""
    rid = str(raw.get("CapacityReservationId") or "")
    if not rid:
        return ""
    if raw.get("InstanceLifecycle") in ("capacity-block", "interruptible-capacity-reservation"):
        return rid
    spec = raw.get("CapacityReservationSpecification") or {}
    return rid if spec.get("CapacityReservationPreference") == "capacity-reservations-only" else ""

