"""Limited offerings in a solve: capacity reservations (capacity type `reserved`, Karpenter's ReservationManager)
and the shares of commitments the engine prices at their marginal cost (packing.commitmentpricing).

A limited offering belongs to a pool with a count: a reservation's free instances (`Reservation.available`), a
commitment's rest (`Coverage.budget`, in the units one node takes). A Ledger holds what is left of each pool in
one solve. Choice sees limited offerings at their marginal price (`Offering.price`; a reservation is prepaid, so
0) and ranks reserved capacity first (Karpenter's order: reserved, spot, on-demand); the count is kept by
`settle`, run over the solve's NodeClaims before results are made: a claim whose pool has nothing left is moved
to its type's next offering, else to the next type that holds its pods, else it is not launched and its pods
are unschedulable (packing.scheduling.reasons.reservation_full). Bulk packing keeps the count as it packs too
(packing.scheduling.bulk), so that pods beyond a reservation are packed for the capacity they will get.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np

from packing.instancetype import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPE_SPOT,
    InstanceType,
    Offering,
    Reservation,
    ReservationType,
)
from packing.nodepool import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL, ExistingNodeSpec, NodePool
from packing.scheduling import reasons

if TYPE_CHECKING:
    from packing.scheduling.nodeclaim import NodeClaim
    from packing.scheduling.solve import Solve
    from packing.scheduling.templates import TypeOption

__all__ = [
    "CAPACITY_BLOCK_LEAD",
    "LIMITED_TIEBREAK",
    "RESERVATION_ID_LABEL",
    "RESERVATION_INTERRUPTIBLE_LABEL",
    "RESERVATION_TYPE_LABEL",
    "Ledger",
    "capacity_rank",
    "choice_catalog",
    "has_limited",
    "packing_price",
    "pool_of",
    "pool_may_use",
    "reservation_labels",
    "expiring",
    "settle",
    "without_expiring_blocks",
]

# the node labels of the AWS provider for a node launched into a capacity reservation
RESERVATION_ID_LABEL = "karpenter.k8s.aws/capacity-reservation-id"
RESERVATION_TYPE_LABEL = "karpenter.k8s.aws/capacity-reservation-type"
RESERVATION_INTERRUPTIBLE_LABEL = "karpenter.k8s.aws/capacity-reservation-interruptible"
# what the cost packer adds to a limited offering priced 0 so that it still fills those nodes rather than open
# one per pod (every bin at 0 costs the same); the plan's prices never include it
LIMITED_TIEBREAK = 1e-6


# how long before a Capacity Block's end its nodes are deleted (EC2 starts reclaiming 30 minutes
# before the end; the AWS provider deletes the NodeClaims 10 minutes earlier: aws/karpenter-provider-aws,
# pkg/controllers/capacityreservation/expiration/controller.go)
CAPACITY_BLOCK_LEAD = timedelta(minutes=40)


def pool_may_use(o: Offering, pool: NodePool) -> bool:
    """Whether a NodePool may launch on an offering, as far as reservations go: a reserved offering only for a pool
    whose capacity-type requirement names `reserved` (Karpenter's; a pool without that requirement keeps to spot and
    on-demand) and whose NodeClass selects the reservation (Reservation.node_classes)."""
    if o.reservation is None:
        return True
    cr = pool.requirements.get(CAPACITY_TYPE_LABEL)
    return cr is not None and cr.has(CAPACITY_TYPE_RESERVED) and o.reservation.serves(pool.node_class)


def expiring(r: Reservation, at: datetime) -> bool:
    """A Capacity Block within CAPACITY_BLOCK_LEAD of its end (or past it) at `at`."""
    return r.type == ReservationType.CAPACITY_BLOCK and r.ends is not None and r.ends - CAPACITY_BLOCK_LEAD <= at


def without_expiring_blocks(catalog: Sequence[InstanceType], at: datetime) -> list[InstanceType]:
    """The catalog with the offerings of Capacity Blocks that are expiring at `at` unavailable."""
    out: list[InstanceType] = []
    for it in catalog:
        if any(o.reservation is not None and expiring(o.reservation, at) for o in it.offerings):
            it = dataclasses.replace(
                it,
                offerings=tuple(
                    dataclasses.replace(o, available=False)
                    if o.reservation is not None and expiring(o.reservation, at)
                    else o
                    for o in it.offerings
                ),
            )
        out.append(it)
    return out


def capacity_rank(o: Offering) -> int:
    """Karpenter's capacity-type order: reserved first, then spot, then on-demand. On-demand capacity a
    commitment covers ranks with spot: between the two, the marginal price decides."""
    if o.capacity_type == CAPACITY_TYPE_RESERVED:
        return 0
    if o.capacity_type == CAPACITY_TYPE_SPOT or o.coverage is not None:
        return 1
    return 2


def pool_of(o: Offering) -> str | None:
    if o.reservation is not None:
        return "reservation/" + o.reservation.id
    if o.coverage is not None:
        return "commitment/" + o.coverage.pool
    return None


def packing_price(o: Offering) -> float:
    p = o.price or 0.0
    return p + LIMITED_TIEBREAK if o.limited else p


def has_limited(catalog: Sequence[InstanceType]) -> bool:
    return any(o.limited for it in catalog for o in it.offerings)


def choice_catalog(catalog: Sequence[InstanceType]) -> list[InstanceType]:
    """The catalog as the solve chooses on it: a reserved offering is prepaid (its reservation bills whether a
    node runs on it or not), so one more node on it costs 0; its listed price is kept in `list_price`."""
    out: list[InstanceType] = []
    for it in catalog:
        if any(o.reservation is not None and o.list_price is None for o in it.offerings):
            offs = tuple(
                dataclasses.replace(o, price=0.0, list_price=o.price)
                if o.reservation is not None and o.list_price is None and o.price is not None
                else o
                for o in it.offerings
            )
            it = dataclasses.replace(it, offerings=offs)
        out.append(it)
    return out


def reservation_labels(o: Offering) -> dict[str, str]:
    r = o.reservation
    if r is None:
        return {}
    return {
        RESERVATION_ID_LABEL: r.id,
        RESERVATION_TYPE_LABEL: r.type.value,
        RESERVATION_INTERRUPTIBLE_LABEL: "true" if r.interruptible else "false",
    }


class Ledger:
    """What is left of each limited pool: the least count any offering of the pool states (as Karpenter's
    ReservationManager, offerings of one reservation seen through several pools may disagree), less what the
    existing nodes take that the count does not hold yet.

    A reservation's free count (EC2's AvailableInstanceCount) holds the registered Nodes running in it, not the
    in-flight NodeClaims (kind "NodeClaim": their launch may not be in it yet), which come off. A commitment's
    rest (packing.commitmentpricing) is what the input's nodes left. `input_nodes`: the names of the run's
    input nodes, set by the disruption simulation, so that the replacements its earlier actions launched come
    off too (onto a reservation, or onto on-demand capacity a commitment covers). A node the solve excludes (to
    be disrupted) still holds its share: Karpenter launches the replacement before the node goes."""

    def __init__(
        self,
        catalog: Sequence[InstanceType],
        existing: Sequence[ExistingNodeSpec],
        input_nodes: Collection[str] | None = None,
    ) -> None:
        self.left: dict[str, float] = {}
        for it in catalog:
            for o in it.offerings:
                key = pool_of(o)
                if key is None:
                    continue
                cap = float(o.reservation.available) if o.reservation is not None else o.coverage.budget  # type: ignore[union-attr]
                if key not in self.left or cap < self.left[key]:
                    self.left[key] = cap
        if not self.left:
            return
        types = {it.name: it for it in catalog} if input_nodes is not None else {}
        for n in existing:
            launched = input_nodes is not None and n.name not in input_nodes
            rid = n.labels.get(RESERVATION_ID_LABEL)
            key = "reservation/" + rid if rid else ""
            if key in self.left:
                if n.kind == "NodeClaim" or launched:
                    self.left[key] = max(0.0, self.left[key] - 1)
                continue
            if launched and n.labels.get(CAPACITY_TYPE_LABEL) == CAPACITY_TYPE_ON_DEMAND:
                node_type = types.get(n.labels.get(INSTANCE_TYPE_LABEL, ""))
                zone = n.labels.get(ZONE_LABEL)
                for o in node_type.offerings if node_type is not None else ():
                    if o.coverage is not None and o.zone == zone and self.take(o):
                        break

    @staticmethod
    def units(o: Offering) -> float:
        return o.coverage.units if o.coverage is not None else 1.0

    def room(self, o: Offering) -> bool:
        key = pool_of(o)
        return key is None or self.left.get(key, 0.0) + 1e-9 >= self.units(o)

    def take(self, o: Offering) -> bool:
        key = pool_of(o)
        if key is None:
            return True
        if not self.room(o):
            return False
        self.left[key] -= self.units(o)
        return True


def _pods_admit(claim: NodeClaim, it: InstanceType, off: Offering) -> bool:
    """Do the claim's pods' node requirements allow this type and offering? A claim made by bulk packing carries
    only its pool's requirements, so moving it needs the pods' own checked: on the labels the type and the
    offering decide (the pool's own labels were compatible already)."""
    labels = {**it.labels, INSTANCE_TYPE_LABEL: it.name, ZONE_LABEL: off.zone, CAPACITY_TYPE_LABEL: off.capacity_type}
    for p in claim.pods:
        terms = p.node_requirement_terms()
        if terms and not any(all(r.has(labels[k]) for k, r in term.items() if k in labels) for term in terms):
            return False
    return True


def _refit(sv: Solve, claim: NodeClaim, ledger: Ledger) -> bool:
    """Move the claim off an offering whose pool has nothing left: its type's next offering, else the next type
    in ranked order that holds its pods (within the pool's limits). False when nothing is left to it."""
    assert claim.chosen is not None and claim.offering is not None
    tpl, reqs = claim.tpl, claim.base_reqs
    o = claim.chosen
    off = o.offering_within(reqs, ledger.room)
    if off is not None and not _pods_admit(claim, o.it, off):
        off = None
    if off is None:
        ports = tuple(hp for p in claim.pods for hp in p.host_ports)
        alloc_t, _, order = tpl.ranked(reqs)
        ok = np.ones(len(order), dtype=bool)
        for r, u in enumerate(claim.used):
            ok &= alloc_t[r] >= u
        for j in np.flatnonzero(ok).tolist():
            cand: TypeOption = tpl.options[int(order[j])]
            if cand is o or (ports and tpl.port_clash(ports, cand) is not None):
                continue
            if tpl.pool.limits:
                sv.limits.reserve(tpl, o.it.capacity, -1)
                fits = sv.limits.ok(tpl, cand.it.capacity)
                sv.limits.reserve(tpl, o.it.capacity)
                if not fits:
                    continue
            off = cand.offering_within(reqs, ledger.room)
            if off is not None and not _pods_admit(claim, cand.it, off):
                off = None
            if off is not None:
                if tpl.pool.limits:
                    sv.limits.reserve(tpl, o.it.capacity, -1)
                    sv.limits.reserve(tpl, cand.it.capacity)
                o = cand
                break
    if off is None:
        return False
    claim.reqs = reqs
    claim.fix(o, off)
    ledger.take(off)
    return True


def settle(sv: Solve, claims: list[NodeClaim]) -> list[NodeClaim]:
    """The claims that keep every limited pool within its count (in claim order), the others moved off it; a
    claim nothing is left to is dropped and its pods are unschedulable on its pool."""
    ledger = Ledger(sv.s.instance_types, sv.s.existing_nodes, sv.s.input_nodes)
    kept: list[NodeClaim] = []
    for claim in claims:
        off = claim.offering
        assert off is not None
        if ledger.take(off) or _refit(sv, claim, ledger):
            kept.append(claim)
            continue
        rid = off.reservation.id if off.reservation is not None else (off.coverage.pool if off.coverage else "")
        why = reasons.reservation_full(claim.tpl.name, rid)
        for p in claim.pods:
            sv.errors[p.key] = [why]
    return kept
