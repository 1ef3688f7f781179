"""Issue 16 items 7 and 10: NodePools of equal weight go by the cheaper plan (weights keep strict priority), and
small pod sets are packed exactly (packing.scheduling.exact)."""

from __future__ import annotations

from unittest import mock

from packing.nodepool import DaemonSet
from packing.pods import Pod
from packing.requirements import Requirement
from packing.resources import Resources
from packing.scheduling import exact
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.solve import Solve
from packing.scheduling.verify import check_plan
from tests.engine_builders import CT, instance_type, pod, pool

ARCH = "kubernetes.io/arch"


def _arch_catalog() -> list:  # type: ignore[type-arg]
    return [
        instance_type("m-4x", 4, 16, 0.20, spot_factor=None),
        instance_type("a-4x", 4, 16, 0.12, spot_factor=None, arch="arm64"),
    ]


def test_equal_weights_take_the_cheaper_arm64_pool() -> None:
    pools = [pool("a-amd64", Requirement.new(ARCH, "In", ["amd64"])), pool("b-arm64", Requirement.new(ARCH, "In", ["arm64"]))]
    s = Scheduler(pools, _arch_catalog())
    pods = [pod(f"p{i}", "3", "4Gi") for i in range(3)]
    r = s.solve(pods)
    assert {c.nodepool for c in r.nodeclaims} == {"b-arm64"}
    assert r.cost_per_hour == 3 * 0.12
    assert check_plan(s, pods, r) == []


def test_equal_weights_mix_pools_when_some_pods_need_the_dearer_one() -> None:
    pools = [pool("a-amd64", Requirement.new(ARCH, "In", ["amd64"])), pool("b-arm64", Requirement.new(ARCH, "In", ["arm64"]))]
    s = Scheduler(pools, _arch_catalog())
    pods = [pod("x86", "3", "4Gi", node_selector={ARCH: "amd64"}), pod("any", "3", "4Gi")]
    r = s.solve(pods)
    placed = {p.name: c.nodepool for c in r.nodeclaims for p in c.pods}
    assert placed == {"x86": "a-amd64", "any": "b-arm64"}


def test_equal_weights_take_the_cheaper_spot_only_pool() -> None:
    cat = [instance_type("m-4x", 4, 16, 0.20)]
    pools = [pool("a-on-demand", Requirement.new(CT, "In", ["on-demand"])), pool("b-spot", Requirement.new(CT, "In", ["spot"]))]
    r = Scheduler(pools, cat).solve([pod("p", "3", "4Gi")])
    assert [(c.nodepool, c.capacity_type) for c in r.nodeclaims] == [("b-spot", "spot")]


def test_a_heavier_pool_is_used_even_when_dearer() -> None:
    pools = [
        pool("a-amd64", Requirement.new(ARCH, "In", ["amd64"]), weight=10),
        pool("b-arm64", Requirement.new(ARCH, "In", ["arm64"])),
    ]
    r = Scheduler(pools, _arch_catalog()).solve([pod("p", "3", "4Gi")])
    assert [c.nodepool for c in r.nodeclaims] == ["a-amd64"]


def test_equal_weights_and_equal_cost_keep_name_order() -> None:
    cat = [instance_type("m-4x", 4, 16, 0.20, spot_factor=None)]
    r = Scheduler([pool("b"), pool("a")], cat).solve([pod("p", "3", "4Gi")])
    assert [c.nodepool for c in r.nodeclaims] == ["a"]


def _linear_family() -> list:  # type: ignore[type-arg]
    return [
        instance_type(f"t{n}", n, 2 * n, 0.05 * n, spot_factor=None, overhead=Resources()) for n in (1, 2, 4, 8)
    ]


def _five_pods() -> list[Pod]:
    shapes = [("1200m", "512Mi"), ("1500m", "1Gi"), ("1500m", "1Gi"), ("900m", "1Gi"), ("900m", "2Gi")]
    return [pod(f"p{i}", c, m) for i, (c, m) in enumerate(shapes)]


def test_small_set_gets_the_optimal_packing() -> None:
    s = Scheduler([pool("default")], _linear_family())
    pods = _five_pods()
    with mock.patch.object(exact, "MAX_PODS", 0):
        heuristic = s.solve(pods)
    r = s.solve(pods)
    assert heuristic.cost_per_hour > 0.35 + 1e-9  # what the bulk packer alone finds
    assert abs(r.cost_per_hour - 0.35) < 1e-9
    assert check_plan(s, pods, r) == []
    assert sorted(c.name for c in r.nodeclaims) == [f"default-{i}" for i in range(1, len(r.nodeclaims) + 1)]


def test_small_set_with_daemonset_overhead() -> None:
    ds = DaemonSet("kube-system", "agent", Pod("agent", requests=Resources.parse({"cpu": "200m", "memory": "512Mi", "pods": "1"})))
    s = Scheduler([pool("default")], _linear_family(), daemonsets=[ds])
    shapes = [("700m", "3000Mi"), ("900m", "256Mi"), ("700m", "3000Mi"), ("1800m", "2Gi"), ("700m", "256Mi")]
    pods = [pod(f"p{i}", c, m) for i, (c, m) in enumerate(shapes + [("500m", "512Mi")])]
    with mock.patch.object(exact, "MAX_PODS", 0):
        heuristic = s.solve(pods)
    r = s.solve(pods)
    assert check_plan(s, pods, r) == []
    assert heuristic.cost_per_hour > 0.30 + 1e-9
    assert r.cost_per_hour <= 0.30 + 1e-9
    for c in r.nodeclaims:  # every node keeps room for the DaemonSet
        assert c.requests["cpu"] >= 200 + sum(p.requests["cpu"] for p in c.pods)


def test_pools_with_limits_keep_the_heuristic_plan() -> None:
    limited = pool("default", limits=Resources.parse({"cpu": "100"}))
    s = Scheduler([limited], _linear_family())
    pods = _five_pods()
    with mock.patch.object(exact, "MAX_PODS", 0):
        heuristic = s.solve(pods)
    r = s.solve(pods)
    assert r.cost_per_hour == heuristic.cost_per_hour


def test_greedy_strategy_is_not_repacked() -> None:
    s = Scheduler([pool("default")], _linear_family())
    pods = _five_pods()
    sv = Solve(s, pods, frozenset(), greedy=True)
    assert s.solve(pods, strategy="greedy").cost_per_hour == sv.run(False).cost_per_hour
