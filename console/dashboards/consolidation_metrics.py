"""/metrics' Balanced-consolidation families, from the database (console.telemetry.consolidation_scores):
Karpenter v1.14's karpenter_consolidation_moves_total and karpenter_consolidation_score, with its names, types,
help texts and labels (decision, nodepool, policy). The histogram has a series only for label sets with a
scored move (a Balanced pool's), as Karpenter observes a score only there."""

from __future__ import annotations

from console.dashboards.exposition import Exposition, histogram, labels
from console.telemetry.consolidation_scores import consolidation_score_series

__all__ = ["MOVES", "SCORE", "write_consolidation_scores"]

MOVES = "karpenter_consolidation_moves_total"
SCORE = "karpenter_consolidation_score"


def write_consolidation_scores(out: Exposition) -> None:
    series = consolidation_score_series()
    out.family(MOVES, "counter", "Number of balanced consolidation moves. Labeled by decision, NodePool, and policy.")
    for s in series:
        out.sample(MOVES, labels({"decision": s.decision, "nodepool": s.nodepool, "policy": s.policy}), s.moves)
    out.family(SCORE, "histogram", "Score of balanced consolidation moves. Labeled by decision, NodePool, and policy.")
    for s in series:
        if s.scored:
            histogram(out, SCORE, labels({"decision": s.decision, "nodepool": s.nodepool, "policy": s.policy}),
                      s.buckets, s.scored, s.score_sum)
