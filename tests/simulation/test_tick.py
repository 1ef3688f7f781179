"""simulation_tick: the scheduler, the compressed day, idempotency, reset, the command and the task."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from console.simulation import services
from console.simulation.cloud import SimulatedCloud
from console.simulation.cluster import SimulatedCluster
from console.simulation.config import SimulationConfig
from console.simulation.models import SimState, SimWorkload
from console.simulation.workloads import DEMO_WORKLOADS, curve
from tests.simulation.conftest import M6I_SPOT_A, Clock, Ticker, names, node, pod, request

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


def _where(cluster: SimulatedCluster) -> dict[str, str]:
    pods, _ = cluster.list_pods()
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in pods}


def _reason(cluster: SimulatedCluster, name: str) -> str:
    pods, _ = cluster.list_pods()
    p = next(p for p in pods if p["metadata"]["name"] == name)
    return next(c["message"] for c in p["status"]["conditions"] if c["type"] == "PodScheduled")


# --- the scheduler ---------------------------------------------------------------------------------

def test_scheduler_honours_taints_and_tolerations(cluster: SimulatedCluster, tick: Ticker) -> None:
    cluster.apply(node("gpu-1", taints=[GPU_TAINT], labels={"karpenter.sh/nodepool": "gpu"}))
    cluster.apply(pod("plain"))
    cluster.apply(pod("trainer", tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]))
    report = tick()
    assert report.bound == ["default/trainer"] and report.unschedulable == ["default/plain"]
    assert _where(cluster) == {"plain": "", "trainer": "gpu-1"}
    assert _reason(cluster, "plain") == "0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: true}."
    assert names(cluster.pending_pods()) == ["plain"]


def test_scheduler_honours_selectors_and_required_affinity(cluster: SimulatedCluster, tick: Ticker) -> None:
    cluster.apply(node("amd", labels={"kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": "us-east-1a"}))
    cluster.apply(node("arm", labels={"kubernetes.io/arch": "arm64", "topology.kubernetes.io/zone": "us-east-1b"}))
    cluster.apply(pod("wants-arm", node_selector={"kubernetes.io/arch": "arm64"}))
    cluster.apply(pod("wants-zone-a", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}]}]}}}))
    cluster.apply(pod("wants-nothing-here", node_selector={"kubernetes.io/arch": "s390x"}))
    tick()
    assert _where(cluster) == {"wants-arm": "arm", "wants-zone-a": "amd", "wants-nothing-here": ""}
    assert "2 node(s) didn't match Pod's node affinity/selector" in _reason(cluster, "wants-nothing-here")


def test_scheduler_respects_capacity_and_spreads(cluster: SimulatedCluster, tick: Ticker) -> None:
    cluster.apply(node("a", cpu="2", memory="8Gi"))
    cluster.apply(node("b", cpu="2", memory="8Gi"))
    cluster.apply(pod("already", node_name="a", cpu="1500m"))
    for i in range(4):
        cluster.apply(pod(f"p{i}", cpu="700m"))
    report = tick()
    where = _where(cluster)
    # a has 500m left: nothing more fits there; b takes two of 700m, the rest waits.
    assert sorted(n for n in where.values() if n) == ["a", "b", "b"]
    assert len(report.bound) == 2 and len(report.unschedulable) == 2
    stuck = next(name for name, n in where.items() if not n)
    assert "2 Insufficient cpu" in _reason(cluster, stuck)
    # Extended resources count too.
    cluster.apply(pod("gpu-job", cpu="100m", extra={"nvidia.com/gpu": "1"}))
    tick()
    assert "Insufficient nvidia.com/gpu" in _reason(cluster, "gpu-job")


def test_scheduler_waits_for_registration_and_initialization(cluster: SimulatedCluster, tick: Ticker) -> None:
    cluster.apply(node("new", initialized=False, labels={"karpenter.sh/nodepool": "default"},
                       taints=[{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]))
    cluster.apply(pod("p"))
    assert tick().unschedulable == ["default/p"]
    cluster.register_node("new", labels={}, taints=[])
    assert tick().unschedulable == ["default/p"]                 # registered, not yet initialized
    cluster.mark_initialized("new")
    assert tick().bound == ["default/p"]
    # Cordoned nodes take no new pods.
    cluster.cordon("new")
    cluster.apply(pod("q"))
    assert tick().unschedulable == ["default/q"]


def test_an_unreadable_pod_is_unschedulable_not_fatal(cluster: SimulatedCluster, tick: Ticker) -> None:
    cluster.apply(node("n"))
    bad = pod("bad")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    cluster.apply(bad)
    cluster.apply(pod("good"))
    report = tick()
    assert report.bound == ["default/good"]
    assert "invalid pod spec" in _reason(cluster, "bad")


def test_a_gated_pod_is_never_bound_nor_pending(cluster: SimulatedCluster, tick: Ticker) -> None:
    cluster.apply(node("n"))
    gated = pod("gated")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    cluster.apply(gated)
    cluster.apply(pod("free"))
    report = tick()
    assert report.bound == ["default/free"] and report.unschedulable == []
    assert _where(cluster) == {"gated": "", "free": "n"}
    pods, _ = cluster.list_pods()
    (cond,) = next(p for p in pods if p["metadata"]["name"] == "gated")["status"]["conditions"]
    assert (cond["status"], cond["reason"]) == ("False", "SchedulingGated")
    assert names(cluster.pending_pods()) == []          # not Unschedulable: the provisioner leaves it alone
    rv = SimState.objects.get().resource_version
    tick()
    assert SimState.objects.get().resource_version == rv   # the condition is written once
    # the gates removed, it is scheduled like any other pod
    cleared = next(p for p in cluster.list_pods()[0] if p["metadata"]["name"] == "gated")
    cleared["spec"].pop("schedulingGates")
    cluster.apply(cleared)
    assert tick().bound == ["default/gated"]


def test_a_repeated_tick_changes_nothing(cluster: SimulatedCluster, tick: Ticker) -> None:
    cluster.apply(node("n", cpu="1"))
    cluster.apply(pod("fits", cpu="500m"))
    cluster.apply(pod("does-not", cpu="2"))
    tick()
    rv = SimState.objects.get().resource_version
    report = tick()
    assert report.bound == [] and SimState.objects.get().resource_version == rv   # no write, no watch event


# --- the demo world and the compressed day ---------------------------------------------------------

@pytest.fixture
def demo(world: Clock, config: SimulationConfig) -> SimulationConfig:
    # A day of 2400 s (36x), starting at midnight, with the demo workloads.
    return config.with_(demo_workloads=True, day_seconds=2400.0, start_hour=0.0)


def _replicas_over_a_day(demo: SimulationConfig, clock: Clock) -> list[dict[str, int]]:
    seen = []
    for _hour in range(24):
        services.simulation_tick(now=clock(), config=demo)
        seen.append({str(w): w.replicas for w in SimWorkload.objects.all()})
        clock.advance(100)                                      # one simulated hour
    return seen


def test_the_demo_world_is_seeded_once(world: Clock, demo: SimulationConfig, cluster: SimulatedCluster) -> None:
    services.simulation_tick(now=world(), config=demo)
    services.simulation_tick(now=world(), config=demo)
    assert [str(w) for w in SimWorkload.objects.all()] == [f"{w.namespace}/{w.name}" for w in sorted(
        DEMO_WORKLOADS, key=lambda w: (w.namespace, w.name))]
    assert names(cluster.list_daemonsets()) == ["node-agent"]
    assert names(cluster.list_pdbs()) == ["web"]
    # Nothing runs anywhere yet: every demo pod is pending for the provisioner.
    pods, _ = cluster.list_pods()
    assert pods and len(cluster.pending_pods()) == len(pods)


def test_the_compressed_day_has_a_morning_burst_and_a_quiet_night(world: Clock, demo: SimulationConfig) -> None:
    day = _replicas_over_a_day(demo, world)
    web = [h["shop/web"] for h in day]
    batch = [h["batch/nightly-report"] for h in day]
    trainer = [h["ml/trainer"] for h in day]
    assert web[1] == 4 and web[9] == 24                          # min at night, max after the burst
    assert web[9] - web[6] >= 10                                 # the burst
    assert batch[2] == 12 and batch[12] == 0                     # batch uses the night
    assert trainer[12] == 1 and trainer[20] == 0
    assert curve("business", 33.0) == curve("business", 9.0)      # the day repeats


def test_the_day_is_deterministic_for_a_seed(world: Clock, config: SimulationConfig) -> None:
    noisy = config.with_(demo_workloads=True, day_seconds=2400.0, start_hour=0.0, replica_noise=0.2)
    first = _replicas_over_a_day(noisy, world)
    services.simulation_reset(seed=noisy.seed, now=world(), config=noisy)
    assert _replicas_over_a_day(noisy, world) == first
    services.simulation_reset(seed=noisy.seed + 1, now=world(), config=noisy)
    assert _replicas_over_a_day(noisy, world) != first


def test_scaling_creates_and_deletes_pods(world: Clock, demo: SimulationConfig, cluster: SimulatedCluster) -> None:
    services.simulation_tick(now=world(), config=demo)
    services.workload_scale("shop", "web", 7)
    services.simulation_tick(now=world(), config=demo)
    web = [p for p in cluster.list_pods()[0] if p["metadata"]["labels"].get("app") == "web"]
    assert len(web) == 7
    owner = web[0]["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "ReplicaSet" and owner["name"].startswith("web-")
    services.workload_scale("shop", "web", 2)
    report = services.simulation_tick(now=world(), config=demo)
    assert report.pods_deleted == 5
    services.workload_scale("shop", "web", None)                # back to the curve (midnight: the minimum)
    services.simulation_tick(now=world(), config=demo)
    assert SimWorkload.objects.get(name="web").replicas == 4


def test_end_to_end_pending_pods_become_running_on_launched_nodes(world: Clock, demo: SimulationConfig,
                                                                  cluster: SimulatedCluster) -> None:
    """What the lead's loops will do, by hand: launch for pending pods, register, initialize."""
    cloud = SimulatedCloud(demo, clock=world)
    services.simulation_tick(now=world(), config=demo)
    for w in SimWorkload.objects.exclude(name="web"):
        services.workload_scale(w.namespace, w.name, 0)
    services.workload_scale("shop", "web", 3)
    services.simulation_tick(now=world(), config=demo)
    assert len(cluster.pending_pods()) == 3
    instance = cloud.launch(request("default-x", M6I_SPOT_A, cluster="demo"))
    for _ in range(10):
        world.advance(5)
        services.simulation_tick(now=world(), config=demo)
        found = cluster.node_by_provider_id(instance.provider_id)
        if found and "karpenter.sh/initialized" not in found["metadata"]["labels"]:
            cluster.register_node(found["metadata"]["name"], labels={"team": "platform"}, taints=[])
            cluster.mark_initialized(found["metadata"]["name"])
    node_name = cluster.node_by_provider_id(instance.provider_id)["metadata"]["name"]
    assert cluster.pending_pods() == []
    on_node = cluster.pods_on_node(node_name)
    assert sorted(p["metadata"]["labels"]["app"] for p in on_node) == ["node-agent", "web", "web", "web"]
    assert all(p["status"]["phase"] == "Running" for p in on_node)


