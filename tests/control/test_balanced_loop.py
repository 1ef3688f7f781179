"""consolidationPolicy Balanced end to end in the simulated cluster: the disrupt loop takes an underutilized move
whose score reaches 1/k (k = 2) and leaves one below it, the engine's report and the metrics saying rejected with
the score.

Two nodes of one Balanced pool: a 2-cpu one holding a 1.5-cpu pod, a 4-cpu node twice its price holding a 2.2-cpu
pod and room for the other. Deleting the small node saves 1/3 of the pool's cost. Plain pods: its disruption is
2 of the pool's 4 (1 per node plus 1 per pod), so the score is (1/3) / (2/4) = 0.67 and the loop deletes it. With
the small pod's pod-deletion-cost at the maximum its eviction cost is 10 (Karpenter's clamp): 11 of 13, a score of
(1/3) / (11/13) = 0.39, and the loop leaves the node; so does it the one-node replacement of both (1/3 against 13/13)."""

from __future__ import annotations

from typing import Any

import pytest

from console.control import disruption
from console.control.disruption import disrupt_run
from console.control.lifecycle import lifecycle_run
from console.control.models import DisruptionAction
from console.control.provisioning import provision_run
from console.fleet.models import Decision, NodeClaim
from console.telemetry.consolidation_scores import consolidation_score_series
from packing import api
from tests.simulation.conftest import advance, loop_world, on_demand_pool, pod


def _world(settings: Any, *, deletion_cost: str | None) -> Any:
    world = loop_world(settings, on_demand_pool("general", ["c", "m"], consolidate_after="0s",
                                               consolidation_policy="Balanced", budgets=[{"nodes": "100%"}]))
    clock, config, cluster, cloud = world
    small = pod("small-0", cpu="1500m", memory="512Mi", owner="ReplicaSet/small-5f6d")  # a 2-cpu node
    if deletion_cost is not None:
        small["metadata"]["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": deletion_cost}
    for p in (small, pod("big-0", cpu="2200m", memory="2Gi", owner="ReplicaSet/big-7c8d")):
        cluster.apply(p)
        advance(clock, config, 1)
        provision_run(cluster=cluster, cloud=cloud, now=clock())
        for _ in range(6):
            advance(clock, config, 10)
            lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    claims = list(NodeClaim.objects.filter(nodepool_name="general"))
    assert len(claims) == 2 and all(c.node_name for c in claims)
    assert cluster.pending_pods() == []
    return world


def _small_node() -> str:
    claim = NodeClaim.objects.filter(nodepool_name="general").order_by("price_per_hour").first()
    assert claim is not None
    return claim.node_name


def _series(decision: str) -> Any:
    return {(s.decision, s.nodepool): s for s in consolidation_score_series()}.get((decision, "general"))


def test_a_move_scoring_above_the_threshold_is_taken(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud = _world(settings, deletion_cost=None)
    small = _small_node()
    disrupt_run(cluster=cluster, cloud=cloud, now=clock())
    action = DisruptionAction.objects.get()
    assert action.reason == "underutilized" and action.nodes == [small]
    entry = Decision.objects.get(kind=Decision.DISRUPTION, details__action=action.pk)
    assert entry.details["score"] == pytest.approx(2 / 3, abs=0.01) and entry.details["score_threshold"] == 0.5
    approved = _series("approved")
    assert approved is not None and approved.moves >= 1
    assert approved.score_sum / approved.scored >= 0.5


@pytest.mark.parametrize("deletion_cost", ["2147483647"])
def test_a_move_scoring_below_the_threshold_is_not_taken(db: Any, settings: Any, deletion_cost: str) -> None:
    clock, config, cluster, cloud = _world(settings, deletion_cost=deletion_cost)
    small = _small_node()
    for _ in range(3):
        disrupt_run(cluster=cluster, cloud=cloud, now=clock())
        advance(clock, config, 10)
    assert not DisruptionAction.objects.exists()
    assert NodeClaim.objects.filter(node_name=small, deletion_requested_at__isnull=True).exists()
    # the engine's report (the why-node page's) says why, with the score that failed
    _, report = disruption.consolidate_contained(cluster=cluster, now=clock(), problems={})
    spared = {n.node: n for n in report.not_disrupted}[small]
    assert spared.category == api.NotDisruptedCategory.BELOW_SCORE_THRESHOLD
    assert spared.score == pytest.approx((1 / 3) / (11 / 13), abs=0.01)
    # and the metrics count the rejected moves with their scores, every one below the threshold
    rejected = _series("rejected")
    assert rejected is not None and rejected.moves >= 3 and rejected.scored >= 3
    assert dict(rejected.buckets)[0.5] == rejected.scored
    assert _series("approved") is None
