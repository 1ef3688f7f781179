"""Balanced consolidation (Karpenter v1.14's consolidationPolicy Balanced): a move is worth its disruption only when
its savings, as a fraction of its NodePool's cost, are at least 1/k of its disruption, as a fraction of the
NodePool's disruption cost (k = 2: Karpenter's BalancedK, not configurable in v1.14).

Karpenter's semantics (designs/balanced-consolidation.md, pkg/controllers/disruption/policyevaluator.go):

- a pod's disruption cost is EvictionCost: 1, plus pod-deletion-cost / 2^27, plus priority / 2^25, clamped to
  [-10, 10]; scoring counts it as at least 0. A node's is 1 (the per-node baseline) plus its movable pods' (not
  DaemonSet or mirror pods).
- a NodePool's totals are the sums over every node of the pool, candidates or not: its cost (the nodes' prices)
  and its disruption cost (the nodes' disruption costs). They are taken once per pass and stay as they were for
  the rest of the pass ("snapshotted once per cycle").
- a move's score is (savings / pool cost) / (disruption / pool disruption cost), where disruption is the sum of the
  moved nodes' disruption costs and savings the move's net saving (its nodes' price less its replacements'); no
  saving scores 0, and zero totals score 0. It passes when score >= 1/k, compared exactly (no tolerance).
- a move over several pools is scored per Balanced pool, with the saving split by each pool's share of the moved
  nodes' cost; it passes only when every Balanced pool passes (the reported score is the lowest). Pools with another
  policy are not scored.
- single-node candidates whose best case (deleting them outright: their whole price saved) already fails are not
  simulated at all (CanPassThreshold).
- emptiness and drift and expiration are not scored (Karpenter's emptiness never calls the evaluator); the score an
  empty delete would have is shown on its action, for information only.

Repack (Loadmaster's own) is scored as multi-node moves are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packing.disruption.model import DELETION_COST, MoveDecision, NotDisruptedCategory, ScoreObservation
from packing.disruption.refusals import Refusal

if TYPE_CHECKING:
    from packing.disruption.state import RunState

__all__ = [
    "BALANCED",
    "BALANCED_K",
    "THRESHOLD",
    "PoolTotals",
    "Score",
    "Scorer",
    "pod_disruption_cost",
]

BALANCED = "Balanced"
BALANCED_K = 2  # Karpenter v1.14's v1.BalancedK
THRESHOLD = 1.0 / BALANCED_K


def pod_disruption_cost(annotations: Mapping[str, str], priority: int) -> float:
    """Karpenter's EvictionCost of one pod: 1 by default; an unparsable pod-deletion-cost is ignored."""
    cost = 1.0
    raw = annotations.get(DELETION_COST)
    if raw is not None:
        try:
            cost += float(raw) / 2**27
        except ValueError:
            pass
    cost += priority / 2**25
    return max(-10.0, min(10.0, cost))


@dataclass(frozen=True)
class PoolTotals:
    cost: float  # dollars per hour, every node of the pool
    disruption: float  # the sum of its nodes' disruption costs


@dataclass(frozen=True)
class Score:
    """One Balanced pool's score of one move."""

    nodepool: str
    savings_fraction: float
    disruption_fraction: float

    @property
    def value(self) -> float:
        if self.savings_fraction <= 0:
            return 0.0
        if self.disruption_fraction == 0:
            return math.inf
        return self.savings_fraction / self.disruption_fraction

    @property
    def approved(self) -> bool:
        return self.value >= THRESHOLD

    def text(self) -> str:
        """Karpenter's ConsolidationApproved/Rejected event wording, with the pool named."""
        op = ">=" if self.approved else "<"
        return (
            f"score {self.value:.2f} {op} threshold {THRESHOLD:.2f} (Balanced, k={BALANCED_K}; nodepool "
            f"{self.nodepool}: savings {self.savings_fraction * 100:.1f}% of its cost, disruption "
            f"{self.disruption_fraction * 100:.1f}% of its disruption cost)"
        )


