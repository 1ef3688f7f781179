"""Amounts the engine computes with, and what it says about pools and pods it cannot use.

Requests, capacities and limits are held in int64 arrays while planning, so the engine works with amounts up to
packing.resources.MAX_AMOUNT (2**60 milli-units): instance types beyond it are left out of the catalog, nodes'
allocatable and running pods' requests are clamped to it, and a pending pod requesting more is unschedulable
with beyond_reason(). A NodePool with no launchable type is named with no_options_reason().
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from packing.instancetype import InstanceType
from packing.nodepool import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL, ExistingNodeSpec
from packing.pods import Pod
from packing.quantity import format_quantity
from packing.resources import MAX_AMOUNT, Resources

if TYPE_CHECKING:
    from packing.scheduling.scheduler import PoolTemplate

__all__ = ["beyond_reason", "clamped_node", "clamped_pod", "no_options_reason", "representable_types"]


def representable_types(types: Iterable[InstanceType]) -> list[InstanceType]:
    """The instance types whose capacity and overhead the engine can compute with (see MAX_AMOUNT)."""
    return [it for it in types if it.capacity.in_range() and it.overhead.in_range()]


def clamped_node(spec: ExistingNodeSpec) -> ExistingNodeSpec:
    """The node with its allocatable and capacity clamped to MAX_AMOUNT (itself when nothing needs it)."""
    if spec.allocatable.in_range() and (spec.capacity is None or spec.capacity.in_range()):
        return spec
    cap = spec.capacity.clamped() if spec.capacity is not None else None
    return dataclasses.replace(spec, allocatable=spec.allocatable.clamped(), capacity=cap)


def clamped_pod(p: Pod) -> Pod:
    """The pod with its requests clamped to MAX_AMOUNT (itself when nothing needs it): for pods that already
    run, whose requests only count toward their node's room."""
    return p if p.requests.in_range() else dataclasses.replace(p, requests=p.requests.clamped())


def beyond_reason(requests: Resources) -> str:
    """Why a pod requesting more than the engine computes with cannot be placed."""
    over = sorted(k for k, v in requests.items() if not -MAX_AMOUNT <= v <= MAX_AMOUNT)
    return (
        f"requests {', '.join(f'{k}={format_quantity(requests[k], k)}' for k in over)} beyond the largest "
        f"amount the engine plans with ({', '.join(format_quantity(MAX_AMOUNT, k) for k in over)})"
    )


def no_options_reason(tpl: PoolTemplate, catalog: Sequence[InstanceType]) -> str:
    """Why a pool has no launchable instance type (for Scheduler.unusable)."""
    if not catalog:
        return "the catalog has no instance types"
    type_reqs = tpl.base.restricted(tpl.type_keys)
    plain = [(k, r) for k, r in type_reqs.items() if k not in (ZONE_LABEL, CAPACITY_TYPE_LABEL)]
    zr, cr = type_reqs.get(ZONE_LABEL), type_reqs.get(CAPACITY_TYPE_LABEL)
    matching = 0
    offered = 0
    for it in catalog:
        labels = dict(it.labels)
        labels[INSTANCE_TYPE_LABEL] = it.name
        if not all(r.has(labels.get(k)) for k, r in plain):
            continue
        matching += 1
        if any(
            o.available and o.price is not None and (zr is None or zr.has(o.zone))
            and (cr is None or cr.has(o.capacity_type))
            for o in it.offerings
        ):
            offered += 1
    if not matching:
        return f"no instance type of the catalog ({len(catalog)} types) matches its requirements"
    if not offered:
        return (
            f"none of the {matching} instance types matching its requirements has an available, priced "
            "offering in the zones and capacity types it allows"
        )
    return (
        f"its DaemonSets' requests ({', '.join(f'{k}={v}' for k, v in tpl.ds_overhead.to_strings().items())}) "
        f"exceed the allocatable of every one of the {offered} instance types it could launch"
    )
