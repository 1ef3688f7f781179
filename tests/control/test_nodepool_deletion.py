"""Deleting a NodePool, as in Karpenter: its NodeClaims are cordoned, drained through evictions that
respect PodDisruptionBudgets, and terminated, with ledger entries; until they are gone they are shown,
priced, as "NodePool deleted"."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.test import Client
from django.urls import reverse

from console.control.lifecycle import lifecycle_run
from console.control.provisioning import provision_run
from console.fleet import services
from console.fleet.models import Decision, NodeClaim, NodePool
from console.fleet.selectors import deleted_nodepools, nodepool_list
from console.simulation.models import SimInstance
from tests.simulation.conftest import advance, loop_world, on_demand_pool, pdb, pod
from tests.users import make_user


def _running(clock: Any, config: Any, cluster: Any, cloud: Any, rounds: int = 8) -> None:
    for _ in range(rounds):
        advance(clock, config, 10)
        provision_run(cluster=cluster, cloud=cloud, now=clock())
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())


def _db_pods_on(cluster: Any, node: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in cluster.pods_on_node(node) if p["metadata"]["namespace"] == "data")


def test_deleting_a_nodepool_drains_and_terminates_its_nodes(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("old", ["c", "m"], weight=50))
    # Two replicas behind a PDB that lets one go at a time, on one node of the pool to delete.
    cluster.apply(pdb("db", {"app": "db"}, namespace="data", min_available=1))
    for i in range(2):
        cluster.apply(pod(f"db-{i}", namespace="data", cpu="1", memory="1Gi", labels={"app": "db"},
                          owner="ReplicaSet/db-x"))
    advance(clock, config, 1)
    _running(clock, config, cluster, cloud)
    claim = NodeClaim.objects.get()
    assert claim.initialized_at and len(_db_pods_on(cluster, claim.node_name)) == 2
    price = claim.price_per_hour
    assert price

    # The confirmation says what goes, and what it costs per hour.
    operator = make_user("op", "operator")
    client = Client()
    client.force_login(operator)
    page = client.get(reverse("fleet:nodepool-delete", args=["old"])).content.decode()
    assert "Its 1 node" in page and f"${price:.4f}/hour" in page and claim.name in page

    services.nodepool_create(values=on_demand_pool("new", ["c", "m"], weight=10), user=operator)
    assert client.post(reverse("fleet:nodepool-delete", args=["old"])).status_code == 302
    assert not NodePool.objects.filter(name="old").exists()
    claim.refresh_from_db()
    assert claim.nodepool is None and claim.nodepool_name == "old" and claim.nodepool_deleted
    assert claim.being_removed and claim.deletion_reason == "nodepool old deleted"
    told = Decision.objects.get(kind=Decision.DISRUPTION, details__nodepool_deleted="old")
    assert told.nodes == [claim.name] and told.cost_before == price and "1 NodeClaim(s)" in told.why

    # Until it is gone it is shown, priced, as "NodePool deleted", and counted in the total.
    [row] = deleted_nodepools()
    assert (row.name, row.nodes, row.cost_per_hour) == ("old", 1, price)
    assert [u.nodepool.name for u in nodepool_list()] == ["new"] and nodepool_list()[0].nodes == 0
    listing = client.get(reverse("fleet:nodepool-list"))
    assert "NodePool deleted" in listing.content.decode()
    assert listing.context["total_cost_per_hour"] == price
    assert "NodePool deleted" in client.get(reverse("fleet:nodeclaim-list")).content.decode()
    assert "being-removed" in client.get(claim.get_absolute_url()).content.decode()
    api = client.get(f"/api/nodeclaims/{claim.name}/").json()
    assert (api["nodepool"], api["deletion_reason"]) == ("old", "nodepool old deleted") and api["deletion_requested_at"]

    # The next tick cordons and evicts what the PDB allows: one replica now, the other waits.
    outcome = lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    assert "blocked by PodDisruptionBudgets" in outcome.termination.waiting[claim.name]
    node = cluster.get_node(claim.node_name)
    assert any(t["key"] == "karpenter.sh/disrupted" for t in node["spec"]["taints"])
    assert len(_db_pods_on(cluster, claim.node_name)) == 1
    claim.refresh_from_db()
    assert claim.terminated_at is None
    assert claim.deletion_status == "waiting for 1 eviction(s) blocked by PodDisruptionBudgets"
    assert claim.deletion_status in client.get(claim.get_absolute_url()).content.decode()

    # The evicted replica is re-provisioned by the other pool; then the PDB lets the last one go.
    _running(clock, config, cluster, cloud, rounds=10)
    claim.refresh_from_db()
    assert claim.terminated_at and claim.termination_reason == "nodepool old deleted"
    assert claim.node_name not in {n["metadata"]["name"] for n in cluster.list_nodes()[0]}
    assert SimInstance.objects.get(instance_id=claim.instance_id).state in ("shutting-down", "terminated")
    assert deleted_nodepools() == []
    done = Decision.objects.get(kind=Decision.DISRUPTION, nodes=[claim.name], details__termination="nodepool old deleted")
    assert "drained and deleted" in done.why and done.cost_after == Decimal(0)
    # Every pod ran through; nothing was deleted behind the PDB's back.
    _running(clock, config, cluster, cloud)
    pods, _ = cluster.list_pods()
    data = [p for p in pods if p["metadata"]["namespace"] == "data"]
    assert len(data) == 2 and all(p["spec"].get("nodeName") for p in data)


def test_a_claim_not_launched_yet_is_closed_and_never_launched(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("old", ["c", "m"]))
    pool = NodePool.objects.get()
    claim = NodeClaim.objects.create(name="old-abc", nodepool=pool, nodepool_name="old", instance_type="m5.large",
                                     instance_type_options=["m5.large"], capacity_type="on-demand",
                                     zone="us-east-1a", price_per_hour="0.096", created_at=clock())
    services.nodepool_delete(nodepool=pool, user=None)
    provision_run(cluster=cluster, cloud=cloud, now=clock())        # would launch it before the fix
    assert cloud.list_instances("test") == []
    lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    claim.refresh_from_db()
    assert claim.terminated_at and cloud.list_instances("test") == []
