"""The on-demand share through the control loops on the simulated cluster and cloud: the provision loop launches
on-demand capacity for the share and spot for the rest, and when an on-demand node is lost the next provision
restores the share."""

from __future__ import annotations

from typing import Any

import pytest

from console.control.lifecycle import interruption_run, lifecycle_run
from console.control.provisioning import provision_run
from console.simulation.models import SimInstance
from tests.simulation.conftest import advance, loop_world, pod

POOL = {"name": "general", "node_class_name": "default", "on_demand_base": "2",
        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                         {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]}]}


@pytest.fixture
def world(db: Any, settings: Any) -> Any:
    return loop_world(settings, POOL)


def _tick(world: Any, n: int = 1) -> None:
    clock, config, cluster, cloud = world
    for _ in range(n):
        advance(clock, config, 10)
        provision_run(cluster=cluster, cloud=cloud, now=clock())
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
        interruption_run(cluster=cluster, cloud=cloud, now=clock())


def _split(cluster: Any) -> dict[str, int]:
    """Running web pods per capacity type of their node."""
    nodes, _ = cluster.list_nodes()
    ct = {n["metadata"]["name"]: n["metadata"]["labels"].get("karpenter.sh/capacity-type", "") for n in nodes}
    pods, _ = cluster.list_pods()
    out: dict[str, int] = {}
    for p in pods:
        node = p["spec"].get("nodeName")
        if p["metadata"]["namespace"] == "shop" and node in ct:
            out[ct[node]] = out.get(ct[node], 0) + 1
    return out


def test_the_share_is_launched_and_restored_after_an_on_demand_node_is_lost(world: Any) -> None:
    clock, config, cluster, cloud = world
    for i in range(5):
        cluster.apply(pod(f"web-{i}", namespace="shop", cpu="1", memory="1Gi", owner="ReplicaSet/web-abc"))
    advance(clock, config, 1)
    _tick(world, 10)
    # the kube-scheduler binds pods where they fit: the share is a floor, the rest may fill on-demand room
    first = _split(cluster)
    assert first.get("on-demand", 0) >= 2 and sum(first.values()) == 5 and first.get("spot", 0) >= 1

    lost = SimInstance.objects.filter(capacity_type="on-demand", state="running")
    assert lost.exists()
    lost.update(fail_at=clock())                       # stopped out of band: its node and pods are gone
    advance(clock, config, 1)
    assert _split(cluster).get("on-demand", 0) == 0
    _tick(world, 12)
    after = _split(cluster)
    assert after.get("on-demand", 0) >= 2 and sum(after.values()) == 5
