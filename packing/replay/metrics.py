"""What one run of a replay (or what actually happened) adds up to."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["RunMetrics", "Sample", "percentile"]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank percentile (q in 0..100) of `values`, None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Sample:
    at: datetime
    cost_per_hour: float
    nodes: int
    pending_pods: int


@dataclass
class RunMetrics:
    """Totals of one run over the replay window. Costs in dollars; node-hours by capacity type; pending seconds
    per pending episode (a pod's arrival, or its eviction, to its binding)."""

    cost: float = 0.0
    unpriced_node_hours: float = 0.0
    node_hours: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    evictions: Counter[str] = field(default_factory=Counter)  # by disruption reason
    nodes_disrupted: Counter[str] = field(default_factory=Counter)  # by reason
    nodes_launched: int = 0
    pending_seconds: list[float] = field(default_factory=list)
    never_scheduled: int = 0
    interruptions: int = 0
    interruptions_absorbed: int = 0
    disruption_runs: int = 0  # consolidation evaluations the run made (packing.replay.world's trigger)
    samples: list[Sample] = field(default_factory=list)
    cost_by_day: dict[str, float] = field(default_factory=dict)

    def add_node_time(self, start: datetime, end: datetime, price: float | None, capacity_type: str) -> None:
        """A node billed over [start, end): its cost and node-hours, split by UTC day."""
        if end <= start:
            return
        hours = (end - start).total_seconds() / 3600
        self.node_hours[capacity_type] += hours
        if price is None:
            self.unpriced_node_hours += hours
            return
        self.cost += price * hours
        t = start
        while t < end:
            day_end = datetime(t.year, t.month, t.day, tzinfo=t.tzinfo).timestamp() + 86400
            upto = min(end.timestamp(), day_end)
            key = t.strftime("%Y-%m-%d")
            self.cost_by_day[key] = self.cost_by_day.get(key, 0.0) + price * (upto - t.timestamp()) / 3600
            t = datetime.fromtimestamp(upto, tz=t.tzinfo)

    def as_json(self) -> dict[str, Any]:
        pend = self.pending_seconds
        return {
            "cost": round(self.cost, 4),
            "cost_by_day": {k: round(v, 4) for k, v in sorted(self.cost_by_day.items())},
            "unpriced_node_hours": round(self.unpriced_node_hours, 3),
            "node_hours": {k: round(v, 3) for k, v in sorted(self.node_hours.items())},
            "nodes_launched": self.nodes_launched,
            "nodes_disrupted": dict(sorted(self.nodes_disrupted.items())),
            "evictions": dict(sorted(self.evictions.items())),
            "pending_seconds": {
                "p50": _round(percentile(pend, 50)),
                "p95": _round(percentile(pend, 95)),
                "max": _round(max(pend) if pend else None),
                "episodes": len(pend),
            },
            "never_scheduled": self.never_scheduled,
            "disruption_runs": self.disruption_runs,
            "interruptions": {"seen": self.interruptions, "absorbed": self.interruptions_absorbed},
            "series": [
                {"at": s.at.strftime("%Y-%m-%dT%H:%M:%SZ"), "cost_per_hour": round(s.cost_per_hour, 4),
                 "nodes": s.nodes, "pending_pods": s.pending_pods}
                for s in self.samples
            ],
        }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 1)