class Scorer:
    """The run's Balanced scoring: the pools' totals as of the current pass, and every evaluated move."""

    def __init__(self, run: RunState) -> None:
        self.run = run
        self.balanced = {p.name for p in run.cluster.nodepools if run.cluster.settings_for(p.name).policy == BALANCED}
        self.totals: dict[str, PoolTotals] = {}
        self.observations: list[ScoreObservation] = []
        self._pod_cost: dict[str, float] = {}

    # ------------------------------------------------------------------ costs
    def _pod(self, key: str) -> float:
        c = self._pod_cost.get(key)
        if c is None:
            meta = self.run.cluster.pod_meta.get(key)
            c = pod_disruption_cost(meta.annotations, meta.priority) if meta else 1.0
            self._pod_cost[key] = c
        return c

    def node_disruption(self, name: str) -> float:
        """1 plus the movable pods' disruption costs, each at least 0 (Karpenter's RescheduleDisruptionCost)."""
        return 1.0 + sum(max(0.0, self._pod(p.key)) for p in self.run.pods(name))

    def _price(self, name: str) -> float:
        run = self.run
        if name in run.price:
            return run.price[name]
        return run.base.price_of(run.sim.specs[name].labels) or 0.0  # a node an earlier action launched

    def snapshot(self) -> None:
        """Take the Balanced pools' totals as the cluster is now (once per pass; nothing when no pool is Balanced)."""
        if not self.balanced:
            return
        totals: dict[str, list[float]] = {}
        for name, spec in self.run.sim.specs.items():
            pool = spec.nodepool or ""
            if pool in self.balanced:
                t = totals.setdefault(pool, [0.0, 0.0])
                t[0] += self._price(name)
                t[1] += self.node_disruption(name)
        self.totals = {p: PoolTotals(c, d) for p, (c, d) in totals.items()}

    # ------------------------------------------------------------------ scoring
    def score(self, names: Sequence[str], savings: float) -> Score | None:
        """The deciding (lowest) Balanced pool's score of the move; None when no moved node is in a Balanced pool."""
        scores = self.scores(names, savings)
        return min(scores, key=lambda s: s.value) if scores else None

    def scores(self, names: Sequence[str], savings: float) -> list[Score]:
        if not self.balanced:
            return []
        run = self.run
        by_pool: dict[str, list[str]] = {}
        for n in names:
            by_pool.setdefault(run.info[n].nodepool or "" if n in run.info else "", []).append(n)
        source = sum(self._price(n) for n in names)
        out = []
        for pool, group in sorted(by_pool.items()):
            if pool not in self.balanced:
                continue
            share = savings
            if len(by_pool) > 1 and source > 0:
                share = savings * sum(self._price(n) for n in group) / source
            t = self.totals.get(pool)
            if t is None or t.cost <= 0 or t.disruption <= 0:
                out.append(Score(pool, 0.0, 0.0))
                continue
            disruption = sum(self.node_disruption(n) for n in group)
            out.append(Score(pool, share / t.cost, disruption / t.disruption))
        return out

    def judge(self, names: Sequence[str], savings: float) -> Refusal | None:
        """Whether a consolidation move that passed every other check may go ahead; counted as Karpenter's metrics
        count it (every source pool, Balanced or not)."""
        scores = {s.nodepool: s for s in self.scores(names, savings)}
        pools = sorted({self.run.info[n].nodepool or "" for n in names if n in self.run.info})
        approved = all(s.approved for s in scores.values())
        for pool in pools:
            s = scores.get(pool)
            policy = self.run.cluster.settings_for(pool).policy
            if s is None:
                self.observations.append(ScoreObservation(pool, policy, None, MoveDecision.APPROVED))
            else:
                # a multi-pool move's pools each get their own score; its count is the move's decision
                decision = MoveDecision.APPROVED if approved else MoveDecision.REJECTED
                self.observations.append(ScoreObservation(pool, policy, s.value, decision))
        if approved:
            return None
        return _refusal(min(scores.values(), key=lambda s: s.value))

    def best_case(self, name: str) -> Refusal | None:
        """Karpenter's CanPassThreshold: a single-node candidate whose outright delete (its whole price saved, the
        best any move of it can do) fails cannot pass; None when it may."""
        pool = self.run.info[name].nodepool or ""
        if pool not in self.balanced:
            return None
        t = self.totals.get(pool)
        if t is None or t.cost <= 0:
            return None
        s = Score(pool, self._price(name) / t.cost, self.node_disruption(name) / t.disruption if t.disruption else 0)
        return None if s.approved else _refusal(s, "even deleting it outright")


def _refusal(s: Score, what: str = "the move") -> Refusal:
    return Refusal(f"Balanced consolidation, {what}: {s.text()}", NotDisruptedCategory.BELOW_SCORE_THRESHOLD, score=s.value)
