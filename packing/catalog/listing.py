"""The catalog as `python -m packing catalog` lists it: instance types filtered by label requirements (zone and
capacity-type requirements narrow the offerings), in the order the AWS docs list them, as JSON objects or as a
text table."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from packing.catalog.specs import LABEL_CAPACITY_TYPE, LABEL_ZONE, InstanceSpec
from packing.instancetype import InstanceType, Offering
from packing.requirements import Requirement
from packing.resources import CPU, MEMORY, PODS

__all__ = ["FAMILY_LABEL", "apply_filters", "instance_type_to_json", "listed", "render_text"]

_OFFERING_KEYS = (LABEL_ZONE, LABEL_CAPACITY_TYPE)
FAMILY_LABEL = "karpenter.k8s.aws/instance-family"


def _offering_matches(req: Requirement, o: Offering) -> bool:
    value = o.zone if req.key == LABEL_ZONE else o.capacity_type
    return req.has(value)


def apply_filters(types: Sequence[InstanceType], reqs: Sequence[Requirement]) -> list[InstanceType]:
    """Keep types whose labels satisfy every requirement; zone / capacity-type requirements narrow the offerings."""
    out: list[InstanceType] = []
    for t in types:
        if not all(r.has(t.labels.get(r.key)) for r in reqs if r.key not in _OFFERING_KEYS):
            continue
        offering_reqs = [r for r in reqs if r.key in _OFFERING_KEYS]
        if offering_reqs:
            kept = tuple(o for o in t.offerings if all(_offering_matches(r, o) for r in offering_reqs))
            if not kept:
                continue
            t = InstanceType(t.name, t.capacity, t.overhead, t.labels, kept)
        out.append(t)
    return out


def _on_demand(t: InstanceType) -> Offering | None:
    return next((o for o in t.offerings if o.capacity_type == "on-demand"), None)


def instance_type_to_json(t: InstanceType, spec: InstanceSpec | None = None) -> dict[str, Any]:
    """The `--output json` object of one type (the console's catalog API can reuse it)."""
    od = _on_demand(t)
    out: dict[str, Any] = {
        "name": t.name,
        "labels": dict(sorted(t.labels.items())),
        "capacity": t.capacity.to_strings(),
        "overhead": t.overhead.to_strings(),
        "allocatable": t.allocatable.to_strings(),
        "on_demand_price": od.price if od else None,
        "on_demand_source": od.price_source if od else "price unknown",
        "zones": sorted({o.zone for o in t.offerings}),
        "offerings": [
            {
                "zone": o.zone,
                "capacityType": o.capacity_type,
                "price": o.price,
                "price_source": o.price_source,
                "available": o.available,
            }
            for o in t.offerings
        ],
    }
    if spec is not None:
        # the raw EC2 facts the labels do not carry (ENI limits, bare metal, burstable, neuron cores...)
        out["spec"] = dataclasses.asdict(spec)
    return out


def _fmt_price(p: float | None) -> str:
    return "unknown" if p is None else f"{p:.4f}"


def render_text(types: Sequence[InstanceType], header: list[str]) -> str:
    """The text table, under `header` (comment lines), with a count at the end."""
    rows = [
        (
            "NAME",
            "ARCH",
            "CPU",
            "MEMORY",
            "PODS",
            "ALLOC CPU",
            "ALLOC MEM",
            "ON-DEMAND $/H",
            "SPOT $/H (min)",
            "ZONES",
        )
    ]
    for t in types:
        od = _on_demand(t)
        spots = [o for o in t.offerings if o.capacity_type == "spot" and o.price is not None]
        best = min(spots, key=lambda o: o.price or 0.0) if spots else None
        spot = (
            "-"
            if best is None
            else _fmt_price(best.price) + (" est" if best.price_source == "estimate" else "")
        )
        cap, alloc = t.capacity.to_strings(), t.allocatable.to_strings()
        zones = sorted(
            {
                o.zone[-1:] if o.zone[:-1] == t.labels.get("topology.kubernetes.io/region") else o.zone
                for o in t.offerings
            }
        )
        rows.append(
            (
                t.name,
                t.labels.get("kubernetes.io/arch", ""),
                cap.get(CPU, "0"),
                cap.get(MEMORY, "0"),
                cap.get(PODS, "0"),
                alloc.get(CPU, "0"),
                alloc.get(MEMORY, "0"),
                _fmt_price(od.price if od else None) if od and od.price is not None else "price unknown",
                spot,
                ",".join(zones),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = list(header)
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append(f"{len(types)} instance types")
    return "\n".join(lines)


def listed(types: Sequence[InstanceType], reqs: Sequence[Requirement]) -> list[InstanceType]:
    """apply_filters, sorted by family, then size by resources: reads like the AWS docs (m5.large before
    m5.xlarge before m5.2xlarge)."""
    return sorted(
        apply_filters(types, reqs),
        key=lambda t: (
            t.labels.get(FAMILY_LABEL, t.name),
            t.capacity.get(CPU),
            t.capacity.get(MEMORY),
            t.name,
        ),
    )
