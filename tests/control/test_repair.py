"""Node repair end to end on the simulated cluster and cloud: a node goes unhealthy, time passes, the loop
force-terminates it and its pods land on a new node; more than 20% of a NodePool unhealthy blocks repair."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command

from console.control.lifecycle import lifecycle_run
from console.control.locks import loop_lock
from console.control.provisioning import provision_run
from console.control.repair import node_repair_run
from console.dashboards.exposition import Exposition
from console.dashboards.ledger_metrics import voluntary_disruptions, write_ledger
from console.fleet.models import Decision, NodeClaim
from console.simulation.cloud import SimulatedCloud
from console.simulation.cluster import SimulatedCluster
from console.simulation.config import SimulationConfig
from console.simulation.services import node_conditions_set
from tests.simulation.conftest import Clock, advance, loop_world, on_demand_pool, pdb, pod

World = tuple[Clock, SimulationConfig, SimulatedCluster, SimulatedCloud]


@pytest.fixture
def world(db: Any, settings: Any) -> World:
    settings.LOADMASTER_NODE_REPAIR = True
    # One m5.large per pod: each 1.5-CPU pod needs a node of its own.
    pool = on_demand_pool("general", ["m"])
    pool["requirements"] = [*pool["requirements"],
                            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}]
    return loop_world(settings, pool)


def _running_fleet(world: World, pods: int) -> list[NodeClaim]:
    clock, config, cluster, cloud = world
    for i in range(pods):
        cluster.apply(pod(f"web-{i}", namespace="shop", cpu="1500m", memory="1Gi", labels={"app": "web"},
                          owner="ReplicaSet/web-abc"))
    _settle(world)
    claims = list(NodeClaim.objects.active().order_by("name"))
    assert len(claims) == pods and all(c.initialized_at and c.node_name for c in claims)
    return claims


def _settle(world: World) -> None:
    """Provision the pending pods and let the nodes boot, register, initialize and take their pods."""
    clock, config, cluster, cloud = world
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    for _ in range(8):
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    advance(clock, config, 1)


def _shop_pods(cluster: SimulatedCluster) -> list[dict[str, Any]]:
    return [p for p in cluster.list_pods()[0] if p["metadata"]["namespace"] == "shop"]


def _metrics(clock: Clock) -> str:
    out = Exposition()
    write_ledger(out, now=clock())
    return out.text()


def test_an_unhealthy_node_is_replaced_and_its_pods_move(world: World) -> None:
    clock, config, cluster, cloud = world
    claims = _running_fleet(world, 3)
    # A budget that allows no eviction at all: repair does not wait for it.
    cluster.apply(pdb("web", {"app": "web"}, namespace="shop", min_available=3))
    sick = claims[0]
    node_conditions_set(sick.node_name, [("Ready", "False")], now=clock())

    clock.advance(29 * 60)                                  # within the 30-minute toleration
    early = node_repair_run(cluster=cluster, cloud=cloud, now=clock())
    assert early.repaired == [] and sick.node_name in early.waiting
    assert cluster.get_node(sick.node_name)

    clock.advance(2 * 60)
    outcome = node_repair_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.repaired == [sick.node_name] and not outcome.blocked
    sick.refresh_from_db()
    assert sick.terminated_at == clock() and sick.termination_reason.startswith("unhealthy: Ready=False for 31m")
    assert sick.node_name not in {n["metadata"]["name"] for n in cluster.list_nodes()[0]}
    assert cloud.describe([sick.instance_id])[0].state in ("shutting-down", "terminated")
    line = Decision.objects.get(details__repair="repaired")
    assert line.nodes == [sick.name] and line.nodepool_name == "general"
    assert f"Node {sick.node_name} repaired: condition Ready=False since" in line.why
    assert "past its 30m toleration" in line.why and "without waiting for PodDisruptionBudgets" in line.why
    assert line.details["pods"] == 1
    pending = [p for p in _shop_pods(cluster) if not p["spec"].get("nodeName")]
    assert len(pending) == 1                                 # its ReplicaSet recreated the pod, pending

    # A second pass finds nothing more to do.
    assert node_repair_run(cluster=cluster, cloud=cloud, now=clock()).repaired == []
    assert Decision.objects.filter(details__repair="repaired").count() == 1

    _settle(world)                                           # the provisioner launches a new node for it
    live = {c.node_name for c in NodeClaim.objects.active()}
    assert len(live) == 3 and sick.node_name not in live
    shop = _shop_pods(cluster)
    assert len(shop) == 3 and all(p["spec"].get("nodeName") in live for p in shop)

    text = _metrics(clock)
    assert 'karpenter_nodeclaims_disrupted_total{capacity_type="on-demand",nodepool="general",reason="unhealthy"} 1' in text
    # image_id is empty (Loadmaster does not record the AMI), so the series leaves it out.
    assert ('karpenter_nodeclaims_unhealthy_disrupted_total{capacity_type="on-demand",condition="ready",'
            'nodepool="general"} 1') in text
    assert not voluntary_disruptions().exists()             # repair is not a voluntary disruption


def test_two_of_five_unhealthy_blocks_repair(world: World) -> None:
    clock, config, cluster, cloud = world
    claims = _running_fleet(world, 5)
    first, second = claims[0], claims[1]
    node_conditions_set(first.node_name, [("Ready", "False")], now=clock())
    node_conditions_set(second.node_name, [("Ready", "Unknown")], now=clock())
    clock.advance(31 * 60)

    outcome = node_repair_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.repaired == [] and set(outcome.blocked) == {first.node_name, second.node_name}
    assert NodeClaim.objects.active().count() == 5
    assert len(cluster.list_nodes()[0]) == 5
    refusal = Decision.objects.get(details__repair="blocked")
    assert refusal.why.startswith("NodeRepairBlocked: more than 20% nodes are unhealthy in the nodepool: "
                                  "2 of 5 nodes of NodePool general are unhealthy; at most 1 (20% rounded up)")
    assert first.node_name in refusal.why and second.node_name in refusal.why
    assert sorted(refusal.nodes) == sorted([first.name, second.name])

    # Blocked again on the next tick: the ledger already says so.
    clock.advance(60)
    assert len(node_repair_run(cluster=cluster, cloud=cloud, now=clock()).blocked) == 2
    assert Decision.objects.filter(details__repair="blocked").count() == 1

    # One of them recovers: 1 of 5 is within 20%, and the other one is repaired.
    node_conditions_set(second.node_name, [("Ready", "True")], now=clock())
    clock.advance(60)
    outcome = node_repair_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.repaired == [first.node_name] and not outcome.blocked
    assert NodeClaim.objects.active().count() == 4


def test_repair_is_off_by_default_and_one_worker_repairs(world: World, settings: Any) -> None:
    clock, config, cluster, cloud = world
    claims = _running_fleet(world, 1)
    node_conditions_set(claims[0].node_name, [("Ready", "False")], now=clock())
    clock.advance(3600)
    settings.LOADMASTER_NODE_REPAIR = False
    assert node_repair_run(cluster=cluster, cloud=cloud, now=clock()).skipped.startswith("node repair is off")
    settings.LOADMASTER_NODE_REPAIR = True
    with loop_lock("repair"):                                # another worker holds the loop
        assert node_repair_run(cluster=cluster, cloud=cloud, now=clock()).skipped == "another worker is repairing"
    assert NodeClaim.objects.active().count() == 1
    # A single node of its pool: 1 of 1 is within ceil(20% of 1) = 1, so it is repaired.
    assert node_repair_run(cluster=cluster, cloud=cloud, now=clock()).repaired == [claims[0].node_name]


def test_an_operator_condition_with_its_own_toleration(world: World, settings: Any) -> None:
    from console.repair_policy import DEFAULT_POLICIES, policies_parse

    clock, config, cluster, cloud = world
    claims = _running_fleet(world, 1)
    settings.LOADMASTER_NODE_REPAIR_POLICIES = policies_parse("DiskPressure=True:5m")
    node_conditions_set(claims[0].node_name, [("DiskPressure", "True")], now=clock())
    clock.advance(6 * 60)
    assert node_repair_run(cluster=cluster, cloud=cloud, now=clock(), policies=DEFAULT_POLICIES).repaired == []
    outcome = node_repair_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.repaired == [claims[0].node_name]
    line = Decision.objects.get(details__repair="repaired")
    assert "condition DiskPressure=True" in line.why and line.details["condition_label"] == "disk_pressure"


def test_simulation_unhealthy_command(world: World, capsys: Any) -> None:
    clock, config, cluster, cloud = world
    claims = _running_fleet(world, 1)
    name = claims[0].node_name
    call_command("simulation", "unhealthy", name)
    call_command("simulation", "unhealthy", name, "--condition", "DiskPressure=True", "--condition", "Ready=False")
    out = capsys.readouterr().out
    assert f"{name}: Ready=False since" in out and f"{name}: DiskPressure=True since" in out
    conditions = {c["type"]: c for c in cluster.get_node(name)["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "False" and conditions["DiskPressure"]["status"] == "True"
    first = conditions["Ready"]["lastTransitionTime"]
    call_command("simulation", "unhealthy", name)            # same status: the transition time stays
    assert {c["type"]: c for c in cluster.get_node(name)["status"]["conditions"]}["Ready"]["lastTransitionTime"] == first

    from django.core.management.base import CommandError
    with pytest.raises(CommandError, match="no simulated node nope"):
        call_command("simulation", "unhealthy", "nope")
    with pytest.raises(CommandError, match="status 'bad' must be True, False or Unknown"):
        call_command("simulation", "unhealthy", name, "--condition", "Ready=bad")
