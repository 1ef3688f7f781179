"""SimulatedCloud: launches shaped like the AWS backend's (cheapest option, tags, adoption, capacity
errors), termination, the interruption queue, and the instance lifecycle the tick drives."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from console.backends.aws import launch_with_fallback
from console.backends.base import (
    TAG_CLUSTER,
    TAG_NODECLAIM,
    TAG_NODECLASS,
    TAG_NODEPOOL,
    UNREGISTERED_TAINT_KEY,
    LaunchError,
    LaunchOption,
)
from console.simulation import services
from console.simulation.cloud import SimulatedCloud
from console.simulation.cluster import SimulatedCluster
from console.simulation.config import SimulationConfig
from tests.simulation.conftest import (
    C6I_SPOT_A,
    M6I_OD_A,
    M6I_SPOT_A,
    M6I_SPOT_B,
    Clock,
    Ticker,
    names,
    pod,
    request,
)


def test_launch_picks_the_cheapest_option_and_tags_like_aws(cloud: SimulatedCloud, world: Clock) -> None:
    instance = cloud.launch(request("default-a1", M6I_OD_A, M6I_SPOT_B, C6I_SPOT_A, M6I_SPOT_A))
    assert (instance.instance_type, instance.zone, instance.capacity_type) == ("c6i.xlarge", "us-east-1a", "spot")
    assert instance.price == C6I_SPOT_A.price
    assert instance.state == "pending" and instance.launch_time == world.now
    assert instance.instance_id.startswith("i-0") and len(instance.instance_id) == 19
    assert instance.provider_id == f"aws:///us-east-1a/{instance.instance_id}"
    assert instance.tags == {"team": "platform", TAG_CLUSTER: "test", TAG_NODECLASS: "default",
                             "kubernetes.io/cluster/test": "owned", TAG_NODEPOOL: "default", TAG_NODECLAIM: "default-a1"}
    assert [i.instance_id for i in cloud.list_instances("test")] == [instance.instance_id]
    assert cloud.list_instances("another-cluster") == []


def test_launch_is_idempotent_per_nodeclaim(cloud: SimulatedCloud, config: SimulationConfig, world: Clock) -> None:
    first = cloud.launch(request("default-a1", M6I_SPOT_A))
    # A retry, or another worker, or a new process after a crash: the claim's instance is adopted.
    again = SimulatedCloud(config, clock=world).launch(request("default-a1", M6I_SPOT_B, M6I_SPOT_A))
    assert again.instance_id == first.instance_id and again.price == M6I_SPOT_A.price
    assert len(cloud.list_instances("test")) == 1
    other = cloud.launch(request("default-b2", M6I_SPOT_A))
    assert other.instance_id != first.instance_id
    # Once the claim's instance is terminating, a launch for the claim is a new instance.
    cloud.terminate([first.instance_id])
    assert cloud.launch(request("default-a1", M6I_SPOT_A)).instance_id not in (first.instance_id, other.instance_id)


def test_launch_errors(cloud: SimulatedCloud) -> None:
    with pytest.raises(LaunchError, match="no launch options"):
        cloud.launch(request("c1"))
    with pytest.raises(LaunchError, match="no known instance type") as e:
        cloud.launch(request("c1", LaunchOption("x9.huge", "us-east-1a", "spot", 0.01)))
    assert e.value.unavailable == [] and not e.value.retryable


def test_named_offerings_have_no_capacity(world: Clock, config: SimulationConfig) -> None:
    cloud = SimulatedCloud(config.with_(ice_offerings=("c6i.xlarge:us-east-1a:spot",)), clock=world)
    # The cheapest has no capacity: the next spot option launches (as CreateFleet tries the others).
    assert cloud.launch(request("c1", C6I_SPOT_A, M6I_SPOT_A, M6I_OD_A)).instance_type == "m6i.xlarge"
    # Every spot offering refused: a LaunchError naming them, and the fallback moves on to on-demand.
    spotless = SimulatedCloud(config.with_(ice_offerings=("*:*:spot",)), clock=world)
    with pytest.raises(LaunchError) as e:
        spotless.launch(request("c2", C6I_SPOT_A, M6I_SPOT_A, M6I_OD_A))
    assert e.value.unavailable == [C6I_SPOT_A, M6I_SPOT_A] and not e.value.retryable
    marked: list[LaunchOption] = []
    instance = launch_with_fallback(spotless, request("c2", C6I_SPOT_A, M6I_SPOT_A, M6I_OD_A), marked.extend)
    assert instance.capacity_type == "on-demand" and marked == [C6I_SPOT_A, M6I_SPOT_A]
    # A bare type name covers all its offerings.
    assert config.with_(ice_offerings=("m6i.xlarge",)).ice_matches("m6i.xlarge", "us-east-1a", "on-demand")


def test_capacity_errors_injected_at_run_time(world: Clock, config: SimulationConfig) -> None:
    services.ice_offerings_set(["c6i.*:*:spot"])
    cloud = SimulatedCloud(config, clock=world)
    assert cloud.launch(request("c1", C6I_SPOT_A, M6I_SPOT_A)).instance_type == "m6i.xlarge"
    out = StringIO()
    call_command("simulation", "ice", stdout=out)              # no patterns: cleared
    assert "nothing injected" in out.getvalue()
    assert cloud.launch(request("c2", C6I_SPOT_A, M6I_SPOT_A)).instance_type == "c6i.xlarge"


def test_an_ice_rate_refuses_offerings_deterministically(world: Clock, config: SimulationConfig) -> None:
    always = SimulatedCloud(config.with_(ice_rate=1.0), clock=world)
    with pytest.raises(LaunchError) as e:
        always.launch(request("c1", M6I_SPOT_A, M6I_SPOT_B))
    assert e.value.unavailable == [M6I_SPOT_A, M6I_SPOT_B]

    def outcomes() -> list[str]:
        flaky = SimulatedCloud(config.with_(ice_rate=0.5), clock=world)
        out = []
        for i in range(12):
            try:
                out.append(flaky.launch(request(f"r{i}", M6I_SPOT_A, M6I_SPOT_B)).zone)
            except LaunchError:
                out.append("ice")
        return out

    first = outcomes()
    services.simulation_reset(seed=config.seed, now=world(), config=config)
    assert outcomes() == first                  # same seed, same capacity weather
    assert {"ice", "us-east-1a", "us-east-1b"} <= set(first)


def test_terminate_describe_and_list(cloud: SimulatedCloud, tick: Ticker) -> None:
    a = cloud.launch(request("a", M6I_SPOT_A))
    b = cloud.launch(request("b", M6I_SPOT_A))
    cloud.terminate([a.instance_id, "i-0000000000000dead"])          # unknown ids are skipped
    cloud.terminate([a.instance_id])                                  # and repeats are harmless
    assert {i.instance_id: i.state for i in cloud.describe([a.instance_id, b.instance_id, "i-0nope"])} == {
        a.instance_id: "shutting-down", b.instance_id: "pending"}
    assert {i.instance_id for i in cloud.list_instances("test")} == {a.instance_id, b.instance_id}
    report = tick(10)
    assert report.terminated == [a.instance_id]
    assert [i.state for i in cloud.describe([a.instance_id])] == ["terminated"]
    assert [i.instance_id for i in cloud.list_instances("test")] == [b.instance_id]
    tick(3600 + 1)                                                    # EC2 forgets terminated instances
    assert cloud.describe([a.instance_id]) == []


def test_instances_register_as_nodes_after_a_delay(cloud: SimulatedCloud, cluster: SimulatedCluster,
                                                   tick: Ticker) -> None:
    instance = cloud.launch(request("default-a1", M6I_SPOT_A))
    assert tick(14).started == []
    assert tick(1).started == [instance.instance_id]
    assert cloud.describe([instance.instance_id])[0].state == "running"
    assert tick(29).registered == [] and cluster.node_by_provider_id(instance.provider_id) is None
    report = tick(1)
    node = cluster.node_by_provider_id(instance.provider_id)
    assert node is not None and report.registered == [node["metadata"]["name"]]
    assert node["spec"]["providerID"] == f"aws:///us-east-1a/{instance.instance_id}"
    assert node["spec"]["taints"] == [{"key": UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}]
    labels = node["metadata"]["labels"]
    assert labels["node.kubernetes.io/instance-type"] == "m6i.xlarge"
    assert labels["topology.kubernetes.io/zone"] == "us-east-1a"
    assert labels["karpenter.sh/capacity-type"] == "spot"
    assert labels["karpenter.sh/nodepool"] == "default"
    assert labels["karpenter.k8s.aws/instance-family"] == "m6i"       # the catalog's labels
    assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
    assert node["status"]["capacity"]["cpu"] == "4" and node["status"]["allocatable"]["cpu"] == "3920m"
    assert tick(60).registered == []                                  # once only


def test_spot_interruption_warns_then_reclaims(cloud: SimulatedCloud, cluster: SimulatedCluster,
                                               tick: Ticker, config: SimulationConfig) -> None:
    instance = cloud.launch(request("default-a1", M6I_SPOT_A))
    tick(45)
    node = cluster.node_by_provider_id(instance.provider_id)
    assert node is not None
    name = node["metadata"]["name"]
    cluster.register_node(name, labels={}, taints=[])
    cluster.mark_initialized(name)
    cluster.apply(pod("web-x1", owner="ReplicaSet/web-1a2", labels={"app": "web"}))
    assert tick().bound == ["default/web-x1"]

    assert cloud.interrupt(instance.instance_id)
    report = tick(1)
    assert report.interrupted == [instance.instance_id]
    (event,) = cloud.poll_events()
    notice = 120 / config.compression                                  # the 2 minutes, compressed
    assert event.kind == "spot_interruption" and event.instance_id == instance.instance_id
    assert event.detail["deadline"] == tick.clock.now + timedelta(seconds=notice)
    assert event.detail["detail-type"] == "EC2 Spot Instance Interruption Warning"
    assert event.detail["instance-action"] == "terminate"
    cloud.ack(event)
    assert cloud.poll_events() == []
    assert not cloud.interrupt(instance.instance_id)                    # one notice per instance

    assert tick(notice - 1).reclaimed == []
    assert cloud.describe([instance.instance_id])[0].state == "running"
    report = tick(1)
    assert report.reclaimed == [instance.instance_id] and report.nodes_removed == [name]
    assert cloud.describe([instance.instance_id])[0].state == "terminated"
    with pytest.raises(Exception, match=name):
        cluster.get_node(name)
    (change,) = cloud.poll_events()
    assert change.kind == "state_change" and change.detail["state"] == "terminated"
    # The pod came back pending (its ReplicaSet replaced it) and nothing can take it.
    assert [p["metadata"]["name"].startswith("web-1a2-") for p in cluster.pending_pods()] == [True]


def test_unacked_events_come_back_after_the_visibility_timeout(cloud: SimulatedCloud, tick: Ticker) -> None:
    instance = cloud.launch(request("a", M6I_SPOT_A))
    tick(20)
    cloud.interrupt(instance.instance_id)
    tick(1)
    (first,) = cloud.poll_events()
    assert cloud.poll_events() == []                   # hidden while someone handles it
    tick.clock.advance(31)
    (again,) = cloud.poll_events()                      # the handler died: it comes back
    assert again.receipt == first.receipt
    cloud.ack(again)
    tick.clock.advance(31)
    assert cloud.poll_events() == []


def test_interruptions_arrive_at_the_configured_rate(world: Clock, config: SimulationConfig, tick: Ticker) -> None:
    # 2 per spot instance per simulated hour, an hour being 150 s here: about 13 warnings for 10 spot
    # instances in 100 s, none for on-demand ones.
    cfg = config.with_(spot_interruptions_per_hour=2.0)
    cloud = SimulatedCloud(cfg, clock=world)
    spot = [cloud.launch(request(f"s{i}", M6I_SPOT_A)).instance_id for i in range(10)]
    on_demand = [cloud.launch(request(f"o{i}", M6I_OD_A)).instance_id for i in range(5)]
    warned: list[str] = []
    for _ in range(100):
        warned += tick(1).interrupted
    assert warned and set(warned) <= set(spot) and not set(warned) & set(on_demand)
    kinds = {e.kind for e in cloud.poll_events(100)}
    assert "spot_interruption" in kinds and "state_change" in kinds


def test_state_changes_stop_instances_out_of_band(world: Clock, config: SimulationConfig, tick: Ticker) -> None:
    cloud = SimulatedCloud(config.with_(state_changes_per_hour=100.0), clock=world)
    instance = cloud.launch(request("a", M6I_OD_A))
    stopped: list[str] = []
    for _ in range(20):
        stopped += tick(5).stopped
    assert stopped == [instance.instance_id]
    assert cloud.describe(stopped)[0].state == "stopped"
    assert [e.detail["state"] for e in cloud.poll_events()] == ["stopped"]
    cloud.terminate(stopped)                            # GC's answer: terminate it
    tick(10)
    assert cloud.list_instances("test") == []


def test_state_survives_a_fresh_object(cloud: SimulatedCloud, world: Clock, config: SimulationConfig) -> None:
    instance = cloud.launch(request("a", M6I_SPOT_A))
    SimulatedCluster(clock=world).apply(pod("p"))
    fresh_cloud, fresh_cluster = SimulatedCloud(config, clock=world), SimulatedCluster(clock=world)
    assert [i.instance_id for i in fresh_cloud.list_instances("test")] == [instance.instance_id]
    assert names(fresh_cluster.list_pods()[0]) == ["p"]