# --- reset, command, task --------------------------------------------------------------------------

def test_reset_empties_the_world_and_expires_watches(world: Clock, config: SimulationConfig,
                                                     cluster: SimulatedCluster, cloud: SimulatedCloud) -> None:
    cluster.apply(node("n"))
    cloud.launch(request("a", M6I_SPOT_A))
    _, rv = cluster.list_nodes()
    epoch = SimState.objects.get().epoch
    state = services.simulation_reset(seed=99, now=world(), config=config)
    assert state.seed == 99 and state.epoch == epoch + 1
    assert cluster.list_nodes()[0] == [] and cloud.list_instances("test") == []
    with pytest.raises(Exception, match="older than the retained history"):
        cluster.watch_nodes(rv)


def test_management_command(world: Clock) -> None:
    out = StringIO()
    call_command("simulation", "reset", "--seed", "5", stdout=out)
    assert "seed 5" in out.getvalue()
    call_command("simulation", "tick", "--times", "2", "--step", "5", stdout=out)
    call_command("simulation", "scale", "shop/web", "6", stdout=out)
    assert "6 replicas" in out.getvalue()
    call_command("simulation", "status", stdout=out)
    assert "Simulated day 1" in out.getvalue() and "shop/web" in out.getvalue()
    js = StringIO()
    call_command("simulation", "status", "--json", stdout=js)
    assert json.loads(js.getvalue())["seed"] == 5


