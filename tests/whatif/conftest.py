"""Fixtures for the what-if tests: a simulated cluster with an injected clock."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from console.fleet import services
from console.simulation import services as sim
from console.simulation.cluster import SimulatedCluster
from console.simulation.config import SimulationConfig
from tests.console_pages import NODECLASS, operator, operator_client, viewer, viewer_client  # noqa: F401
from tests.simulation.conftest import Clock, pod

__all__ = ["operator", "operator_client", "viewer", "viewer_client"]


class World:
    def __init__(self, clock: Clock, config: SimulationConfig, cluster: SimulatedCluster) -> None:
        self.clock, self.config, self.cluster = clock, config, cluster

    def tick(self, seconds: float = 1) -> None:
        self.clock.advance(seconds)
        sim.simulation_tick(now=self.clock(), config=self.config)


@pytest.fixture
def world(db: Any, settings: Any) -> World:
    """Two pools (general: on-demand c/m with a cpu limit of 16; gpu: tainted) and a few pending pods."""
    settings.LOADMASTER_CLUSTER_NAME = "test"
    clock = Clock()
    config = SimulationConfig(cluster_name="test", seed=7, demo_workloads=False, spot_interruptions_per_hour=0.0,
                              state_changes_per_hour=0.0, replica_noise=0.0)
    sim.simulation_reset(seed=7, now=clock(), config=config)
    user = User.objects.create_user("ops-fixture")
    services.nodeclass_create(values=NODECLASS, user=user)
    services.nodepool_create(values={
        "name": "general", "node_class_name": "default", "weight": 10,
        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                         {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]}],
        "limits": {"cpu": "16"}}, user=user)
    services.nodepool_create(values={
        "name": "gpu", "node_class_name": "default",
        "requirements": [{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["g"]}],
        "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}, user=user)
    cluster = SimulatedCluster(clock=clock, sleep=lambda _: None)
    w = World(clock, config, cluster)
    for i in range(4):
        cluster.apply(pod(f"web-{i}", namespace="shop", cpu="1", memory="2Gi", labels={"app": "web"}))
    w.tick()
    return w


def add_pod(w: World, name: str, **kw: Any) -> None:
    w.cluster.apply(pod(name, **kw))
    w.tick()
