"""The provisioning loop reads pods through console/adapters.py -> packing.api, so the engine's rule of which pods
are provisioned for (issue 16 item 5) holds there too: a pod with scheduling gates gets no NodeClaim. The simulated
kube-scheduler marks such a pod SchedulingGated (so the backend does not list it as pending); a backend that lists
it anyway (a stale Unschedulable condition) still gets no NodeClaim for it, since the engine ignores it."""

from __future__ import annotations

from typing import Any

import pytest

from console.control.provisioning import provision_run
from console.fleet.models import Decision, NodeClaim
from console.simulation.cloud import SimulatedCloud
from console.simulation.cluster import SimulatedCluster
from console.simulation.config import SimulationConfig
from tests.simulation.conftest import Clock, advance, loop_world, on_demand_pool, pod


@pytest.fixture
def world(db: Any, settings: Any) -> tuple[Clock, SimulationConfig, SimulatedCluster, SimulatedCloud]:
    return loop_world(settings, on_demand_pool("general", ["c", "m"], limits={"cpu": "64"}))


def gated(name: str) -> dict[str, Any]:
    body = pod(name, cpu="1", memory="1Gi")
    body["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    return body


def test_the_simulated_scheduler_leaves_a_gated_pod_unbound_and_not_pending(world: Any) -> None:
    clock, config, cluster, cloud = world
    cluster.apply(gated("waiting"))
    advance(clock, config, 1)
    assert cluster.pending_pods() == []
    outcome = provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.pending == 0 and outcome.planned == [] and NodeClaim.objects.count() == 0


def test_a_gated_pod_launches_nothing(world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    clock, config, cluster, cloud = world
    cluster.apply(gated("waiting"))
    advance(clock, config, 1)
    # a backend that lists the gated pod as pending: the engine's ignored set still keeps it out of the plan
    listed = [gated("waiting") | {"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}]
    monkeypatch.setattr(cluster, "pending_pods", lambda: listed)

    outcome = provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.pending == 0 and outcome.launched == [] and outcome.planned == []
    assert NodeClaim.objects.count() == 0


def test_only_the_ungated_pods_are_provisioned_for(world: Any) -> None:
    clock, config, cluster, cloud = world
    cluster.apply(gated("waiting"))
    cluster.apply(pod("ready", cpu="1", memory="1Gi"))
    advance(clock, config, 1)
    assert [p["metadata"]["name"] for p in cluster.pending_pods()] == ["ready"]

    outcome = provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.pending == 1 and outcome.launched
    (claim,) = NodeClaim.objects.all()
    launch = Decision.objects.get(kind=Decision.LAUNCH)
    assert claim.nodepool_name == "general" and "(default/ready)" in launch.why and "waiting" not in launch.why
