"""The consolidate report as JSON (the shape issue 5 fixes) and as a readable text listing."""

from __future__ import annotations

import math
from typing import Any, TextIO

from packing.disruption.balanced import THRESHOLD
from packing.disruption.model import Action, NotDisrupted, Report
from packing.poolschedule import describe as describe_windows

__all__ = ["action_json", "not_disrupted_json", "render_json", "render_text"]


def render_json(r: Report) -> dict[str, Any]:
    doc = _render_json(r)
    if r.unusable_nodepools:
        # only when there is one, so that a healthy run's document keeps exactly its three keys
        doc["unusable_nodepools"] = dict(sorted(r.unusable_nodepools.items()))
    if r.buffers:
        # only with CapacityBuffers in the input, as the plan document's `buffers` key (the same fields)
        doc["buffers"] = [b.json() for b in r.buffers]
    if r.schedules:
        # only when a NodePool's clock-policy window was open at the run's time (packing.poolschedule)
        doc["schedules"] = [w.as_json() for w in r.schedules]
    return doc


def action_json(a: Action) -> dict[str, Any]:
    """One action as the document's `actions` list holds it."""
    return {
        "type": a.type,
        "reason": a.reason,
        "nodes": a.nodes,
        "replacements": a.replacements,
        "savings_per_hour": round(a.savings_per_hour, 6),
        "moves": a.moves,
        "why": a.why,
        # consolidationPolicy Balanced: the move's score and the threshold it met (None when not scored)
        "score": _score(a.score),
        "score_threshold": None if a.score is None else THRESHOLD,
    }


def _score(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else round(v, 6)


def not_disrupted_json(n: NotDisrupted) -> dict[str, Any]:
    """One spared node as the document's `not_disrupted` list holds it."""
    return {
        "node": n.node,
        "reason": n.reason,
        "blocked_by": n.blocked_by,
        "savings_per_hour": None if n.savings_per_hour is None else round(n.savings_per_hour, 6),
        "category": n.category.value,
        "cheapest_replacement": None if n.cheapest_replacement is None else {
            "instance_type": n.cheapest_replacement.instance_type,
            "capacity_type": n.cheapest_replacement.capacity_type,
            "price_per_hour": n.cheapest_replacement.price_per_hour,
        },
        # with category below-score-threshold: the Balanced score that failed, and the threshold it missed
        "score": _score(n.score),
        "score_threshold": None if n.score is None else THRESHOLD,
    }


def _render_json(r: Report) -> dict[str, Any]:
    return {
        "actions": [action_json(a) for a in r.actions],
        "not_disrupted": [not_disrupted_json(n) for n in r.not_disrupted],
        "summary": {
            "nodes": r.nodes,
            "cost_per_hour_before": round(r.cost_before, 6),
            "cost_per_hour_after": round(r.cost_after, 6),
            "solve_seconds": round(r.solve_seconds, 4),
        },
    }


def render_text(r: Report, out: TextIO) -> None:
    w = out.write
    if r.schedules:
        w("Clock-policy windows in force:\n")
        for line in describe_windows(r.schedules):
            w(f"  {line}\n")
    if r.actions:
        w("Actions, in order:\n")
        for i, a in enumerate(r.actions, 1):
            scored = "" if a.score is None else f" (score {a.score:.2f}, threshold {THRESHOLD:.2f})"
            w(f"  {i}. {a.type} ({a.reason}) {', '.join(a.nodes)}: saves ${a.savings_per_hour:.4f}/h{scored}\n")
            w(f"     why: {a.why}\n")
            for c in a.replacements:
                w(
                    f"     launch {c['name']}: {c['instance_type']} {c['capacity_type']} in {c['zone']} "
                    f"at ${c['price_per_hour']:.4f}/h\n"
                )
            if a.moves:
                by_target: dict[str, list[str]] = {}
                for pod, target in a.moves.items():
                    by_target.setdefault(target, []).append(pod)
                for target, pods in sorted(by_target.items()):
                    w(f"     -> {target}: {', '.join(sorted(pods))}\n")
    else:
        w("Actions: none\n")
    if r.not_disrupted:
        w("Not disrupted:\n")
        width = max(len(n.node) for n in r.not_disrupted)
        for n in r.not_disrupted:
            blocked = ""
            if n.blocked_by is not None and n.savings_per_hour is not None:
                blocked = f" (blocked by {n.blocked_by}; would save ${n.savings_per_hour:.4f}/h)"
            w(f"  {n.node.ljust(width)}  {n.reason}{blocked}\n")
    if r.unusable_nodepools:
        w("Unusable nodepools (left out; every other nodepool was consolidated):\n")
        for name, why in sorted(r.unusable_nodepools.items()):
            w(f"  {name}: {why}\n")
    w(
        f"Nodes: {r.nodes}   Cost: ${r.cost_before:.4f}/h -> ${r.cost_after:.4f}/h "
        f"(saves ${r.cost_before - r.cost_after:.4f}/h)   Solve: {r.solve_seconds:.3f}s\n"
    )
