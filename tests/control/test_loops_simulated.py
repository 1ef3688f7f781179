"""The control loops end to end on the simulated cluster and cloud: pending pods become NodeClaims,
instances, registered and initialized nodes, then running pods — without double launches."""

from __future__ import annotations

from typing import Any

import pytest

from console.control.launch import nodeclaim_launch
from console.control.lifecycle import garbage_collect_run, interruption_run, lifecycle_run
from console.control.locks import loop_lock
from console.control.provisioning import provision_run
from console.fleet import services
from console.fleet.models import Decision, NodeClaim
from console.simulation.cloud import SimulatedCloud
from console.simulation.cluster import SimulatedCluster
from console.simulation.config import SimulationConfig
from tests.console_pages import NODECLASS
from tests.simulation.conftest import Clock, advance, loop_world, on_demand_pool, pod


@pytest.fixture
def world(db: Any, settings: Any) -> tuple[Clock, SimulationConfig, SimulatedCluster, SimulatedCloud]:
    return loop_world(settings, on_demand_pool("general", ["c", "m"], limits={"cpu": "64"}))


def test_pending_pods_become_running_pods(world: Any) -> None:
    clock, config, cluster, cloud = world
    for i in range(6):
        cluster.apply(pod(f"web-{i}", namespace="shop", cpu="1", memory="2Gi", labels={"app": "web"}))
    advance(clock, config, 1)                            # the simulated kube-scheduler marks them Unschedulable
    assert len(cluster.pending_pods()) == 6

    outcome = provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.pending == 6 and outcome.launched and not outcome.failed
    claims = list(NodeClaim.objects.all())
    assert all(c.instance_id and c.launched_at for c in claims)
    assert len(cloud.list_instances("test")) == len(claims)
    launch = Decision.objects.filter(kind=Decision.LAUNCH).first()
    assert launch is not None and "pending pod(s)" in launch.why and "lower bound" in launch.why

    # A second run sees the in-flight claims and launches nothing more.
    again = provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert again.launched == [] and NodeClaim.objects.count() == len(claims)

    for _ in range(8):                                 # boot, register, initialize, bind
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    claims = list(NodeClaim.objects.all())
    assert all(c.registered_at and c.initialized_at and c.node_name for c in claims)
    pods, _ = cluster.list_pods()
    assert all(p["spec"].get("nodeName") for p in pods if p["metadata"]["namespace"] == "shop")
    node = cluster.get_node(claims[0].node_name)
    assert node["metadata"]["labels"]["karpenter.sh/initialized"] == "true"
    assert not any(t["key"] == "karpenter.sh/unregistered" for t in node["spec"].get("taints") or [])


def test_a_claim_is_launched_once_even_if_asked_twice(world: Any) -> None:
    clock, config, cluster, cloud = world
    cluster.apply(pod("solo", cpu="1", memory="1Gi"))
    advance(clock, config, 1)
    with loop_lock("provision"):                        # another worker is provisioning
        assert provision_run(cluster=cluster, cloud=cloud, now=clock()).skipped
    assert NodeClaim.objects.count() == 0
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    claim = NodeClaim.objects.get()
    from console.adapters import instance_types

    assert nodeclaim_launch(claim=claim, cloud=cloud, catalog=instance_types("us-east-1")) == "taken"
    assert len(cloud.list_instances("test")) == 1


def test_unschedulable_verdicts_are_recorded_once(world: Any) -> None:
    clock, config, cluster, cloud = world
    cluster.apply(pod("huge", cpu="500", memory="1Gi"))
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    verdicts = Decision.objects.filter(kind=Decision.UNSCHEDULABLE)
    assert verdicts.count() == 1
    assert "default/huge" in verdicts.get().why and "nodepool general" in verdicts.get().why
    assert NodeClaim.objects.count() == 0


