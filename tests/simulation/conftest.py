"""Fixtures for the simulated cluster and cloud: an injected clock, a quiet configuration, and small
builders for Nodes and Pods in the Kubernetes JSON shape."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from console.backends.base import LaunchOption, LaunchRequest
from console.simulation import services
from console.simulation.cloud import SimulatedCloud
from console.simulation.cluster import SimulatedCluster
from console.simulation.config import SimulationConfig

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


@dataclass
class Clock:
    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def config() -> SimulationConfig:
    # Quiet by default: no demo workloads, no random interruptions; tests turn on what they check.
    return SimulationConfig(cluster_name="test", seed=7, demo_workloads=False, spot_interruptions_per_hour=0.0,
                            state_changes_per_hour=0.0, replica_noise=0.0)


@pytest.fixture
def world(db: Any, clock: Clock, config: SimulationConfig) -> Clock:
    services.simulation_reset(seed=config.seed, now=clock(), config=config)
    return clock


@pytest.fixture
def cluster(world: Clock) -> SimulatedCluster:
    return SimulatedCluster(clock=world, sleep=lambda _: None, poll_interval=1.0)


@pytest.fixture
def cloud(world: Clock, config: SimulationConfig) -> SimulatedCloud:
    return SimulatedCloud(config, clock=world)


class Ticker:
    """Runs the tick at the injected clock, optionally advancing it first."""

    def __init__(self, clock: Clock, config: SimulationConfig) -> None:
        self.clock = clock
        self.config = config

    def __call__(self, after: float = 0.0, **config_changes: Any) -> services.TickReport:
        self.clock.advance(after)
        cfg = self.config.with_(**config_changes) if config_changes else self.config
        return services.simulation_tick(now=self.clock(), config=cfg)


@pytest.fixture
def tick(world: Clock, config: SimulationConfig) -> Ticker:
    return Ticker(world, config)


# --- object builders -------------------------------------------------------------------------------

def node(name: str, *, labels: Mapping[str, str] | None = None, cpu: str = "4", memory: str = "16Gi",
         taints: Sequence[Mapping[str, str]] = (), initialized: bool = True, ready: bool = True,
         provider_id: str = "", extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(labels or {})}
    if initialized:
        all_labels["karpenter.sh/initialized"] = "true"
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", **(extra or {})}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": {"taints": [dict(t) for t in taints], **({"providerID": provider_id} if provider_id else {})},
        "status": {"capacity": allocatable, "allocatable": allocatable,
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pod(name: str, *, namespace: str = "default", node_name: str = "", cpu: str = "500m", memory: str = "256Mi",
        labels: Mapping[str, str] | None = None, owner: str = "", node_selector: Mapping[str, str] | None = None,
        tolerations: Sequence[Mapping[str, str]] = (), unschedulable: bool = False, ready: bool = True,
        affinity: Mapping[str, Any] | None = None, extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if owner:
        kind, _, owner_name = owner.partition("/")
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": owner_name, "controller": True,
                                    "uid": f"uid-{owner_name}"}]
        if kind == "ReplicaSet":
            meta["generateName"] = f"{owner_name}-"
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x",
                                            "resources": {"requests": {"cpu": cpu, "memory": memory, **(extra or {})}}}]}
    if node_name:
        spec["nodeName"] = node_name
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if affinity:
        spec["affinity"] = dict(affinity)
    if node_name:
        status: dict[str, Any] = {"phase": "Running", "conditions": [
            {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True" if ready else "False"}]}
    else:
        status = {"phase": "Pending"}
        if unschedulable:
            status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def pdb(name: str, selector: Mapping[str, str], *, namespace: str = "default", min_available: Any = None,
        max_unavailable: Any = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(selector)}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def names(objects: Sequence[Mapping[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objects)


def request(nodeclaim: str, *options: LaunchOption, nodepool: str = "default", cluster: str = "test",
            nodeclass: Mapping[str, Any] | None = None) -> LaunchRequest:
    return LaunchRequest(nodeclaim=nodeclaim, nodepool=nodepool, cluster=cluster,
                         nodeclass=nodeclass or {"name": "default", "tags": {"team": "platform"},
                                                 "kubelet": {"maxPods": 110}},
                         options=list(options))


M6I_SPOT_A = LaunchOption("m6i.xlarge", "us-east-1a", "spot", 0.07)
M6I_SPOT_B = LaunchOption("m6i.xlarge", "us-east-1b", "spot", 0.08)
C6I_SPOT_A = LaunchOption("c6i.xlarge", "us-east-1a", "spot", 0.065)
M6I_OD_A = LaunchOption("m6i.xlarge", "us-east-1a", "on-demand", 0.192)


LoopWorld = tuple[Clock, SimulationConfig, SimulatedCluster, SimulatedCloud]


def loop_world(settings: Any, *nodepools: Mapping[str, Any]) -> LoopWorld:
    """A quiet simulated cluster and cloud (no demo workloads, no interruptions) with the default
    EC2NodeClass and the given NodePools: the setting of the control-loop tests end to end."""
    from django.contrib.auth.models import User

    from console.fleet import services as fleet_services
    from tests.console_pages import NODECLASS

    settings.LOADMASTER_CLUSTER_NAME = "test"
    clock = Clock()
    config = SimulationConfig(cluster_name="test", seed=7, demo_workloads=False, spot_interruptions_per_hour=0.0,
                              state_changes_per_hour=0.0, replica_noise=0.0)
    services.simulation_reset(seed=7, now=clock(), config=config)
    user = User.objects.create_user("ops")
    fleet_services.nodeclass_create(values=NODECLASS, user=user)
    for values in nodepools:
        fleet_services.nodepool_create(values=dict(values), user=user)
    return clock, config, SimulatedCluster(clock=clock, sleep=lambda _: None), SimulatedCloud(config, clock=clock)


def on_demand_pool(name: str, categories: Sequence[str], **values: Any) -> dict[str, Any]:
    return {"name": name, "node_class_name": "default",
            "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                             {"key": "karpenter.k8s.aws/instance-category", "operator": "In",
                              "values": list(categories)}],
            **values}


def advance(clock: Clock, config: SimulationConfig, seconds: float) -> None:
    """Move the clock and let the simulated cluster catch up (kube-scheduler, registrations…)."""
    clock.advance(seconds)
    services.simulation_tick(now=clock(), config=config)
