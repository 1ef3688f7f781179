"""Dashboards fixtures: a small fleet whose figures are computed by hand in the tests."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from console.access import OPERATOR, VIEWER
from console.fleet.models import Decision, NodeClaim
from console.simulation.cluster import SimulatedCluster
from console.telemetry.models import MetricSample
from tests.simulation.conftest import node, pod
from tests.users import make_user


@pytest.fixture(autouse=True)
def fresh_live_read() -> Any:
    """Each test reads its own cluster: no live read carried over from another test."""
    from console.dashboards import selectors

    selectors.live_nodes_clear()
    yield
    selectors.live_nodes_clear()


@pytest.fixture
def viewer_client(db: Any) -> Client:
    client = Client()
    client.force_login(make_user("victor", VIEWER))
    return client


@pytest.fixture
def operator(db: Any) -> User:
    return make_user("olga", OPERATOR)


POOL_A = dict(cost_per_hour=Decimal("1"), on_demand_cost_per_hour=Decimal("3"), nodes=2, spot_nodes=2,
              cpu_allocatable=4000, cpu_requested=1000, memory_allocatable=8 * 10**9, memory_requested=4 * 10**9, pods=10)
POOL_B = dict(cost_per_hour=Decimal("2"), on_demand_cost_per_hour=Decimal("2"), nodes=1, spot_nodes=0,
              cpu_allocatable=2000, cpu_requested=2000, memory_allocatable=4 * 10**9, memory_requested=1 * 10**9, pods=4)
CLUSTER = dict(cost_per_hour=Decimal("3"), on_demand_cost_per_hour=Decimal("5"), nodes=3, spot_nodes=2,
               cpu_allocatable=6000, cpu_requested=3000, memory_allocatable=12 * 10**9, memory_requested=5 * 10**9,
               pods=14, pods_pending=2, unschedulable_reasons={"nodepool a: limit cpu=8 would be exceeded": 2})
REASONS = [{"nodepool": "a", "reason": "limit cpu=8 would be exceeded"},
           {"nodepool": "b", "reason": "taint gpu=true:NoSchedule not tolerated"}]


def sample(at: datetime, nodepool: str, values: dict[str, Any], **over: Any) -> MetricSample:
    return MetricSample.objects.create(at=at, nodepool=nodepool, **{**values, **over})


def claim(name: str, pool: str, itype: str, capacity_type: str, price: str, alloc: dict[str, str],
          requests: dict[str, str], created: datetime, terminated: datetime | None = None, **over: Any) -> NodeClaim:
    return NodeClaim.objects.create(
        name=name, nodepool_name=pool, instance_type=itype, capacity_type=capacity_type, zone="us-east-1a",
        price_per_hour=Decimal(price), price_source="snapshot", node_name=f"node-{name}", allocatable=alloc,
        capacity=alloc, requests=requests, created_at=created, launched_at=created, registered_at=created,
        initialized_at=created, terminated_at=terminated, **over)


def _rfc3339(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def build_cluster(now: datetime) -> SimulatedCluster:
    """The live cluster (simulated, in the database) behind build_fleet's claims:

    node-n1  pool a, m5.large spot (claim n1 priced $0.04), 2 cpu / 4Gi / 29 pods:
             web-1 500m/1Gi and the DaemonSet pod agent-n1 100m/128Mi
    node-n2  pool b, c5.xlarge on-demand (claim n2, $0.17), 4 cpu / 8Gi / 58 pods:
             api-1 2/1Gi, api-2 1/1Gi, agent-n2 100m/128Mi (DaemonSet), done-1 (Succeeded: not counted)
    node-u1  no NodePool, m5.large on-demand by its EKS node-group label, us-east-1a, 2 cpu / 8Gi: sys-1 250m/512Mi
    node-u2  no NodePool and no labels: price unknown, nothing on it
    """
    cluster = SimulatedCluster(clock=lambda: now)
    pool_labels = {"karpenter.sh/nodepool": "a", "node.kubernetes.io/instance-type": "m5.large",
                   "karpenter.sh/capacity-type": "spot", "topology.kubernetes.io/zone": "us-east-1a"}
    n1 = node("node-n1", labels=pool_labels, cpu="2", memory="4Gi", extra={"pods": "29"})
    n1["metadata"]["creationTimestamp"] = _rfc3339(now - timedelta(hours=2))
    n2 = node("node-n2", labels={**pool_labels, "karpenter.sh/nodepool": "b", "node.kubernetes.io/instance-type": "c5.xlarge",
                                 "karpenter.sh/capacity-type": "on-demand"}, cpu="4", memory="8Gi", extra={"pods": "58"})
    u1 = node("node-u1", labels={"node.kubernetes.io/instance-type": "m5.large", "topology.kubernetes.io/zone": "us-east-1a",
                                 "eks.amazonaws.com/capacityType": "ON_DEMAND"}, cpu="2", memory="8Gi")
    u2 = node("node-u2", cpu="2", memory="8Gi")
    for body in (n1, n2, u1, u2):
        cluster.apply(body)
    cluster.apply(pod("web-1", node_name="node-n1", cpu="500m", memory="1Gi", owner="ReplicaSet/web-abc"))
    cluster.apply(pod("agent-n1", namespace="kube-system", node_name="node-n1", cpu="100m", memory="128Mi",
                      owner="DaemonSet/agent"))
    cluster.apply(pod("api-1", node_name="node-n2", cpu="2", memory="1Gi", owner="ReplicaSet/api-abc"))
    cluster.apply(pod("api-2", node_name="node-n2", cpu="1", memory="1Gi", owner="ReplicaSet/api-abc"))
    cluster.apply(pod("agent-n2", namespace="kube-system", node_name="node-n2", cpu="100m", memory="128Mi",
                      owner="DaemonSet/agent"))
    done = pod("done-1", node_name="node-n2", cpu="3", memory="3Gi", owner="Job/once")
    done["status"]["phase"] = "Succeeded"
    cluster.apply(done)
    cluster.apply(pod("sys-1", node_name="node-u1", cpu="250m", memory="512Mi"))
    return cluster


def build_fleet(now: datetime) -> None:
    """Three minutes of samples (now−2m … now) for pools a, b and the cluster; claims n1, n2 (live) and
    n3 (terminated) and the live cluster of build_cluster; a launch, a consolidation, an interruption
    and an unschedulable verdict."""
    build_cluster(now)
    for m in range(3):
        at = now - timedelta(minutes=m)
        sample(at, "a", POOL_A)
        sample(at, "b", POOL_B)
        sample(at, "", CLUSTER)
    claim("n1", "a", "m5.large", "spot", "0.04", {"cpu": "2", "memory": "4Gi", "pods": "29"},
          {"cpu": "500m", "memory": "1Gi", "pods": "5"}, now - timedelta(hours=2))
    claim("n2", "b", "c5.xlarge", "on-demand", "0.17", {"cpu": "4", "memory": "8Gi", "pods": "58"},
          {"cpu": "3", "memory": "2Gi", "pods": "4"}, now - timedelta(hours=48))
    claim("n3", "b", "c5.large", "spot", "0.1", {"cpu": "2", "memory": "4Gi", "pods": "29"}, {},
          now - timedelta(hours=3), terminated=now - timedelta(hours=1), termination_reason="interrupted")
    Decision.objects.create(at=now - timedelta(minutes=10), kind=Decision.LAUNCH, nodepool_name="a",
                            nodes=["n1"], why="2 pods pending", cost_after=Decimal("0.04"))
    Decision.objects.create(at=now - timedelta(minutes=5), kind=Decision.DISRUPTION, nodepool_name="b",
                            cost_before=Decimal("1"), cost_after=Decimal("0.6"), why="underutilized: replace",
                            details={"reason": "underutilized"})
    Decision.objects.create(at=now - timedelta(minutes=3), kind=Decision.INTERRUPTION, nodepool_name="b",
                            nodes=["n3"], why="spot interruption warning")
    Decision.objects.create(at=now - timedelta(minutes=1), kind=Decision.UNSCHEDULABLE, nodepool_name="",
                            pods=["default/p1"], why="no NodePool fits", details={"pod": "default/p1", "reasons": REASONS})


def build_history(now: datetime, minutes: int = 180) -> None:
    """A few hours of varying samples before build_fleet's three minutes, for the charts."""
    for m in range(3, minutes):
        at = now - timedelta(minutes=m)
        k = Decimal(1 + (m % 60) / 60)
        # The engine's bound, unknown one minute in five (a gap in the line).
        bound = None if m % 5 == 0 else Decimal("2")
        sample(at, "a", POOL_A, cost_per_hour=POOL_A["cost_per_hour"] * k, cpu_requested=int(1000 * k),
               lower_bound_per_hour=None if bound is None else Decimal("0.5"))
        sample(at, "b", POOL_B, cost_per_hour=POOL_B["cost_per_hour"] * k)
        sample(at, "", CLUSTER, cost_per_hour=CLUSTER["cost_per_hour"] * k, estimated=m % 7 == 0,
               lower_bound_per_hour=bound,
               unschedulable_reasons={"nodepool a: limit cpu=8 would be exceeded": m % 3,
                                      "nodepool b: taint gpu=true:NoSchedule not tolerated": 1})