def test_leaked_instance_is_garbage_collected(world: Any) -> None:
    clock, config, cluster, cloud = world
    from console.backends.base import LaunchOption, LaunchRequest

    leaked = cloud.launch(LaunchRequest(nodeclaim="ghost", nodepool="general", cluster="test", nodeclass=NODECLASS,
                                        options=[LaunchOption("m5.large", "us-east-1a", "on-demand", 0.096)]))
    assert garbage_collect_run(cloud=cloud, cluster=cluster, now=clock()).terminated_instances == []  # grace period
    clock.advance(300)
    outcome = garbage_collect_run(cloud=cloud, cluster=cluster, now=clock())
    assert outcome.terminated_instances == [leaked.instance_id]
    assert Decision.objects.filter(kind=Decision.FAILURE, why__contains="owned by no NodeClaim").exists()


def test_spot_interruption_cordons_drains_and_records(world: Any) -> None:
    clock, config, cluster, cloud = world
    from console.fleet.models import NodePool

    pool = NodePool.objects.get(name="general")
    services.nodepool_update(nodepool=pool, values={"requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]}, user=None)
    cluster.apply(pod("web-0", namespace="shop", cpu="1", memory="1Gi", owner="ReplicaSet/web-abc"))
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    for _ in range(8):
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    claim = NodeClaim.objects.get()
    assert claim.capacity_type == "spot" and claim.initialized_at
    assert cloud.interrupt(claim.instance_id)
    advance(clock, config, 1)                              # the warning reaches the queue
    outcome = interruption_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.handled == [claim.name]
    node = cluster.get_node(claim.node_name)
    assert any(t["key"] == "karpenter.sh/disrupted" for t in node["spec"]["taints"])
    assert Decision.objects.filter(kind=Decision.INTERRUPTION).exists()
    # The evicted pod is pending again (its ReplicaSet replaced it) and will be re-provisioned.
    assert any(p["metadata"]["namespace"] == "shop" for p in cluster.pods_on_node(claim.node_name)) is False


def test_capacity_errors_mark_offerings_unavailable_for_the_ttl(world: Any, settings: Any) -> None:
    from datetime import timedelta

    from console.control.launch import unavailable_offerings
    from console.control.models import UnavailableOffering

    clock, config, cluster, cloud = world
    settings.LOADMASTER_UNAVAILABLE_OFFERING_TTL = 60
    cluster.apply(pod("solo", cpu="1", memory="1Gi"))
    advance(clock, config, 1)
    from console.simulation.services import ice_offerings_set

    ice_offerings_set(["*:*:on-demand"])                 # every on-demand offering refuses
    outcome = provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.failed and not outcome.launched
    assert UnavailableOffering.objects.exists()
    assert unavailable_offerings(now=clock())
    assert unavailable_offerings(now=clock() + timedelta(seconds=61)) == set()   # expired: retried


def test_metrics_sample_cost_packing_and_pending(world: Any) -> None:
    from console.control.metrics import metrics_record
    from console.telemetry.models import MetricSample

    clock, config, cluster, cloud = world
    for i in range(3):
        cluster.apply(pod(f"web-{i}", namespace="shop", cpu="1", memory="2Gi"))
    cluster.apply(pod("huge", cpu="500", memory="1Gi"))
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    for _ in range(8):
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    metrics_record(cluster=cluster, now=clock())
    metrics_record(cluster=cluster, now=clock())            # same minute: rows replaced, not added
    total = MetricSample.objects.get(nodepool="")
    pool = MetricSample.objects.get(nodepool="general")
    claims = list(NodeClaim.objects.active())
    assert total.nodes == pool.nodes == len(claims)
    assert float(total.cost_per_hour) == pytest.approx(sum(float(c.price_per_hour) for c in claims))
    assert total.cpu_requested == 3000 and 0 < total.cpu_requested <= total.cpu_allocatable
    assert total.memory_requested == 3 * 2 * 2**30
    assert total.pods_pending == 1
    assert any("default/huge" not in r and "nodepool general" in r for r in total.unschedulable_reasons)
    # each pending pod is also counted once, under its deciding reason, for the dashboards' pending chart
    assert sum(n for r, n in total.unschedulable_reasons.items() if r.startswith("pod: ")) == total.pods_pending
    assert total.on_demand_cost_per_hour >= total.cost_per_hour
    assert MetricSample.objects.count() == 2


def _bring_up(clock: Clock, config: SimulationConfig, cluster: SimulatedCluster, cloud: SimulatedCloud) -> None:
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    for _ in range(8):
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())


def _disrupt_until_settled(clock: Clock, config: SimulationConfig, cluster: SimulatedCluster,
                           cloud: SimulatedCloud, rounds: int = 12) -> list[str]:
    from console.control.disruption import disrupt_run

    states = []
    for _ in range(rounds):
        outcome = disrupt_run(cluster=cluster, cloud=cloud, now=clock())
        states.append(outcome.state)
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    return states


def test_empty_node_is_cordoned_drained_deleted_and_terminated(world: Any) -> None:
    from console.control.models import DisruptionAction
    from console.fleet.models import NodePool

    clock, config, cluster, cloud = world
    services.nodepool_update(nodepool=NodePool.objects.get(name="general"),
                             values={"consolidate_after": "0s", "budgets": [{"nodes": "100%"}]}, user=None)
    cluster.apply(pod("batch-0", namespace="jobs", cpu="1", memory="1Gi"))
    _bring_up(clock, config, cluster, cloud)
    claim = NodeClaim.objects.get()
    assert claim.initialized_at
    cluster.delete("Pod", "batch-0", "jobs")            # the job finished: the node is empty
    _disrupt_until_settled(clock, config, cluster, cloud)
    action = DisruptionAction.objects.get()
    assert (action.type, action.reason, action.state) == ("delete", "empty", DisruptionAction.DONE)
    claim.refresh_from_db()
    assert claim.terminated_at and "empty" in claim.termination_reason
    assert cloud.list_instances("test") == []
    assert claim.node_name not in {n["metadata"]["name"] for n in cluster.list_nodes()[0]}
    decision = Decision.objects.get(kind=Decision.DISRUPTION)
    assert decision.nodes == [claim.node_name] and "empty" in decision.why


def test_the_loops_record_their_scheduling_time_and_the_disruption_method(world: Any) -> None:
    """/metrics reads both from the database: karpenter_scheduler_scheduling_duration_seconds per
    controller, and consolidation_type from the engine's method rather than the action's shape."""
    from console.fleet.models import NodePool
    from console.telemetry import loop_stats
    from console.telemetry.models import DurationStat

    clock, config, cluster, cloud = world
    services.nodepool_update(nodepool=NodePool.objects.get(name="general"),
                             values={"consolidate_after": "0s", "budgets": [{"nodes": "100%"}]}, user=None)
    cluster.apply(pod("batch-0", namespace="jobs", cpu="1", memory="1Gi"))
    _bring_up(clock, config, cluster, cloud)
    cluster.delete("Pod", "batch-0", "jobs")
    _disrupt_until_settled(clock, config, cluster, cloud)
    timed = set(DurationStat.objects.filter(metric=loop_stats.SCHEDULING).values_list("controller", flat=True))
    assert timed == {"provisioner", "disruption"}
    assert Decision.objects.get(kind=Decision.DISRUPTION).details["method"] == "emptiness"


def test_do_not_disrupt_arriving_during_validation_abandons_the_move(world: Any) -> None:
    from console.control.disruption import disrupt_run
    from console.control.models import DisruptionAction
    from console.fleet.models import NodePool

    clock, config, cluster, cloud = world
    services.nodepool_update(nodepool=NodePool.objects.get(name="general"),
                             values={"consolidate_after": "0s", "budgets": [{"nodes": "100%"}]}, user=None)
    cluster.apply(pod("batch-0", namespace="jobs", cpu="1", memory="1Gi"))
    _bring_up(clock, config, cluster, cloud)
    claim = NodeClaim.objects.get()
    cluster.delete("Pod", "batch-0", "jobs")
    disrupt_run(cluster=cluster, cloud=cloud, now=clock())          # cordons, waits 15 s to validate
    node = cluster.get_node(claim.node_name)
    assert any(t["key"] == "karpenter.sh/disrupted" for t in node["spec"]["taints"])
    guarded = pod("critical", namespace="jobs", cpu="100m", memory="64Mi", node_name=claim.node_name)
    guarded["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    cluster.apply(guarded)
    clock.advance(20)
    disrupt_run(cluster=cluster, cloud=cloud, now=clock())
    action = DisruptionAction.objects.get()
    assert action.state == DisruptionAction.FAILED and "do-not-disrupt" in action.outcome
    node = cluster.get_node(claim.node_name)
    assert not any(t["key"] == "karpenter.sh/disrupted" for t in node["spec"].get("taints") or [])
    claim.refresh_from_db()
    assert claim.terminated_at is None and claim.disrupting_at is None


def test_worker_killed_between_create_fleet_and_commit_leaks_nothing(world: Any) -> None:
    """A claim whose CreateFleet succeeded but whose instance id was never saved is adopted by the
    lifecycle loop, and nothing is launched twice or left unowned."""
    from django.utils import timezone as dj_timezone

    from console.backends.base import LaunchOption, LaunchRequest
    from console.fleet.models import NodePool

    clock, config, cluster, cloud = world
    claim = NodeClaim.objects.create(
        name="general-crash1", nodepool=NodePool.objects.get(name="general"), nodepool_name="general",
        instance_type="m5.large", instance_type_options=["m5.large"], capacity_type="on-demand", zone="us-east-1a",
        price_per_hour="0.096", launch_started_at=clock(), created_at=clock())
    # The worker got this far, then died before saving the instance id:
    cloud.launch(LaunchRequest(nodeclaim=claim.name, nodepool="general", cluster="test", nodeclass=NODECLASS,
                               options=[LaunchOption("m5.large", "us-east-1a", "on-demand", 0.096)]))
    clock.advance(300)
    assert garbage_collect_run(cloud=cloud, cluster=cluster, now=clock()).terminated_instances == []
    outcome = lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.adopted == [claim.name]
    claim.refresh_from_db()
    assert claim.instance_id and claim.launched_at
    assert provision_run(cluster=cluster, cloud=cloud, now=clock()).launched == []   # no relaunch
    assert len(cloud.list_instances("test")) == 1
    assert dj_timezone.is_aware(claim.launched_at)


def test_drain_blocked_by_a_pdb_waits_and_never_deletes_the_pod(world: Any) -> None:
    from console.control.disruption import disrupt_run
    from console.control.models import DisruptionAction
    from console.fleet.models import NodePool
    from tests.simulation.conftest import pdb

    clock, config, cluster, cloud = world
    services.nodepool_update(nodepool=NodePool.objects.get(name="general"),
                             values={"consolidate_after": "0s", "budgets": [{"nodes": "100%"}]}, user=None)
    cluster.apply(pod("db-0", namespace="data", cpu="1", memory="1Gi", labels={"app": "db"}, owner="ReplicaSet/db-x"))
    _bring_up(clock, config, cluster, cloud)
    claim = NodeClaim.objects.get()
    # Start an action by hand: the engine itself would refuse this move because of the PDB below.
    action = DisruptionAction.objects.create(created_at=clock(), updated_at=clock(), state=DisruptionAction.DRAINING,
                                             type="delete", reason="underutilized", nodes=[claim.node_name],
                                             why="test")
    cluster.apply(pdb("db", {"app": "db"}, namespace="data", min_available=1))
    for _ in range(3):
        disrupt_run(cluster=cluster, cloud=cloud, now=clock())
        clock.advance(10)
    action.refresh_from_db()
    assert action.state == DisruptionAction.DRAINING and "blocked by PodDisruptionBudgets" in action.outcome
    assert [p["metadata"]["name"] for p in cluster.pods_on_node(claim.node_name)
            if p["metadata"]["namespace"] == "data"] == ["db-0"]
    claim.refresh_from_db()
    assert claim.terminated_at is None


def _replace_with_many(clock: Clock, config: SimulationConfig, cluster: SimulatedCluster, cloud: SimulatedCloud,
                       count: int) -> tuple[Any, NodeClaim]:
    """A replace action (as a repack plans it) of the one node with `count` small replacements."""
    from console.control.disruption import _start
    from packing.disruption.model import Action

    cluster.apply(pod("web-0", namespace="shop", cpu="1", memory="1Gi"))
    _bring_up(clock, config, cluster, cloud)
    claim = NodeClaim.objects.get()
    planned = {"nodepool": "general", "instance_type": claim.instance_type,
               "instance_type_options": [claim.instance_type], "capacity_type": claim.capacity_type,
               "zone": claim.zone, "price_per_hour": float(claim.price_per_hour or 0) / (count + 1),
               "labels": {"karpenter.sh/nodepool": "general"}, "taints": [], "requests": {}, "allocatable": {}}
    spec = Action(type="replace", reason="underutilized", nodes=[claim.node_name],
                  replacements=[dict(planned) for _ in range(count)], savings_per_hour=0.01,
                  moves={"shop/web-0": "general-x"}, why="repack (test)")
    return _start(spec, cluster, clock()), claim


def test_replacements_launch_a_batch_per_tick(world: Any) -> None:
    from console.control.disruption import LAUNCH_BATCH, _step
    from console.control.models import DisruptionAction

    clock, config, cluster, cloud = world
    action, _ = _replace_with_many(clock, config, cluster, cloud, LAUNCH_BATCH + 5)
    _step(action, cluster, cloud, clock())
    replacements = NodeClaim.objects.filter(name__in=action.replacement_claims)
    assert action.state == DisruptionAction.REPLACING and replacements.count() == LAUNCH_BATCH + 5
    assert replacements.filter(launch_started_at__isnull=False).count() == LAUNCH_BATCH
    _step(action, cluster, cloud, clock())
    assert replacements.filter(launch_started_at__isnull=True).count() == 0


def test_an_abandoned_replace_terminates_the_replacements_it_launched(world: Any) -> None:
    from console.control.disruption import _step
    from console.control.models import DisruptionAction

    clock, config, cluster, cloud = world
    action, original = _replace_with_many(clock, config, cluster, cloud, 3)
    _step(action, cluster, cloud, clock())
    launched = NodeClaim.objects.filter(name__in=action.replacement_claims)
    assert launched.filter(instance_id="").count() == 0 and len(cloud.list_instances("test")) == 4
    first = launched.order_by("name").first()
    cloud.terminate([first.instance_id])                      # its instance was reclaimed before it initialized
    NodeClaim.objects.filter(pk=first.pk).update(terminated_at=clock(), termination_reason="test: reclaimed")
    _step(action, cluster, cloud, clock())
    action.refresh_from_db()
    assert action.state == DisruptionAction.FAILED
    assert launched.filter(terminated_at__isnull=True).count() == 0
    assert all("replacement abandoned" in c.termination_reason for c in launched.exclude(pk=first.pk))
    # Only the original node's instance is left running, and it is back in service.
    from console.simulation.models import SimInstance
    alive = SimInstance.objects.filter(state__in=("pending", "running")).values_list("instance_id", flat=True)
    assert list(alive) == [original.instance_id]
    original.refresh_from_db()
    assert original.terminated_at is None and original.disrupting_at is None


@pytest.mark.parametrize("enabled", [True, False])
def test_the_repack_setting_reaches_the_engine(world: Any, settings: Any, monkeypatch: Any, enabled: bool) -> None:
    from console.control import disruption
    from packing.disruption.model import Report

    clock, config, cluster, cloud = world
    settings.LOADMASTER_CONSOLIDATION_REPACK = enabled
    seen: dict[str, Any] = {}

    def engine(cluster_in: Any, at: Any, **kwargs: Any) -> Report:
        seen.update(kwargs)
        return Report(actions=[])

    monkeypatch.setattr(disruption, "consolidate", engine)
    disruption.disrupt_run(cluster=cluster, cloud=cloud, now=clock())
    assert seen == {"repack": enabled}
