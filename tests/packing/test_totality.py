"""The planner is total: every input the parsers accept gives a plan, never an exception.

Regressions of issue 14 item 15: a NodePool limit beyond int64 (memory: 1Ei is 1.15e21 milli-units) raised
OverflowError in a numpy int64 array on every provision tick; a pool whose preparation fails must be left
out with a reason while every other pool is still planned (Results.unusable_nodepools).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing.instancetype import InstanceType, Offering
from packing.nodepool import ExistingNodeSpec, NodePool
from packing.pods import Pod
from packing.requirements import Requirement, Requirements
from packing.resources import MAX_AMOUNT, Resources
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.verify import check_plan
from tests.engine_builders import CT, IT, ZONES, catalog, instance_type, pod, pool

EI_MILLI = 2**60 * 1000  # 1Ei of memory in milli-units


def _pods(n: int = 30, prefix: str = "p") -> list[Pod]:
    return [pod(f"{prefix}{i}", cpu=f"{250 + 50 * (i % 7)}m", memory=f"{1 + i % 5}Gi") for i in range(n)]


def _shape(res: Results) -> list[tuple[Any, ...]]:
    return [
        (c.name, c.nodepool, c.instance_type, c.zone, c.capacity_type, sorted(p.key for p in c.pods))
        for c in res.nodeclaims
    ]


def _placed(res: Results) -> list[str]:
    return [p.key for c in res.nodeclaims for p in c.pods] + [p.key for e in res.existing for p in e.pods]


def _assert_total(sched: Scheduler, pods: list[Pod], res: Results) -> None:
    placed = _placed(res)
    assert len(placed) == len(set(placed))
    assert set(placed) | set(res.unschedulable) == {p.key for p in pods}
    assert not set(placed) & set(res.unschedulable)
    assert all(res.unschedulable[k] for k in res.unschedulable)  # every unschedulable pod has a reason


@pytest.mark.parametrize(
    "limits",
    [
        {"memory": EI_MILLI},  # limits: {memory: 1Ei}
        {"memory": 8 * EI_MILLI},  # 8Ei
        {"cpu": 10**33},  # cpu: 1e30
        {"cpu": 2**63 - 1},
        {"cpu": 2**63},
        {"nodes": 2**64, "memory": 2**100},
    ],
)
def test_limits_beyond_int64_plan_as_non_binding_limits(limits: dict[str, int]) -> None:
    pods = _pods()
    huge = Scheduler([dataclasses.replace(pool("default"), limits=Resources(limits))], catalog())
    # the same keys at a value int64 holds and no plan reaches: the same plan, to the node
    within = {k: 2**62 for k in limits}
    ref = Scheduler([dataclasses.replace(pool("default"), limits=Resources(within))], catalog())
    got = huge.solve(pods, lower_bound=True)
    want = ref.solve(pods, lower_bound=True)
    assert not got.unschedulable
    assert _shape(got) == _shape(want)
    assert got.cost_per_hour == want.cost_per_hour
    assert got.unusable_nodepools == {}


def test_a_limit_still_binds_beside_a_huge_one() -> None:
    p = dataclasses.replace(pool("default"), limits=Resources({"memory": 8 * EI_MILLI, "cpu": 4000}))
    res = Scheduler([p], catalog()).solve(_pods())
    assert sum(c.allocatable.get("cpu", 0) for c in res.nodeclaims) <= 4000
    assert res.unschedulable and all("limit cpu=4" in r for rs in res.unschedulable.values() for _, r in rs)


def test_pool_no_type_satisfies_is_reported_and_the_other_pool_plans() -> None:
    bad = pool("bad", Requirement.new(IT, "In", ["no-such-type"]))
    bad = dataclasses.replace(bad, weight=50)  # tried first
    sched = Scheduler([bad, pool("good")], catalog())
    pods = _pods()
    res = sched.solve(pods, lower_bound=True)
    assert not res.unschedulable
    assert {c.nodepool for c in res.nodeclaims} == {"good"}
    assert list(res.unusable_nodepools) == ["bad"]
    assert "matches its requirements" in res.unusable_nodepools["bad"]
    assert res.lower_bound is not None and res.lower_bound > 0


def test_a_pool_that_fails_is_left_out_and_the_healthy_pool_plans(broken_pool: str) -> None:
    boom = dataclasses.replace(pool(broken_pool), weight=100)
    pods = _pods()
    want = Scheduler([pool("good")], catalog()).solve(pods, lower_bound=True)
    sched = Scheduler([boom, pool("good")], catalog())
    res = sched.solve(pods, lower_bound=True)
    assert _shape(res) == _shape(want) and not res.unschedulable
    assert res.lower_bound == want.lower_bound
    assert set(res.unusable_nodepools) == {"boom"}
    assert "OverflowError" in res.unusable_nodepools["boom"]
    assert sched.unusable_nodepools() == res.unusable_nodepools


def test_pods_only_the_broken_pool_could_take_say_why(broken_pool: str) -> None:
    taint_req = Requirement.new("karpenter.sh/nodepool", "In", ["boom"])
    lone = Pod("lone", requests=Resources.parse({"cpu": "1", "memory": "1Gi"}), required_terms=(Requirements([taint_req]),))
    res = Scheduler([pool("boom"), pool("good")], catalog()).solve([lone, *_pods(5)])
    reasons = dict(res.unschedulable["default/lone"])
    assert reasons["boom"].startswith("nodepool unusable: the engine could not prepare it (OverflowError")
    assert "good" in reasons
    assert len(res.unschedulable) == 1


def test_requests_beyond_the_engine_maximum_are_unschedulable_with_a_reason() -> None:
    big = Pod("big", requests=Resources({"cpu": 10**33, "memory": 1000, "pods": 1000}))
    res = Scheduler([pool("default")], catalog()).solve([big, *_pods(10)], lower_bound=True)
    assert list(res.unschedulable) == ["default/big"]
    (who, why), = res.unschedulable["default/big"]
    assert who == "" and "cpu=" in why and "beyond the largest amount" in why
    assert len(_placed(res)) == 10


def test_absurd_catalog_types_and_nodes_are_contained() -> None:
    absurd = InstanceType(
        "absurd", Resources({"cpu": 2**70, "memory": 8 * EI_MILLI, "pods": 110_000}), Resources(),
        {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}, (Offering(ZONES[0], "on-demand", 0.001),),
    )
    node = ExistingNodeSpec(
        "huge-node", {"karpenter.sh/nodepool": "default", "topology.kubernetes.io/zone": ZONES[0]},
        Resources({"cpu": 2**80, "memory": 2**90, "pods": 2**70}),
    )
    running = Pod("runner", requests=Resources({"cpu": 2**75, "pods": 1000}), node_name="huge-node")
    pods = _pods(20)
    sched = Scheduler([pool("default")], [*catalog(), absurd], [node], [running])
    res = sched.solve(pods, lower_bound=True)
    _assert_total(sched, pods, res)
    assert "absurd" not in {c.instance_type for c in res.nodeclaims}
    assert not res.unschedulable


def test_degenerate_inputs_never_raise() -> None:
    zero = instance_type("zero-1x", 0, 0, 0.01)
    pods = _pods(12)
    cases: list[tuple[list[NodePool], list[InstanceType]]] = [
        ([], catalog()),
        ([pool("default")], []),
        ([pool("default")], [zero]),
        ([dataclasses.replace(pool("default"), limits={"cpu": 0})], catalog()),
        ([dataclasses.replace(pool("default"), limits=Resources({"nodes": 1000}))], catalog()),
        ([pool("default", Requirement.new(CT, "In", ["reserved"]))], catalog()),
        ([pool("default", Requirement.new("topology.kubernetes.io/zone", "In", ["mars-1a"]))], catalog()),
    ]
    for pools, cat in cases:
        sched = Scheduler(pools, cat)
        res = sched.solve(pods, lower_bound=True)
        _assert_total(sched, pods, res)
        greedy = sched.solve(pods, strategy="greedy")
        _assert_total(sched, pods, greedy)


def test_a_zero_limit_given_as_a_mapping_launches_nothing() -> None:
    # Resources drops zero entries, so {cpu: 0} parsed into Resources means "no limit"; given as a plain
    # mapping the engine honours it (Karpenter: a limit of 0 allows no capacity)
    p = dataclasses.replace(pool("default"), limits={"cpu": 0})
    res = Scheduler([p], catalog()).solve(_pods(5))
    assert not res.nodeclaims and len(res.unschedulable) == 5


AMOUNTS = st.one_of(
    st.integers(0, 64_000),
    st.sampled_from([0, 1, 2**31, 2**53, MAX_AMOUNT, MAX_AMOUNT + 1, 2**63 - 1, 2**63, EI_MILLI, 10**33]),
)


@st.composite
def hostile_inputs(draw: st.DrawFn) -> tuple[list[NodePool], list[InstanceType], list[Pod]]:
    cat: list[InstanceType] = []
    for i in range(draw(st.integers(0, 4))):
        cap = {"cpu": draw(AMOUNTS), "memory": draw(AMOUNTS) * 2**20, "pods": draw(st.sampled_from([0, 110_000]))}
        offers = tuple(
            Offering(z, ct, draw(st.sampled_from([None, 0.0, 0.05, 1.0])), draw(st.booleans()))
            for z in ZONES[: draw(st.integers(0, 2))]
            for ct in ("on-demand", "spot")
        )
        cat.append(InstanceType(f"t{i}", Resources(cap), Resources(), {"kubernetes.io/os": "linux"}, offers))
    pools: list[NodePool] = []
    for j in range(draw(st.integers(0, 3))):
        reqs = draw(
            st.sampled_from(
                [
                    (),
                    (Requirement.new(IT, "In", ["t0"]),),
                    (Requirement.new(IT, "In", ["nope"]),),
                    (Requirement.new(CT, "In", ["spot"]),),
                    (Requirement.new("topology.kubernetes.io/zone", "NotIn", list(ZONES)),),
                ]
            )
        )
        limits: Any = draw(
            st.sampled_from([None, Resources({"cpu": EI_MILLI}), Resources({"memory": 2**63}), {"cpu": 0}])
        )
        pools.append(NodePool(f"pool{j}", Requirements(reqs), limits=limits, weight=draw(st.integers(0, 2))))
    pods = [
        Pod(f"q{k}", requests=Resources({"cpu": draw(AMOUNTS), "memory": draw(AMOUNTS), "pods": 1000}))
        for k in range(draw(st.integers(0, 12)))
    ]
    return pools, cat, pods


@given(hostile_inputs())
def test_plan_is_total_on_hostile_inputs(inputs: tuple[list[NodePool], list[InstanceType], list[Pod]]) -> None:
    pools, cat, pods = inputs
    sched = Scheduler(pools, cat)
    res = sched.solve(pods, lower_bound=True)
    _assert_total(sched, pods, res)
    assert check_plan(sched, pods, res) == []
