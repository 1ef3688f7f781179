"""consolidationPolicy Balanced in the disrupt loop: the ledger entry gives the move's score, and every run counts
the moves it evaluated for karpenter_consolidation_moves_total and karpenter_consolidation_score."""

from __future__ import annotations

from typing import Any

from console.control import disruption
from console.control.disruption import disrupt_run
from console.control.lifecycle import lifecycle_run
from console.control.models import DisruptionAction
from console.control.provisioning import provision_run
from console.fleet.models import Decision, NodeClaim
from console.telemetry.consolidation_scores import consolidation_score_series
from packing.api import Action, MoveDecision, Report, ScoreObservation
from tests.simulation.conftest import advance, loop_world, on_demand_pool, pod


def _two_nodes(settings: Any) -> Any:
    world = loop_world(settings, on_demand_pool("general", ["c", "m"], consolidate_after="0s",
                                               consolidation_policy="Balanced", budgets=[{"nodes": "100%"}]))
    clock, config, cluster, cloud = world
    for name in ("batch-0", "batch-1"):
        cluster.apply(pod(name, namespace="jobs", cpu="1", memory="1Gi"))
        advance(clock, config, 1)
        provision_run(cluster=cluster, cloud=cloud, now=clock())
    for _ in range(8):
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    return world


def test_an_empty_delete_in_a_balanced_pool_shows_its_score_in_the_ledger(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud = _two_nodes(settings)
    assert NodeClaim.objects.filter(nodepool_name="general").count() >= 1
    for name in ("batch-0", "batch-1"):
        cluster.delete("Pod", name, "jobs")
    for _ in range(6):
        disrupt_run(cluster=cluster, cloud=cloud, now=clock())
        advance(clock, config, 10)
    action = DisruptionAction.objects.filter(reason="empty").first()
    assert action is not None and action.state == DisruptionAction.DONE
    entry = Decision.objects.filter(kind=Decision.DISRUPTION, details__action=action.pk).get()
    assert "Balanced score" in entry.why and "empty nodes are deleted whatever their score" in entry.why
    assert entry.details["score"] > 0 and entry.details["score_threshold"] == 0.5


def test_the_ledger_says_the_score_met_the_threshold(db: Any, settings: Any) -> None:
    _, _, cluster, _ = _two_nodes(settings)
    claim = NodeClaim.objects.filter(nodepool_name="general").first()
    assert claim is not None
    spec = Action(type="delete", reason="underutilized", nodes=[claim.name], replacements=[], savings_per_hour=0.1,
                  moves={}, why="underutilized: the 1 pods fit on other nodes", cost_before=0.1, cost_after=0.0,
                  method="single-node", score=0.75)
    action = disruption._start(spec, cluster, claim.created_at)
    entry = Decision.objects.get(kind=Decision.DISRUPTION, details__action=action.pk)
    assert entry.why.endswith("; Balanced score 0.75 ≥ threshold 0.50 (k = 2: savings over the NodePool's cost "
                              "against disruption over its disruption cost)")
    assert (entry.details["score"], entry.details["score_threshold"]) == (0.75, 0.5)
    plain = Action(type="delete", reason="underutilized", nodes=[claim.name], replacements=[], savings_per_hour=0.1,
                   moves={}, why="w", method="single-node")
    entry = Decision.objects.get(kind=Decision.DISRUPTION,
                                 details__action=disruption._start(plain, cluster, claim.created_at).pk)
    assert entry.why == "delete (underutilized): w" and "score" not in entry.details


def test_every_run_counts_the_moves_it_evaluated(db: Any, settings: Any, monkeypatch: Any) -> None:
    clock, _, cluster, cloud = _two_nodes(settings)
    seen = [ScoreObservation("general", "Balanced", 0.42, MoveDecision.REJECTED),
            ScoreObservation("general", "Balanced", 3.0, MoveDecision.APPROVED),
            ScoreObservation("other", "WhenEmptyOrUnderutilized", None, MoveDecision.APPROVED)]

    def fake(*, cluster: Any, now: Any, problems: Any) -> Any:
        return disruption._engine_cluster(cluster=cluster, now=now), Report(score_observations=seen)

    monkeypatch.setattr(disruption, "consolidate_contained", fake)
    for _ in range(2):
        disrupt_run(cluster=cluster, cloud=cloud, now=clock())
    series = {(s.decision, s.nodepool, s.policy): s for s in consolidation_score_series()}
    rejected = series[("rejected", "general", "Balanced")]
    assert (rejected.moves, rejected.scored, rejected.score_sum) == (2, 2, 0.84)
    assert dict(rejected.buckets) == {0.1: 0, 0.25: 0, 0.33: 0, 0.5: 2, 1.0: 2, 2.0: 2, 5.0: 2, 10.0: 2}
    assert dict(series[("approved", "general", "Balanced")].buckets)[2.0] == 0
    assert dict(series[("approved", "general", "Balanced")].buckets)[5.0] == 2
    plain = series[("approved", "other", "WhenEmptyOrUnderutilized")]
    assert (plain.moves, plain.scored) == (2, 0)
