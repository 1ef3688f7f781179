"""Launching one NodeClaim: the offerings CreateFleet may choose from, the conditional UPDATE that gives the
launch to one worker, the fallback over refused offerings (remembered as unavailable for a while) and the ledger
line. The provision loop, the static NodePools' reconciler and the disrupt loop's replacements all launch here.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.utils import timezone

from console import adapters
from console.backends.aws import launch_with_fallback
from console.backends.base import CloudProvider, LaunchError, LaunchOption, LaunchRequest
from console.control.models import CapacityReservationStatus, UnavailableOffering
from console.control.reservations import LABEL_RESERVATION_ID, reservation_labels, with_reservations
from console.fleet.models import Decision, EC2NodeClass, NodeClaim, NodePool
from packing.api import InstanceType

log = logging.getLogger(__name__)


def _money(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(str(round(value, 6)))


MAX_LAUNCH_OPTIONS = 60


def unavailable_offerings(*, now: datetime) -> set[tuple[str, str, str]]:
    UnavailableOffering.objects.filter(expires_at__lte=now).delete()
    return set(UnavailableOffering.objects.values_list("instance_type", "zone", "capacity_type"))


def offering_mark_unavailable(*, options: Sequence[LaunchOption], reason: str, now: datetime | None = None) -> None:
    expires = (now or timezone.now()) + timedelta(seconds=settings.LOADMASTER_UNAVAILABLE_OFFERING_TTL)
    for option in options:
        UnavailableOffering.objects.update_or_create(
            instance_type=option.instance_type, zone=option.zone, capacity_type=option.capacity_type,
            defaults={"reason": reason[:128], "expires_at": expires})


def engine_catalog(*, nodeclasses: Sequence[EC2NodeClass], pools: Sequence[NodePool], now: datetime) -> list[InstanceType]:
    """The catalog of one loop run (adapters.engine_catalog) with the NodeClasses' capacity reservations as
    `reserved` offerings (console.control.reservations), without the offerings that failed lately; expired failures
    are pruned on the way."""
    types = with_reservations(adapters.engine_catalog(pools=pools, nodeclasses=nodeclasses), now=now)
    return adapters.with_unavailable(types, unavailable_offerings(now=now))


def claim_name(pool: str) -> str:
    """A new NodeClaim's name, as Karpenter makes them: the pool's name and a random suffix."""
    return f"{pool}-{secrets.token_hex(3)}"


def launch_options(claim: NodeClaim, catalog: Sequence[InstanceType],
                   reservations: Collection[str] | None = None) -> list[LaunchOption]:
    """The offerings CreateFleet may choose from, cheapest first: every compatible type the engine
    listed, in the zone and capacity type it planned (a topology spread may have pinned the zone).
    A reserved claim launches only into a reservation its EC2NodeClass selects (`reservations`), and into the one its
    karpenter.k8s.aws/capacity-reservation-id label names when the engine chose one."""
    by_name = {t.name: t for t in catalog}
    pinned = (claim.labels or {}).get(LABEL_RESERVATION_ID)
    options: list[LaunchOption] = []
    for name in claim.instance_type_options or [claim.instance_type]:
        itype = by_name.get(name)
        if itype is None:
            continue
        for offering in itype.offerings:
            if (offering.available and offering.price is not None and offering.zone == claim.zone
                    and offering.capacity_type == claim.capacity_type):
                r = offering.reservation
                if r is not None and ((reservations is not None and r.id not in reservations)
                                      or (pinned and r.id != pinned)):
                    continue
                options.append(LaunchOption(name, offering.zone, offering.capacity_type,  # type: ignore[arg-type]
                                            offering.price, reservation_id=r.id if r else "",
                                            reservation_type=str(r.type) if r else "",
                                            reservation_interruptible=r.interruptible if r else False))
    options.sort(key=lambda o: (o.price, o.instance_type))
    return options[:MAX_LAUNCH_OPTIONS]


def nodeclaim_launch(*, claim: NodeClaim, cloud: CloudProvider, catalog: Sequence[InstanceType],
                     now: datetime | None = None, pods: Sequence[str] = (), why: str = "",
                     details: dict[str, Any] | None = None) -> str:
    """Launch one claim. Returns "launched", "failed", "retry" or "taken" (another worker has it)."""
    now = now or timezone.now()
    won = NodeClaim.objects.filter(pk=claim.pk, launch_started_at__isnull=True, terminated_at__isnull=True,
                                   deletion_requested_at__isnull=True).update(launch_started_at=now)
    if not won:
        return "taken"
    claim.refresh_from_db()
    nodeclass = EC2NodeClass.objects.filter(
        name=claim.nodepool.node_class_name if claim.nodepool else "").first()
    if nodeclass is None:
        return _fail(claim, now, f"EC2NodeClass of nodepool {claim.nodepool_name} does not exist")
    selected = set(CapacityReservationStatus.objects.filter(nodeclass_name=nodeclass.name)
                   .values_list("reservation_id", flat=True))
    options = launch_options(claim, catalog, reservations=selected)
    if not options:
        return _fail(claim, now, "no launchable offering left (all unavailable or unpriced)")
    request = LaunchRequest(
        nodeclaim=claim.name, nodepool=claim.nodepool_name, cluster=settings.LOADMASTER_CLUSTER_NAME,
        nodeclass=nodeclass.field_values(), options=options, labels=dict(claim.labels or {}),
        taints=list(claim.taints or []))
    try:
        instance = launch_with_fallback(
            cloud, request, lambda refused: offering_mark_unavailable(options=refused, reason="InsufficientCapacity", now=now))
    except LaunchError as exc:
        if exc.retryable:
            NodeClaim.objects.filter(pk=claim.pk).update(launch_started_at=None)
            log.warning("NodeClaim %s: launch will be retried: %s", claim.name, exc)
            return "retry"
        return _fail(claim, now, f"launch failed: {exc}")
    chosen = next((o for o in options if o.instance_type == instance.instance_type and o.zone == instance.zone
                   and o.capacity_type == instance.capacity_type), None)
    price = instance.price if instance.price is not None else (chosen.price if chosen else None)
    old_price = claim.price_per_hour
    labels = dict(claim.labels or {})
    if instance.capacity_type == "reserved":
        # the node carries its reservation, as Karpenter labels it: what the Capacity Block loop and the why pages read
        into = next((o for o in options if o.reservation_id == instance.reservation_id), chosen)
        labels.update(reservation_labels(reservation_id=instance.reservation_id or (into.reservation_id if into else ""),
                                         reservation_type=into.reservation_type if into else "",
                                         interruptible=into.reservation_interruptible if into else False))
    NodeClaim.objects.filter(pk=claim.pk).update(
        instance_id=instance.instance_id, provider_id=instance.provider_id, launched_at=now,
        instance_type=instance.instance_type, zone=instance.zone, capacity_type=instance.capacity_type,
        price_per_hour=_money(price) if price is not None else old_price, labels=labels)
    claim.refresh_from_db()
    Decision.objects.create(
        at=now, kind=Decision.LAUNCH, nodepool=claim.nodepool, nodepool_name=claim.nodepool_name,
        nodes=[claim.name], pods=list(pods), cost_before=None, cost_after=claim.price_per_hour,
        why=why or f"launched {instance.instance_type} ({instance.capacity_type}, {instance.zone}) as {claim.name}",
        details={"instance_id": instance.instance_id, "options": len(options),
                 **({"reservation_id": labels[LABEL_RESERVATION_ID]} if LABEL_RESERVATION_ID in labels else {}),
                 **(details or {})},
    )
    return "launched"


def _fail(claim: NodeClaim, now: datetime, reason: str) -> str:
    NodeClaim.objects.filter(pk=claim.pk).update(terminated_at=now, termination_reason=reason[:255])
    Decision.objects.create(at=now, kind=Decision.FAILURE, nodepool=claim.nodepool, nodepool_name=claim.nodepool_name,
                            nodes=[claim.name], why=f"NodeClaim {claim.name}: {reason}")
    log.warning("NodeClaim %s: %s", claim.name, reason)
    return "failed"
