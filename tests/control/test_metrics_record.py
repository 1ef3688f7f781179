"""metrics_record against a simulated cluster and a two-type catalog where the lower bound is obvious:
small (2 cpu, $0.10/h, $0.05 per cpu) and big (4 cpu, $0.30/h). Four running pods of 1 cpu need 4 cpu,
so no plan costs less than two smalls: $0.20/h; the cluster runs them on two bigs, $0.60/h."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User

from console import adapters
from console.control import metrics
from console.control.metrics import metrics_record
from console.dashboards import selectors
from console.fleet import services
from console.simulation.cluster import SimulatedCluster
from console.telemetry.models import MetricRollup, MetricSample
from packing.instancetype import InstanceType, Offering
from packing.resources import Resources
from tests.console_pages import NODECLASS
from tests.simulation.conftest import node, pod

NOW = datetime(2026, 3, 10, 9, 30, tzinfo=UTC)
pytestmark = pytest.mark.django_db


def _type(name: str, cpu: int, price: float) -> InstanceType:
    return InstanceType(name, Resources.parse({"cpu": str(cpu), "memory": f"{4 * cpu}Gi", "pods": "110"}), Resources(),
                        {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"},
                        (Offering("us-east-1a", "on-demand", price, price_source="snapshot"),))


CATALOG = (_type("small", 2, 0.10), _type("big", 4, 0.30))


@pytest.fixture
def cluster(db: Any, monkeypatch: pytest.MonkeyPatch) -> SimulatedCluster:
    monkeypatch.setattr(adapters, "instance_types", lambda *a, **k: CATALOG)
    metrics._BOUND_CACHE.clear()
    user = User.objects.create_user("ops")
    services.nodeclass_create(values=NODECLASS, user=user)
    services.nodepool_create(values={"name": "a", "node_class_name": "default", "requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]}, user=user)
    c = SimulatedCluster(clock=lambda: NOW)
    labels = {"karpenter.sh/nodepool": "a", "node.kubernetes.io/instance-type": "big",
              "karpenter.sh/capacity-type": "on-demand", "topology.kubernetes.io/zone": "us-east-1a"}
    for n in ("b1", "b2"):
        c.apply(node(n, labels=labels, cpu="4", memory="16Gi"))
        # A DaemonSet pod comes with every node: overhead, not load the bound must place.
        c.apply(pod(f"agent-{n}", namespace="kube-system", node_name=n, cpu="500m", memory="64Mi", owner="DaemonSet/agent"))
    for i in range(4):
        c.apply(pod(f"web-{i}", node_name=f"b{1 + i // 2}", cpu="1", memory="1Gi", owner="ReplicaSet/web-1"))
    return c


def test_lower_bound_recorded_per_pool_and_cluster(cluster: SimulatedCluster) -> None:
    samples = {s.nodepool: s for s in metrics_record(cluster=cluster, now=NOW)}
    assert set(samples) == {"", "a"}
    for s in samples.values():
        assert s.cost_per_hour == Decimal("0.6")
        assert float(s.lower_bound_per_hour) == pytest.approx(0.20, abs=1e-5)
        # DaemonSet pods count in the requests (they use the node), not in the bound.
        assert s.cpu_requested == 5000 and s.pods == 6
    point = selectors.history(window="1h", now=NOW)[-1]
    assert point.gap == pytest.approx(0.40, abs=1e-5) and point.gap_ratio == pytest.approx(3.0, rel=1e-4)
    summary = selectors.cost_summary(now=NOW)
    assert summary.gap == pytest.approx(0.40, abs=1e-5)


def test_bound_is_cached_until_the_pods_change(cluster: SimulatedCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    solves: list[int] = []
    real = metrics.Scheduler

    class Counting(real):  # type: ignore[misc, valid-type]
        def solve(self, pods: Any, **kw: Any) -> Any:
            solves.append(len(pods))
            return super().solve(pods, **kw)

    monkeypatch.setattr(metrics, "Scheduler", Counting)
    metrics_record(cluster=cluster, now=NOW)
    assert sorted(solves) == [4, 4]  # pool a, then the whole cluster
    # A pod of another name but the same requests: same classes, no new solve.
    cluster.delete("Pod", "web-3", "default")
    cluster.apply(pod("web-9", node_name="b2", cpu="1", memory="1Gi", owner="ReplicaSet/web-1"))
    metrics_record(cluster=cluster, now=NOW + timedelta(minutes=1))
    assert len(solves) == 2
    cluster.apply(pod("web-10", node_name="b2", cpu="1", memory="1Gi", owner="ReplicaSet/web-1"))
    samples = {s.nodepool: s for s in metrics_record(cluster=cluster, now=NOW + timedelta(minutes=2))}
    assert sorted(solves) == [4, 4, 5, 5]
    # Five cpu: 2.5 smalls' worth at $0.05 per cpu.
    assert float(samples[""].lower_bound_per_hour) == pytest.approx(0.25, abs=1e-5)


def test_bound_unknown_when_a_pod_cannot_be_placed(cluster: SimulatedCluster) -> None:
    # Running, but the pool could not place it today (no type has the label): the bound is unknown,
    # stored as null and drawn as a gap, never as $0.
    cluster.apply(pod("odd", node_name="b1", cpu="100m", node_selector={"example.com/none": "x"}))
    samples = {s.nodepool: s for s in metrics_record(cluster=cluster, now=NOW)}
    assert samples[""].lower_bound_per_hour is None and samples["a"].lower_bound_per_hour is None
    point = selectors.history(window="1h", now=NOW)[-1]
    assert point.lower_bound is None and point.gap is None and point.cost == pytest.approx(0.6)


def test_unmanaged_nodes_add_their_cost_to_the_cluster_bound(cluster: SimulatedCluster) -> None:
    cluster.apply(node("u1", labels={"node.kubernetes.io/instance-type": "small", "topology.kubernetes.io/zone": "us-east-1a",
                                     "eks.amazonaws.com/capacityType": "ON_DEMAND"}, cpu="2", memory="8Gi"))
    cluster.apply(node("u2", cpu="2", memory="8Gi"))  # no labels: price unknown, counted nowhere
    samples = {s.nodepool: s for s in metrics_record(cluster=cluster, now=NOW)}
    assert samples[""].cost_per_hour == Decimal("0.7") and samples[""].unpriced_nodes == 1
    assert samples[""].estimated is True
    # The provisioner cannot replace the unmanaged node: its $0.10 is part of the cluster's bound.
    assert float(samples[""].lower_bound_per_hour) == pytest.approx(0.30, abs=1e-5)
    assert float(samples["a"].lower_bound_per_hour) == pytest.approx(0.20, abs=1e-5)


def test_bad_backend_data_does_not_stop_the_sample(cluster: SimulatedCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*a: Any, **k: Any) -> Any:
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(metrics.Scheduler, "solve", broken)
    samples = {s.nodepool: s for s in metrics_record(cluster=cluster, now=NOW)}
    assert samples[""].cost_per_hour == Decimal("0.6") and samples[""].lower_bound_per_hour is None


def test_hour_boundary_rolls_up_and_is_idempotent(cluster: SimulatedCluster) -> None:
    start = NOW.replace(minute=58)
    for m in range(4):  # 09:58, 09:59, 10:00, 10:01
        metrics_record(cluster=cluster, now=start + timedelta(minutes=m))
    metrics_record(cluster=cluster, now=start + timedelta(minutes=3))  # a repeated minute changes nothing
    rollups = {r.nodepool: r for r in MetricRollup.objects.all()}
    assert set(rollups) == {"", "a"} and {r.hour for r in rollups.values()} == {NOW.replace(minute=0)}
    assert rollups[""].samples == 2 and rollups[""].cost_per_hour_sum == Decimal("1.2")
    assert rollups[""].bound_samples == 2
    assert MetricSample.objects.filter(nodepool="").count() == 4
