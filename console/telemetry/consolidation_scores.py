"""Karpenter v1.14's Balanced-consolidation metrics: ``karpenter_consolidation_moves_total`` (counter) and
``karpenter_consolidation_score`` (histogram), both labelled ``decision`` (approved, rejected), ``nodepool`` and
``policy``, as pkg/controllers/disruption/metrics.go declares them.

Every disrupt-loop run reports the consolidation moves it evaluated (packing's ScoreObservation): each counts
in moves_total under its source pool's policy, and a Balanced pool's also in the histogram. As loop_stats does,
the figures live in the database (ConsolidationMoveStat, ConsolidationScoreBucket), added to in SQL by the
worker that ran the loop, so every web process serves the same counters; rows are one per label set, so they
grow with the NodePools, not with time."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import F

from console.telemetry.models import ConsolidationMoveStat, ConsolidationScoreBucket
from packing.api import ScoreObservation

__all__ = ["BUCKETS", "ScoreSeries", "consolidation_scores_observe", "consolidation_score_series"]

# Karpenter's ConsolidationScoreHistogram buckets
BUCKETS: tuple[float, ...] = (0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0)

Key = tuple[str, str, str]  # decision, nodepool, policy


@dataclass
class _Tally:
    moves: int = 0
    scores: list[float] = field(default_factory=list)


def consolidation_scores_observe(*, observations: Iterable[ScoreObservation]) -> None:
    """Count one run's evaluated moves. Atomic: a scrape sees a label set's counter, sum and buckets move
    together; concurrent workers add, never overwrite."""
    tallies: dict[Key, _Tally] = {}
    for o in observations:
        t = tallies.setdefault((o.decision.value, o.nodepool, o.policy), _Tally())
        t.moves += 1
        if o.score is not None and math.isfinite(o.score):
            t.scores.append(o.score)
    if not tallies:
        return
    with transaction.atomic():
        for (decision, nodepool, policy), t in sorted(tallies.items()):
            labels = {"decision": decision, "nodepool": nodepool, "policy": policy}
            changes = {"moves": F("moves") + t.moves, "scored": F("scored") + len(t.scores),
                       "score_sum": F("score_sum") + sum(t.scores)}
            stats = ConsolidationMoveStat.objects.filter(**labels)
            if not stats.update(**changes):
                ConsolidationMoveStat.objects.bulk_create([ConsolidationMoveStat(**labels)], ignore_conflicts=True)
                ConsolidationScoreBucket.objects.bulk_create(
                    [ConsolidationScoreBucket(**labels, le=le) for le in BUCKETS], ignore_conflicts=True)
                stats.update(**changes)
            for le in BUCKETS:
                n = sum(1 for s in t.scores if s <= le)
                if n:
                    ConsolidationScoreBucket.objects.filter(**labels, le=le).update(count=F("count") + n)


@dataclass(frozen=True)
class ScoreSeries:
    decision: str
    nodepool: str
    policy: str
    moves: int
    scored: int
    score_sum: float
    buckets: list[tuple[float, int]]


def consolidation_score_series() -> list[ScoreSeries]:
    """Every label set with its counter, and its cumulative buckets (le, count), for the exposition."""
    buckets: dict[Key, list[tuple[float, int]]] = {}
    for b in ConsolidationScoreBucket.objects.order_by("decision", "nodepool", "policy", "le").values_list(
            "decision", "nodepool", "policy", "le", "count"):
        buckets.setdefault((b[0], b[1], b[2]), []).append((b[3], b[4]))
    out = []
    for s in ConsolidationMoveStat.objects.order_by("decision", "nodepool", "policy"):
        key = (s.decision, s.nodepool, s.policy)
        out.append(ScoreSeries(s.decision, s.nodepool, s.policy, s.moves, s.scored, s.score_sum,
                               buckets.get(key) or [(le, 0) for le in BUCKETS]))
    return out
