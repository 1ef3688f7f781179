"""Consolidation is total: one bad NodePool never stops the run for the others, and every node is either in an
action or has a not-disrupted reason.

Regressions of issue 14 item 15: a NodePool no instance type can satisfy made the run raise `ValueError:
attempt to get argmin of an empty sequence` (in _precheck_many); a limit beyond int64 raised OverflowError;
a pool whose preparation fails must be left out with a reason (Report.unusable_nodepools).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing.disruption import Cluster, consolidate
from packing.disruption.model import Report
from packing.disruption.output import render_json
from packing.instancetype import InstanceType, Offering
from packing.requirements import Requirement, Requirements
from packing.resources import Resources
from tests.engine_builders import (
    AT,
    IT,
    TWO_ZONES,
    bound_pod,
    cluster,
    mixed_capacity_pool,
    node,
    pod,
    small_catalog,
)

EI_MILLI = 2**60 * 1000


def _fragmented(pool_name: str, n: int = 4) -> tuple[list[Any], list[Any]]:
    """n half-empty 8-cpu nodes of one pool: consolidation merges them."""
    big = next(t for t in small_catalog() if t.name == "m-8x")
    nodes = [node(f"{pool_name}-n{i}", big, pool_name=pool_name) for i in range(n)]
    pods = [bound_pod(f"{pool_name}-p{i}", nd.name, cpu="1500m", memory="2Gi") for i, nd in enumerate(nodes)]
    return nodes, pods


def _actions(r: Report) -> list[tuple[Any, ...]]:
    return [(a.type, a.reason, tuple(a.nodes), round(a.savings_per_hour, 6), tuple(sorted(a.moves.items()))) for a in r.actions]


def _assert_total(c: Cluster, r: Report) -> None:
    acted = [n for a in r.actions for n in a.nodes]
    spared = [x.node for x in r.not_disrupted]
    assert sorted(acted + spared) == sorted(n.name for n in c.nodes)
    assert all(x.reason for x in r.not_disrupted)


def test_only_pool_no_type_satisfies_does_not_raise() -> None:
    bad = mixed_capacity_pool("bad", Requirement.new(IT, "In", ["no-such-type"]))
    nodes, pods = _fragmented("bad", 3)
    c = cluster(nodes, pods, pools=[bad])
    r = consolidate(c, AT)
    _assert_total(c, r)
    assert list(r.unusable_nodepools) == ["bad"]
    assert "matches its requirements" in r.unusable_nodepools["bad"]
    assert render_json(r)["unusable_nodepools"] == r.unusable_nodepools


def test_unsatisfiable_pool_beside_a_healthy_one_changes_nothing_for_it() -> None:
    nodes, pods = _fragmented("default")
    want = consolidate(cluster(nodes, pods, pools=[mixed_capacity_pool("default")]), AT)
    bad = dataclasses.replace(mixed_capacity_pool("bad", Requirement.new(IT, "In", ["no-such-type"])), weight=100)
    c = cluster(nodes, pods, pools=[bad, mixed_capacity_pool("default")])
    got = consolidate(c, AT)
    assert want.actions and _actions(got) == _actions(want)
    assert list(got.unusable_nodepools) == ["bad"]
    assert want.unusable_nodepools == {} and set(render_json(want)) == {"actions", "not_disrupted", "summary"}


def test_a_pool_that_fails_is_left_out_and_the_healthy_pool_consolidates(broken_pool: str) -> None:
    nodes, pods = _fragmented("default")
    want = consolidate(cluster(nodes, pods, pools=[mixed_capacity_pool("default")]), AT)
    boom = dataclasses.replace(mixed_capacity_pool(broken_pool), weight=100)  # tried first for every replacement
    got = consolidate(cluster(nodes, pods, pools=[boom, mixed_capacity_pool("default")]), AT)
    assert want.actions and _actions(got) == _actions(want)
    assert set(got.unusable_nodepools) == {"boom"} and "OverflowError" in got.unusable_nodepools["boom"]


def test_the_broken_pools_own_nodes_get_actions_or_reasons(broken_pool: str) -> None:
    nodes, pods = _fragmented("default")
    boom_nodes, boom_pods = _fragmented(broken_pool, 2)
    c = cluster([*nodes, *boom_nodes], [*pods, *boom_pods], pools=[mixed_capacity_pool(broken_pool), mixed_capacity_pool("default")])
    got = consolidate(c, AT)
    _assert_total(c, got)
    assert any(n.startswith("default-") for a in got.actions for n in a.nodes)
    assert set(got.unusable_nodepools) == {"boom"}


@pytest.mark.parametrize("limits", [{"memory": EI_MILLI}, {"memory": 8 * EI_MILLI}, {"cpu": 10**33}, {"cpu": 2**63 - 1}])
def test_limits_beyond_int64_consolidate_as_non_binding_ones(limits: dict[str, int]) -> None:
    nodes, pods = _fragmented("default")
    huge = dataclasses.replace(mixed_capacity_pool("default"), limits=Resources(limits))
    within = dataclasses.replace(mixed_capacity_pool("default"), limits=Resources({k: 2**62 for k in limits}))
    got = consolidate(cluster(nodes, pods, pools=[huge]), AT)
    want = consolidate(cluster(nodes, pods, pools=[within]), AT)
    assert got.actions and _actions(got) == _actions(want)


def test_degenerate_clusters_never_raise() -> None:
    nodes, pods = _fragmented("default")
    zero = InstanceType("zero-1x", Resources(), Resources(), {"kubernetes.io/os": "linux"}, (Offering(TWO_ZONES[0], "on-demand", 0.01),))
    absurd = InstanceType(
        "absurd", Resources({"cpu": 2**70, "memory": 8 * EI_MILLI, "pods": 2**64}), Resources(),
        {"kubernetes.io/os": "linux"}, (Offering(TWO_ZONES[0], "on-demand", 0.001),),
    )
    huge_pod = bound_pod("huge", "default-n0", cpu="1")
    huge_pod = dataclasses.replace(huge_pod, requests=Resources({"cpu": 10**33, "pods": 1000}))
    cases = [
        cluster(nodes, pods, pools=[mixed_capacity_pool("default")], cat=[]),
        cluster(nodes, pods, pools=[mixed_capacity_pool("default")], cat=[zero]),
        cluster(nodes, pods, pools=[mixed_capacity_pool("default")], cat=[*small_catalog(), absurd]),
        cluster(nodes, pods, pools=[]),
        cluster(nodes, [*pods, huge_pod], pools=[mixed_capacity_pool("default")]),
        cluster(nodes, pods, pools=[dataclasses.replace(mixed_capacity_pool("default"), limits={"cpu": 0})]),
        cluster(nodes, pods, pools=[mixed_capacity_pool("default", Requirement.new("topology.kubernetes.io/zone", "In", ["mars-1a"]))]),
        cluster([], [], pools=[mixed_capacity_pool("default")]),
    ]
    for c in cases:
        _assert_total(c, consolidate(c, AT))


@st.composite
def hostile_clusters(draw: st.DrawFn) -> Cluster:
    cat = [t for t in small_catalog() if draw(st.booleans())]
    reqs = st.sampled_from(
        [
            (),
            (Requirement.new(IT, "In", ["no-such-type"]),),
            (Requirement.new(IT, "In", ["c-2x", "m-4x"]),),
            (Requirement.new("karpenter.sh/capacity-type", "In", ["spot"]),),
        ]
    )
    limits = st.sampled_from([None, Resources({"memory": 8 * EI_MILLI}), Resources({"cpu": 4000}), {"cpu": 0}])
    pools = [
        dataclasses.replace(mixed_capacity_pool(f"pool{j}", *draw(reqs)), limits=draw(limits))
        for j in range(draw(st.integers(0, 3)))
    ]
    types = small_catalog()
    nodes = []
    pods = []
    for i in range(draw(st.integers(0, 6))):
        t = draw(st.sampled_from(types))
        owner = draw(st.sampled_from([p.name for p in pools] + ["gone", ""]))
        nodes.append(node(f"n{i}", t, pool_name=owner or None))
        for k in range(draw(st.integers(0, 3))):
            cpu = draw(st.sampled_from(["100m", "500m", "1", "3"]))
            pods.append(bound_pod(f"n{i}-p{k}", f"n{i}", cpu=cpu, memory="1Gi"))
    pods += [pod(f"pending-{k}", cpu="500m") for k in range(draw(st.integers(0, 2)))]
    return cluster(nodes, pods, pools=pools, cat=cat)


@given(hostile_clusters())
def test_consolidate_is_total_on_hostile_clusters(c: Cluster) -> None:
    _assert_total(c, consolidate(c, AT))


def test_pool_requirements_in_helpers_are_what_the_tests_assume() -> None:
    assert Requirements([Requirement.new(IT, "In", ["no-such-type"])])