def test_celery_task_ticks(world: Clock) -> None:
    from console.simulation.tasks import tick as tick_task

    result = tick_task.apply().get()
    assert result is not None and "sim_time" in result
    assert SimState.objects.get().last_tick is not None


def test_settings_drive_the_configuration(settings: Any) -> None:
    settings.LOADMASTER_SIM_DAY_SECONDS = "1200"                 # raw env strings are read as numbers
    settings.LOADMASTER_SIM_ICE_OFFERINGS = "m5.large:us-east-1a:spot, c5.*"
    settings.LOADMASTER_SIM_DEMO_WORKLOADS = "0"
    settings.LOADMASTER_CLUSTER_NAME = "prod"
    settings.LOADMASTER_SIM_SPOT_NOTICE_SECONDS = ""              # empty: two minutes, compressed
    cfg = SimulationConfig.from_settings(seed=3)
    assert cfg.day_seconds == 1200.0 and cfg.compression == 72.0 and cfg.spot_notice == pytest.approx(120 / 72)
    settings.LOADMASTER_SIM_SPOT_NOTICE_SECONDS = "30"
    assert SimulationConfig.from_settings(seed=3).spot_notice == 30.0
    assert cfg.ice_offerings == ("m5.large:us-east-1a:spot", "c5.*")
    assert cfg.demo_workloads is False and cfg.cluster_name == "prod" and cfg.seed == 3
    assert cfg.ice_matches("c5.xlarge", "us-east-1b", "on-demand")


def test_a_bad_setting_fails_the_system_check(settings: Any) -> None:
    from console.simulation.checks import simulation_settings

    assert simulation_settings() == []
    settings.LOADMASTER_SIM_ICE_RATE = "often"
    (error,) = simulation_settings()
    assert "LOADMASTER_SIM_ICE_RATE" in error.msg
    settings.LOADMASTER_SIM_ICE_RATE = "1.5"
    assert "probability" in simulation_settings()[0].msg
