"""Pending pods' reasons as a cluster sample stores them (MetricSample.unschedulable_reasons): written
by record_metrics (console.control.metrics), read back by the dashboards and /metrics.

A cluster sample's ``unschedulable_reasons`` holds two views of the same pending pods:
  "nodepool gpu: taint … not tolerated": n   — per NodePool: each pod once in every pool that refuses it;
  "pod: nodepool default: limit cpu=…": n     — per pod: each pod once, under its deciding reason.
Samples written before the per-pod keys existed have only the first; their pods are counted once as
NOT_RECORDED (the sample's pending count minus the pods it does attribute)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

WAITING = "waiting for the provisioner"
NO_REASON = "no reason recorded"
NOT_RECORDED = "reason not recorded (older sample)"
POD_PREFIX = "pod: "

# How close a NodePool came to taking the pod, by the kind of reason it gives (the engine's ReasonKind): a
# limit or capacity that blocks a pod the pool is meant for decides more than a taint or a label the pod was
# never meant to match. Kinds not listed rank in the middle.
_KIND_RANKS = {"limit": 0, "resources": 1, "constraints": 1, "offering": 1, "topology": 2, "node_affinity": 2,
               "requirement_conflict": 3, "requirement_labels": 3, "taint": 4, "nodepool_unusable": 5}
# Verdicts stored before reasons carried their kind: ranked by their wording, as they were then.
_LEGACY_RANKS = (("limit ", 0), ("would be exceeded", 0), ("no instance type", 1), ("topology", 2),
                 ("affinity", 2), ("requirement", 3), ("label", 3), ("taint", 4), ("nodepool unusable", 5))


def _reason_rank(item: Mapping[str, Any]) -> int:
    kind = item.get("kind")
    if isinstance(kind, str):
        detail = item.get("detail")
        if kind == "offering" and isinstance(detail, Mapping) and "key" in detail:
            return 3  # one requirement of the pod's matches no offering: a label it asks for
        return _KIND_RANKS.get(kind, 2)
    reason = str(item.get("reason", ""))
    return next((rank for needle, rank in _LEGACY_RANKS if needle in reason), 2)


def deciding_reason(reasons: Sequence[Mapping[str, Any]] | None) -> str:
    """The one reason a pending pod is counted under: among its NodePools (in the scheduler's order,
    highest weight first), the reason of the pool that came closest to taking it (see _REASON_RANKS)."""
    items = [r for r in reasons or [] if isinstance(r, Mapping)]
    if not items:
        return NO_REASON
    best = min(enumerate(items), key=lambda ir: (_reason_rank(ir[1]), ir[0]))[1]
    pool, reason = best.get("nodepool") or "", str(best.get("reason", ""))
    return f"nodepool {pool}: {reason}" if pool else reason


def pending_reason_counts(verdicts: Iterable[Sequence[Mapping[str, Any]] | None]) -> dict[str, int]:
    """What record_metrics stores as a cluster sample's `unschedulable_reasons`, from each pending pod's
    newest unschedulable verdict (its `details["reasons"]`, or None when the provisioner has not given
    one yet): both views, per NodePool and per pod (see the module's docstring)."""
    counts: dict[str, int] = defaultdict(int)
    for reasons in verdicts:
        if reasons is None:
            counts[WAITING] += 1
            counts[POD_PREFIX + WAITING] += 1
            continue
        for item in reasons:
            if isinstance(item, Mapping):
                counts[f"nodepool {item.get('nodepool')}: {item.get('reason')}"] += 1
        counts[POD_PREFIX + deciding_reason(reasons)] += 1
    return dict(counts)
