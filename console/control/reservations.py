"""Capacity reservations in the loops (issue 19): the sync that resolves every EC2NodeClass's
capacityReservationSelectorTerms through the cloud backend into CapacityReservationStatus rows, the `reserved`
offerings those rows add to the engine's catalog, and the Capacity Block loop that drains and terminates the
nodes on a block before the block ends, with a ledger entry each.

As Karpenter: a reserved offering is priced at the type's on-demand price divided by 10,000,000 (the reservation is
paid for whether used or not, so it is all but free, while the ratio keeps consolidation's ordering) and is available
while the reservation has free instances and is not expiring; a launch counts against a reservation's free instances
until the next sync reports it (Karpenter's availability cache, MarkLaunched); a Capacity Block's NodeClaims are
deleted from 40 minutes before its end (pkg/controllers/capacityreservation/expiration), 10 minutes before EC2
starts reclaiming the instances.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from console.backends.aws_reservations import CAPACITY_BLOCK_LEAD_TIME
from console.backends.base import CapacityReservation, CloudProvider
from console.control.models import CapacityReservationStatus
from console.fleet.models import Decision, EC2NodeClass, NodeClaim
from console.fleet.services import nodeclaims_mark_for_deletion
from packing.api import CAPACITY_TYPE_RESERVED, InstanceType, Offering, Reservation, ReservationType

log = logging.getLogger(__name__)

LABEL_CAPACITY_TYPE = "karpenter.sh/capacity-type"
LABEL_RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"
LABEL_RESERVATION_TYPE = "karpenter.k8s.aws/capacity-reservation-type"
LABEL_RESERVATION_INTERRUPTIBLE = "karpenter.k8s.aws/capacity-reservation-interruptible"
# Karpenter's divisor of the on-demand price for a reserved offering's price.
RESERVED_PRICE_DIVISOR = 10_000_000.0
# the ledger reason of a node removed ahead of its Capacity Block's end: the engine's (packing.disruption.capacityblock)
CAPACITY_BLOCK_ENDING = "capacity-block-expiring"


def reservation_labels(*, reservation_id: str, reservation_type: str, interruptible: bool) -> dict[str, str]:
    """The labels of a node launched into a reservation (Karpenter's)."""
    return {LABEL_CAPACITY_TYPE: CAPACITY_TYPE_RESERVED, LABEL_RESERVATION_ID: reservation_id,
            LABEL_RESERVATION_TYPE: reservation_type or "default",
            LABEL_RESERVATION_INTERRUPTIBLE: "true" if interruptible else "false"}


def labels_of_reservation(reservation_id: str) -> dict[str, str]:
    """reservation_labels for a reservation known by its id only (an adopted instance): its type and interruptible
    from the last sync's status."""
    row = CapacityReservationStatus.objects.filter(reservation_id=reservation_id).order_by("-synced_at").first()
    return reservation_labels(reservation_id=reservation_id, reservation_type=row.type if row else "",
                              interruptible=row.interruptible if row else False)


# --- sync ------------------------------------------------------------------------------------------------

@dataclass
class SyncOutcome:
    resolved: dict[str, list[str]] = field(default_factory=dict)    # NodeClass -> reservation ids
    failed: dict[str, str] = field(default_factory=dict)             # NodeClass -> why (its old rows stay)


def _row(nodeclass: str, r: CapacityReservation, now: datetime) -> CapacityReservationStatus:
    return CapacityReservationStatus(
        nodeclass_name=nodeclass, reservation_id=r.id, instance_type=r.instance_type, zone=r.zone,
        available=r.available, total=r.total, owner_id=r.owner_id, instance_match_criteria=r.instance_match_criteria,
        type=r.type, interruptible=r.interruptible, starts=r.starts, ends=r.ends, state=r.state, synced_at=now)


def reservations_sync(*, cloud: CloudProvider, now: datetime | None = None) -> SyncOutcome:
    """Resolve every EC2NodeClass's capacityReservationSelectorTerms and store the result. A NodeClass whose
    resolution fails keeps its previous rows (a Describe that failed this once is no reason to drop offerings)."""
    now = now or timezone.now()
    outcome = SyncOutcome()
    classes = list(EC2NodeClass.objects.all())
    CapacityReservationStatus.objects.exclude(nodeclass_name__in=[c.name for c in classes]).delete()
    for nodeclass in classes:
        terms = list(nodeclass.capacity_reservation_selector_terms or [])
        found: list[CapacityReservation] = []
        if terms:
            try:
                found = cloud.capacity_reservations(terms)
            except Exception as exc:  # botocore's errors have no common base worth naming; each means "not now"
                outcome.failed[nodeclass.name] = f"{type(exc).__name__}: {exc}"[:500]
                log.warning("EC2NodeClass %s: capacity reservations not resolved: %s", nodeclass.name, exc)
                continue
        with transaction.atomic():
            CapacityReservationStatus.objects.filter(nodeclass_name=nodeclass.name).delete()
            CapacityReservationStatus.objects.bulk_create([_row(nodeclass.name, r, now) for r in found])
        outcome.resolved[nodeclass.name] = [r.id for r in found]
    return outcome


def nodeclass_reservations(*, nodeclass_name: str) -> list[CapacityReservationStatus]:
    """The reservations the NodeClass resolved to at the last sync (its status)."""
    return list(CapacityReservationStatus.objects.filter(nodeclass_name=nodeclass_name))


# --- the catalog -----------------------------------------------------------------------------------------

def _launched_since_sync(rows: Sequence[CapacityReservationStatus]) -> dict[str, int]:
    """reservation id -> NodeClaims launched into it after its last sync (not yet in its AvailableInstanceCount)."""
    if not rows:
        return {}
    synced = {r.reservation_id: r.synced_at for r in rows}
    out: dict[str, int] = {}
    for labels, launched in (NodeClaim.objects.filter(launched_at__gte=min(synced.values()), terminated_at__isnull=True)
                             .values_list("labels", "launched_at")):
        rid = (labels or {}).get(LABEL_RESERVATION_ID)
        if rid in synced and launched is not None and launched >= synced[rid]:
            out[rid] = out.get(rid, 0) + 1
    return out


def reserved_offerings(types: Sequence[InstanceType], rows: Iterable[CapacityReservationStatus], *, now: datetime,
                       launched: Mapping[str, int] | None = None) -> list[InstanceType]:
    """The catalog with one `reserved` offering per reservation (once, carrying the NodeClasses that select it, so
    that only their NodePools launch into it) on its instance type, in its zone. A reservation of a type the catalog
    does not have adds nothing."""
    launched = launched or {}
    by_id: dict[str, CapacityReservationStatus] = {}
    classes: dict[str, set[str]] = {}  # reservation id -> the NodeClasses selecting it: only their pools use it
    for row in rows:
        by_id.setdefault(row.reservation_id, row)
        classes.setdefault(row.reservation_id, set()).add(row.nodeclass_name)
    if not by_id:
        return list(types)
    added: dict[str, list[Offering]] = {}
    for rid, row in sorted(by_id.items()):
        free = max(0, row.available - launched.get(rid, 0))
        expiring = row.state == "expiring" or (
            row.type == CapacityReservationStatus.CAPACITY_BLOCK and row.ends is not None
            and now >= row.ends - CAPACITY_BLOCK_LEAD_TIME)
        started = row.starts is None or row.starts <= now
        added.setdefault(row.instance_type, []).append(Offering(
            zone=row.zone, capacity_type=CAPACITY_TYPE_RESERVED, price=None, available=free > 0 and not expiring
            and started, price_source=f"reservation {rid}",
            reservation=Reservation(id=rid, available=free, capacity=row.total, ends=row.ends,
                                    type=ReservationType(row.type), interruptible=row.interruptible,
                                    owner_id=row.owner_id, node_classes=frozenset(classes[rid]))))
    out = []
    for itype in types:
        extra = added.get(itype.name)
        if extra:
            on_demand = {o.zone: o.price for o in itype.offerings if o.capacity_type == "on-demand" and o.price}
            priced = tuple(dataclasses.replace(o, price=on_demand.get(o.zone, 0.0) / RESERVED_PRICE_DIVISOR)
                           for o in extra)
            itype = dataclasses.replace(itype, offerings=itype.offerings + priced)
        out.append(itype)
    return out


def with_reservations(types: Sequence[InstanceType], *, now: datetime | None = None) -> list[InstanceType]:
    """reserved_offerings with the stored rows and the launches since their sync: what engine_catalog adds."""
    rows = list(CapacityReservationStatus.objects.all())
    if not rows:
        return list(types)
    return reserved_offerings(types, rows, now=now or timezone.now(), launched=_launched_since_sync(rows))


# --- the Capacity Block loop -----------------------------------------------------------------------------

def ending_blocks(rows: Iterable[CapacityReservationStatus], *, now: datetime) -> dict[str, CapacityReservationStatus]:
    """Capacity Blocks within their last 40 minutes (or past their end), by id: their nodes must go now."""
    return {r.reservation_id: r for r in rows
            if r.type == CapacityReservationStatus.CAPACITY_BLOCK and r.ends is not None
            and now >= r.ends - CAPACITY_BLOCK_LEAD_TIME}


def capacity_blocks_run(*, now: datetime | None = None) -> list[str]:
    """Mark the NodeClaims on an ending Capacity Block for deletion (the lifecycle loop cordons, drains through
    evictions and terminates them) and write one ledger entry per NodeClaim. Returns the claims marked."""
    now = now or timezone.now()
    blocks = ending_blocks(CapacityReservationStatus.objects.filter(type=CapacityReservationStatus.CAPACITY_BLOCK),
                           now=now)
    if not blocks:
        return []
    marked: list[str] = []
    for claim in NodeClaim.objects.filter(terminated_at__isnull=True, deletion_requested_at__isnull=True):
        rid = (claim.labels or {}).get(LABEL_RESERVATION_ID)
        block = blocks.get(rid or "")
        if block is None or block.ends is None:
            continue
        ends = block.ends.astimezone(now.tzinfo)
        reason = f"{CAPACITY_BLOCK_ENDING}: capacity block {rid} ends at {ends:%Y-%m-%d %H:%M} UTC"
        if not nodeclaims_mark_for_deletion(claims=NodeClaim.objects.filter(pk=claim.pk), reason=reason, now=now):
            continue
        NodeClaim.objects.filter(pk=claim.pk, disrupting_at__isnull=True).update(disrupting_at=now)
        Decision.objects.create(
            at=now, kind=Decision.DISRUPTION, nodepool=claim.nodepool, nodepool_name=claim.nodepool_name,
            nodes=[claim.name], cost_before=claim.price_per_hour, cost_after=None,
            why=(f"NodeClaim {claim.name} ({claim.instance_type}, {claim.zone}) runs on capacity block {rid}, which "
                 f"ends at {ends:%Y-%m-%d %H:%M} UTC: drained and terminated from "
                 f"{int(CAPACITY_BLOCK_LEAD_TIME.total_seconds() // 60)} minutes before the end, ahead of EC2 "
                 f"reclaiming the block's instances"),
            details={"reason": CAPACITY_BLOCK_ENDING, "reservation_id": rid,
                     "starts": block.starts.isoformat() if block.starts else None, "ends": block.ends.isoformat(),
                     "lead_time_seconds": int(CAPACITY_BLOCK_LEAD_TIME.total_seconds())})
        log.info("NodeClaim %s: %s; deleting", claim.name, reason)
        marked.append(claim.name)
    return marked


def node_capacity_block(*, node_name: str) -> CapacityReservationStatus | None:
    """The Capacity Block the node's NodeClaim runs on, if any (the why-node page shows its window)."""
    claim = NodeClaim.objects.filter(node_name=node_name).order_by("-created_at").first()
    rid = (claim.labels or {}).get(LABEL_RESERVATION_ID) if claim is not None else None
    if not rid:
        return None
    return (CapacityReservationStatus.objects.filter(reservation_id=rid)
            .order_by("-synced_at").first())
