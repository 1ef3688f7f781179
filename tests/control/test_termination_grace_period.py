"""terminationGracePeriod end to end in the simulated cluster: a drain that a PodDisruptionBudget and a
do-not-disrupt pod block waits, as before, until the NodePool's terminationGracePeriod is about to end; then
each pod is deleted early enough for its own grace period to end by the node's deadline, the node goes at the
deadline, and the ledger says so. Without terminationGracePeriod the same drain keeps waiting."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.test import Client

from console.control.disruption import _step
from console.control.lifecycle import lifecycle_run
from console.control.models import DisruptionAction
from console.control.provisioning import provision_run
from console.fleet import services
from console.fleet.models import Decision, NodeClaim, NodePool
from console.simulation.models import SimInstance
from tests.simulation.conftest import advance, loop_world, on_demand_pool, pdb, pod
from tests.users import make_user


def _running(clock: Any, config: Any, cluster: Any, cloud: Any, rounds: int = 8) -> None:
    for _ in range(rounds):
        advance(clock, config, 10)
        provision_run(cluster=cluster, cloud=cloud, now=clock())
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())


def _data_pods_on(cluster: Any, node: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in cluster.pods_on_node(node) if p["metadata"]["namespace"] == "data")


def _blocked_world(settings: Any, grace: str) -> tuple[Any, Any, Any, Any, NodeClaim]:
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("old", ["c", "m"], weight=50,
                                                                        termination_grace_period=grace))
    # A PDB that lets no replica go, and a do-not-disrupt pod with a 2-minute grace period of its own.
    cluster.apply(pdb("db", {"app": "db"}, namespace="data", min_available=2))
    for i in range(2):
        cluster.apply(pod(f"db-{i}", namespace="data", cpu="1", memory="1Gi", labels={"app": "db"},
                          owner="ReplicaSet/db-x"))
    job = pod("job", namespace="data", cpu="1", memory="1Gi", owner="ReplicaSet/job-x")
    job["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    job["spec"]["terminationGracePeriodSeconds"] = 120
    cluster.apply(job)
    advance(clock, config, 1)
    _running(clock, config, cluster, cloud)
    claim = NodeClaim.objects.get()
    assert claim.initialized_at and len(_data_pods_on(cluster, claim.node_name)) == 3
    return clock, config, cluster, cloud, claim


def test_a_drain_blocked_by_a_pdb_goes_ahead_when_the_termination_grace_period_ends(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud, claim = _blocked_world(settings, "10m")
    operator = make_user("op", "operator")
    services.nodepool_create(values=on_demand_pool("new", ["c", "m"], weight=10), user=operator)
    services.nodepool_delete(nodepool=NodePool.objects.get(name="old"), user=operator)
    claim.refresh_from_db()
    started = claim.deletion_requested_at
    assert started is not None and claim.termination_deadline == started + timedelta(minutes=10)
    client = Client()
    client.force_login(operator)
    assert 'id="termination-deadline"' in client.get(claim.get_absolute_url()).content.decode()
    assert client.get(f"/api/nodeclaims/{claim.name}/").json()["termination_deadline"]

    # Well before the deadline the drain waits, as without a grace period: nothing is forced.
    outcome = lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    waiting = outcome.termination.waiting[claim.name]
    assert "2 eviction(s) blocked by PodDisruptionBudgets and 1 pod(s) marked" in waiting
    assert f"forced when the terminationGracePeriod ends at {claim.termination_deadline:%Y-%m-%dT%H:%M:%SZ}" in waiting
    advance(clock, config, 7 * 60)
    lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    assert len(_data_pods_on(cluster, claim.node_name)) == 3
    assert not Decision.objects.filter(details__has_key="forced_pod_deletions").exists()

    # 2 minutes before the deadline: the do-not-disrupt pod (120 s of grace) is deleted so its grace ends
    # by the deadline; the replicas (30 s default grace) still wait for the PDB.
    assert claim.termination_deadline is not None
    advance(clock, config, (claim.termination_deadline - clock()).total_seconds() - 120)
    lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    assert _data_pods_on(cluster, claim.node_name) == ["db-0", "db-1"]
    [early] = Decision.objects.filter(details__has_key="forced_pod_deletions")
    assert early.details["forced_pod_deletions"] == ["data/job"]
    assert "terminationGracePeriod 10m" in early.why and "past PodDisruptionBudgets" in early.why
    claim.refresh_from_db()
    assert claim.terminated_at is None

    # At the deadline the PDB no longer holds: the replicas are deleted, the node and the instance go.
    advance(clock, config, 125)
    lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    claim.refresh_from_db()
    assert claim.terminated_at is not None
    assert claim.node_name not in {n["metadata"]["name"] for n in cluster.list_nodes()[0]}
    assert SimInstance.objects.get(instance_id=claim.instance_id).state in ("shutting-down", "terminated")
    forced = list(Decision.objects.filter(details__has_key="forced_pod_deletions").order_by("at", "id"))
    assert len(forced) == 2 and sorted(forced[1].details["forced_pod_deletions"]) == ["data/db-0", "data/db-1"]
    assert "has passed" in forced[1].why
    done = Decision.objects.get(kind=Decision.DISRUPTION, nodes=[claim.name], details__termination="nodepool old deleted")
    assert "terminationGracePeriod" in done.why and "without waiting for PodDisruptionBudgets" in done.why
    # The deleted pods' controllers replaced them; the other pool runs them again.
    _running(clock, config, cluster, cloud)
    data = [p for p in cluster.list_pods()[0] if p["metadata"]["namespace"] == "data"]
    assert len(data) == 3 and all(p["spec"].get("nodeName") for p in data)


def test_without_a_termination_grace_period_the_blocked_drain_keeps_waiting(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud, claim = _blocked_world(settings, "")
    services.nodepool_delete(nodepool=NodePool.objects.get(name="old"), user=make_user("op", "operator"))
    claim.refresh_from_db()
    assert claim.termination_deadline is None
    for _ in range(3):
        advance(clock, config, 24 * 3600)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    claim.refresh_from_db()
    assert claim.terminated_at is None and len(_data_pods_on(cluster, claim.node_name)) == 3
    assert not Decision.objects.filter(details__has_key="forced_pod_deletions").exists()


def test_the_disrupt_loop_drain_is_bounded_by_the_termination_grace_period_too(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud, claim = _blocked_world(settings, "5m")
    now = clock()
    action = DisruptionAction.objects.create(created_at=now, updated_at=now, state=DisruptionAction.VALIDATING,
                                             type="delete", reason="drifted", nodes=[claim.node_name], why="test",
                                             validate_after=now)
    # The do-not-disrupt pod would abort the move at re-validation; take it away so the drain starts.
    cluster.delete_pod("data", "job", 0)
    _step(action, cluster, cloud, now)
    assert action.state == DisruptionAction.DRAINING
    claim.refresh_from_db()
    assert claim.termination_deadline == now + timedelta(minutes=5)
    _step(action, cluster, cloud, now + timedelta(minutes=1))
    assert action.state == DisruptionAction.DRAINING and "blocked by PodDisruptionBudgets" in action.outcome
    _step(action, cluster, cloud, now + timedelta(minutes=5))
    assert action.state == DisruptionAction.DONE
    [forced] = Decision.objects.filter(details__has_key="forced_pod_deletions")
    assert sorted(forced.details["forced_pod_deletions"]) == ["data/db-0", "data/db-1"]


class _OneNode:
    """Just what the disrupt loop's re-validation reads."""

    def __init__(self, node: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        self.node, self.pods = node, pods

    def get_node(self, name: str) -> dict[str, Any]:
        return self.node

    def pods_on_node(self, name: str) -> list[dict[str, Any]]:
        return self.pods


def test_revalidation_reads_timed_do_not_disrupt_on_nodes_and_pods(db: Any) -> None:
    from datetime import UTC, datetime

    from console.control.disruption import _still_valid
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    action = DisruptionAction(nodes=["n1"])

    def obj(value: str, created: str) -> dict[str, Any]:
        return {"metadata": {"name": "x", "namespace": "data", "creationTimestamp": created,
                             "annotations": {"karpenter.sh/do-not-disrupt": value}}}

    assert _still_valid(action, _OneNode(obj("30m", "2026-12-01T11:50:00Z"), []), now) == (  # type: ignore[arg-type]
        "node n1 has do-not-disrupt until 2026-12-01T12:20:00Z now")
    assert _still_valid(action, _OneNode(obj("30m", "2026-12-01T11:00:00Z"), []), now) is None  # type: ignore[arg-type]
    pods = [obj("2h", "2026-12-01T11:00:00Z")]
    assert _still_valid(action, _OneNode(obj("false", "2026-12-01T11:00:00Z"), pods), now) == (  # type: ignore[arg-type]
        "pod data/x on n1 has do-not-disrupt until 2026-12-01T13:00:00Z now")
