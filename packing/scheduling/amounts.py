"""Amounts the engine computes with, and what it says about pools and pods it cannot use.

Requests, capacities and limits are held in int64 arrays while planning, so the engine works with amounts up to
packing.resources.MAX_AMOUNT (2**60 milli-units): instance types beyond it are left out of the catalog, nodes'
allocatable and running pods' requests are clamped to it, and a pending pod requesting more is unschedulable
(packing.scheduling.reasons.beyond_range). A NodePool with no launchable type is named with no_options_reason().
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from packing.instancetype import InstanceType
from packing.nodepool import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL, ExistingNodeSpec
from packing.pods import Pod
from packing.scheduling import reasons
from packing.scheduling.reasons import Reason

if TYPE_CHECKING:
    from packing.scheduling.templates import PoolTemplate

__all__ = ["clamped_node", "clamped_pod", "no_options_reason", "representable_types"]


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


def no_options_reason(tpl: PoolTemplate, catalog: Sequence[InstanceType]) -> Reason:
    """Why a pool has no launchable instance type (for Scheduler.unusable_reasons)."""
    if not catalog:
        return reasons.pool_catalog_empty(tpl.name)
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
        return reasons.pool_no_matching_type(tpl.name, len(catalog))
    if not offered:
        return reasons.pool_no_offering(tpl.name, matching)
    return reasons.pool_daemonsets_too_large(tpl.name, tpl.ds_overhead.to_strings(), offered)
