"""Interruptions are handled idempotently (a node already gone is the expected end), and the normal
paths of the demo — launch, consolidation, an interruption — log no ERROR."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from console.backends.base import NodeNotFound
from console.control.disruption import disrupt_run
from console.control.lifecycle import garbage_collect_run, interruption_run, lifecycle_run
from console.control.models import DisruptionAction
from console.control.provisioning import provision_run
from console.fleet import services
from console.fleet.models import Decision, NodeClaim, NodePool
from console.simulation.models import SimEvent
from tests.simulation.conftest import advance, loop_world, pod

SPOT_POOL = {"name": "spot", "node_class_name": "default", "consolidate_after": "0s", "budgets": [{"nodes": "100%"}],
             "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                              {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]}]}


@pytest.fixture
def world(db: Any, settings: Any) -> Any:
    return loop_world(settings, SPOT_POOL)


def _tick_all(clock: Any, config: Any, cluster: Any, cloud: Any, *, disrupt: bool = False) -> None:
    advance(clock, config, 10)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    interruption_run(cluster=cluster, cloud=cloud, now=clock())
    garbage_collect_run(cloud=cloud, cluster=cluster, now=clock())
    if disrupt:
        disrupt_run(cluster=cluster, cloud=cloud, now=clock())


def _bring_up(world: Any, pods: int = 1) -> NodeClaim:
    clock, config, cluster, cloud = world
    for i in range(pods):
        cluster.apply(pod(f"web-{i}", namespace="shop", cpu="1", memory="1Gi", owner="ReplicaSet/web-abc"))
    advance(clock, config, 1)
    for _ in range(8):
        _tick_all(clock, config, cluster, cloud)
    claim: NodeClaim = NodeClaim.objects.active().get()
    assert claim.initialized_at and claim.capacity_type == "spot"
    return claim


def test_interruption_ends_with_the_claim_terminated_and_no_error(world: Any, caplog: Any) -> None:
    clock, config, cluster, cloud = world
    claim = _bring_up(world)
    caplog.set_level(logging.INFO)
    assert cloud.interrupt(claim.instance_id)
    for _ in range(20):            # the warning, the drain, the reclaim, state changes, redeliveries
        _tick_all(clock, config, cluster, cloud)
    claim.refresh_from_db()
    assert claim.terminated_at and claim.deletion_reason == "spot interruption"
    assert Decision.objects.filter(kind=Decision.INTERRUPTION, nodes=[claim.name]).count() == 1
    assert SimEvent.objects.count() == 0                                 # every message acked
    replacement = NodeClaim.objects.active().get()                        # its pod runs elsewhere
    assert replacement.initialized_at and replacement.pk != claim.pk
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_interruption_of_a_node_already_gone_is_handled(world: Any) -> None:
    """The queue is read only after the instance was reclaimed: the warning and the state change both
    find the node gone. Before, each raised NodeNotFound and came back after the visibility timeout."""
    clock, config, cluster, cloud = world
    claim = _bring_up(world)
    assert cloud.interrupt(claim.instance_id)
    advance(clock, config, 1)                       # the warning is queued
    advance(clock, config, 60)                      # the notice runs out: reclaimed, node deleted
    assert SimEvent.objects.count() == 2
    with pytest.raises(NodeNotFound):
        cluster.get_node(claim.node_name)
    outcome = interruption_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.handled == [claim.name, claim.name] and SimEvent.objects.count() == 0
    why = Decision.objects.get(kind=Decision.INTERRUPTION).why
    assert "already gone" in why
    lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    claim.refresh_from_db()
    assert claim.terminated_at
    clock.advance(120)                               # a late duplicate of the warning is ignored
    assert interruption_run(cluster=cluster, cloud=cloud, now=clock()).handled == []


def test_normal_paths_of_the_demo_log_no_error(world: Any, caplog: Any) -> None:
    """Launch, consolidation (an emptied node is deleted) and a spot interruption on the simulated
    backends: no task logs an ERROR."""
    clock, config, cluster, cloud = world
    caplog.set_level(logging.INFO)
    for i in range(4):
        cluster.apply(pod(f"web-{i}", namespace="shop", cpu="1", memory="1Gi", owner="ReplicaSet/web-abc"))
    cluster.apply(pod("big-0", namespace="jobs", cpu="6", memory="8Gi"))
    advance(clock, config, 1)
    for _ in range(8):
        _tick_all(clock, config, cluster, cloud)
    assert NodeClaim.objects.active().filter(initialized_at__isnull=False).exists()
    assert Decision.objects.filter(kind=Decision.LAUNCH).exists()

    cluster.delete("Pod", "big-0", "jobs")                 # the job finished: consolidation's turn
    for _ in range(12):
        _tick_all(clock, config, cluster, cloud, disrupt=True)
    assert DisruptionAction.objects.filter(state=DisruptionAction.DONE).exists()

    victim = NodeClaim.objects.active().filter(initialized_at__isnull=False).first()
    assert victim is not None and cloud.interrupt(victim.instance_id)
    for _ in range(20):
        _tick_all(clock, config, cluster, cloud, disrupt=True)
    victim.refresh_from_db()
    assert victim.terminated_at and Decision.objects.filter(kind=Decision.INTERRUPTION).count() == 1
    errors = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []


def test_deleting_a_pool_mid_interruption_keeps_one_termination(world: Any) -> None:
    clock, config, cluster, cloud = world
    claim = _bring_up(world)
    assert cloud.interrupt(claim.instance_id)
    advance(clock, config, 1)
    interruption_run(cluster=cluster, cloud=cloud, now=clock())
    services.nodepool_delete(nodepool=NodePool.objects.get(), user=None)
    claim.refresh_from_db()
    assert claim.deletion_reason == "spot interruption"         # the first reason stays
    for _ in range(4):
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
        advance(clock, config, 10)
    claim.refresh_from_db()
    assert claim.terminated_at
    assert Decision.objects.filter(kind=Decision.DISRUPTION, nodes=[claim.name],
                                   details__termination="spot interruption").count() == 1


def test_the_interruption_drain_keeps_the_termination_grace_period(db: Any, settings: Any) -> None:
    """An interruption deletes the NodeClaim, so the pool's terminationGracePeriod runs from the notice: the first
    drain already deletes a pod whose own grace period would end after the deadline, past its PDB."""
    from tests.simulation.conftest import pdb

    clock, config, cluster, cloud = loop_world(settings, {**SPOT_POOL, "termination_grace_period": "30s"})
    cluster.apply(pdb("web", {"app": "web"}, namespace="shop", min_available=1))
    slow = pod("web-0", namespace="shop", cpu="1", memory="1Gi", labels={"app": "web"}, owner="ReplicaSet/web-abc")
    slow["spec"]["terminationGracePeriodSeconds"] = 60
    cluster.apply(slow)
    advance(clock, config, 1)
    for _ in range(8):
        _tick_all(clock, config, cluster, cloud)
    claim = NodeClaim.objects.active().get()
    assert claim.initialized_at
    assert cloud.interrupt(claim.instance_id)
    advance(clock, config, 1)
    interruption_run(cluster=cluster, cloud=cloud, now=clock())
    claim.refresh_from_db()
    assert claim.termination_deadline is not None and claim.deletion_reason == "spot interruption"
    [forced] = Decision.objects.filter(details__has_key="forced_pod_deletions")
    assert forced.details["forced_pod_deletions"] == ["shop/web-0"] and "terminationGracePeriod 30s" in forced.why
    assert forced.at == claim.deletion_requested_at
