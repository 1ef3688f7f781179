"""The plan as the plan CLI prints it: a JSON document (`--output json`, the shape other tools read) or a text
listing. The console stores the same document when it saves a replay; every key stays (add, never rename)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from packing.pods import IgnoredPod
from packing.poolschedule import describe as describe_windows
from packing.scheduling.reasons import Reason
from packing.scheduling.results import ExistingPlacement, PlannedNodeClaim, Results

__all__ = [
    "existing_json",
    "ignored_json",
    "nodeclaim_json",
    "reason_json",
    "render_json",
    "render_text",
    "unschedulable_json",
]


def nodeclaim_json(c: PlannedNodeClaim) -> dict[str, Any]:
    """One planned NodeClaim as the document's `nodeclaims` list holds it (a replacement in a consolidation
    action has the same shape)."""
    return {
        "name": c.name,
        "nodepool": c.nodepool,
        "instance_type": c.instance_type,
        "instance_type_options": c.instance_type_options,
        "capacity_type": c.capacity_type,
        "zone": c.zone,
        "price_per_hour": round(c.price_per_hour, 6),
        "labels": c.labels,
        "taints": [t.to_dict() for t in c.taints],
        "startup_taints": [t.to_dict() for t in c.startup_taints],
        "pods": sorted(p.key for p in c.pods),
        "requests": c.requests.to_strings(),
        "allocatable": c.allocatable.to_strings(),
        "min_values_relaxed": c.min_values_relaxed,
    }


def existing_json(e: ExistingPlacement) -> dict[str, Any]:
    return {
        "name": e.name,
        "kind": e.kind,
        "pods": sorted(p.key for p in e.pods),
        "price_per_hour": e.price_per_hour,
    }


def _plain(value: Any) -> Any:
    """A Reason detail as JSON holds it (tuples become lists), so that a stored copy compares equal to a new one."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def reason_json(r: Reason) -> dict[str, Any]:
    """One Reason: `nodepool` and `reason` (the text) as ever, with `kind` (a ReasonKind value) and `detail` (the
    names and figures the text is made from; its keys per kind are listed on ReasonKind) for tools to read."""
    return {"nodepool": r.nodepool, "reason": r.text, "kind": r.kind.value, "detail": _plain(r.detail)}


def unschedulable_json(pod: str, reasons: Sequence[Reason]) -> dict[str, Any]:
    """One unschedulable pod with one reason per NodePool (nodepool "" when no NodePool is to blame)."""
    return {"pod": pod, "reasons": [reason_json(r) for r in reasons]}


def ignored_json(ignored: Sequence[IgnoredPod]) -> list[dict[str, str]]:
    """The pods not provisioned for (Inputs.ignored), by name: `[{"pod": "ns/name", "why": "scheduling gate …"}]`."""
    return [{"pod": i.key, "why": i.why} for i in sorted(ignored, key=lambda i: i.key)]


def render_json(res: Results, ignored: Sequence[IgnoredPod] = ()) -> dict[str, Any]:
    """The `--output json` document of a plan; `ignored` the pods of its inputs it was not made for. `buffers`
    (what each CapacityBuffer reserved) only when the input had any."""
    doc: dict[str, Any] = {
        "nodeclaims": [nodeclaim_json(c) for c in res.nodeclaims],
        "existing_nodes": [existing_json(e) for e in res.existing],
        "unschedulable": [unschedulable_json(pod, reasons) for pod, reasons in sorted(res.unschedulable_reasons.items())],
        "ignored": ignored_json(ignored),
        "summary": {
            "pending_pods": res.pending,
            "scheduled": res.scheduled,
            "unschedulable": len(res.unschedulable),
            "ignored": len(ignored),
            "new_nodeclaims": len(res.nodeclaims),
            "cost_per_hour": res.cost_per_hour,
            "lower_bound_per_hour": None if res.lower_bound is None else round(res.lower_bound, 6),
            "existing_cost_per_hour": res.existing_cost_per_hour,
            "solve_seconds": round(res.solve_seconds, 4),
        },
    }
    if res.buffers:
        doc["buffers"] = [b.json() for b in res.buffers]
    if res.schedules:
        # only when a NodePool's clock-policy window was open at the plan's time (packing.poolschedule)
        doc["schedules"] = [w.as_json() for w in res.schedules]
    return doc


def render_text(res: Results, out: TextIO, ignored: Sequence[IgnoredPod] = ()) -> None:
    """The `--output text` listing of a plan (`ignored` as for render_json)."""
    w = out.write
    if res.nodeclaims:
        rows = [("NODECLAIM", "NODEPOOL", "TYPE", "ZONE", "CAPACITY", "$/H", "PODS")]
        for c in res.nodeclaims:
            pods = ", ".join(sorted(p.key for p in c.pods))
            rows.append(
                (
                    c.name,
                    c.nodepool,
                    c.instance_type,
                    c.zone,
                    c.capacity_type,
                    f"{c.price_per_hour:.4f}",
                    pods,
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(6)]
        w("Nodes to launch:\n")
        for r in rows:
            w("  " + "  ".join(r[i].ljust(widths[i]) for i in range(6)) + "  " + r[6] + "\n")
    else:
        w("Nodes to launch: none\n")
    placed = [e for e in res.existing if e.pods]
    if placed:
        w("Placed on existing nodes:\n")
        for e in placed:
            w(f"  {e.name}: {', '.join(sorted(p.key for p in e.pods))}\n")
    if res.unschedulable:
        w("Unschedulable pods:\n")
        for pod, reasons in sorted(res.unschedulable.items()):
            w(f"  {pod}\n")
            for np_, why in reasons:
                w(f"    - nodepool {np_}: {why}\n" if np_ else f"    - {why}\n")
    if res.schedules:
        w("Clock-policy windows in force:\n")
        for line in describe_windows(res.schedules):
            w(f"  {line}\n")
    if ignored:
        w("Not provisioned for (ignored):\n")
        for i in ignored_json(ignored):
            w(f"  {i['pod']}: {i['why']}\n")
    bound = "n/a" if res.lower_bound is None else f"${res.lower_bound:.4f}/h"
    also = f", {len(ignored)} ignored" if ignored else ""
    w(
        f"Pods: {res.pending} pending, {res.scheduled} scheduled, {len(res.unschedulable)} unschedulable{also}; "
        f"{len(res.nodeclaims)} new nodeclaims\n"
    )
    w(f"Total cost: ${res.cost_per_hour:.4f}/h   Lower bound: {bound}   Solve: {res.solve_seconds:.3f}s\n")
