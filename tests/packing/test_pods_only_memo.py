"""Remembered pods-only solves (packing.scheduling.podsonly) give what the solve gives, for other pods of the same
shapes, and are asked again across consolidate runs that share a TableCache."""

from __future__ import annotations

import random
from typing import Any

import pytest

from packing.pods import Pod
from packing.scheduling.podsonly import PodsOnlySolves, pods_only
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler
from tests.engine_builders import catalog, mixed_capacity_pool, on_demand_pool, pod, req

SHAPES: list[dict[str, Any]] = [
    {"cpu": "500m", "memory": "1Gi"},
    {"cpu": "1", "memory": "2Gi"},
    {"cpu": "3", "memory": "6Gi"},
    {"cpu": "7", "memory": "60Gi"},
    {"cpu": "1", "memory": "2Gi", "node_selector": {"kubernetes.io/arch": "arm64"}},
    {"cpu": "2", "memory": "4Gi", "extra": {"nvidia.com/gpu": "1"}},
    {"cpu": "1", "memory": "1Gi", "required_terms": (req("karpenter.sh/capacity-type", "In", "spot"),)},
    {"cpu": "900", "memory": "1Gi"},  # fits no type: unschedulable, with reasons that name no pod
]


def shaped(shape: dict[str, Any], name: str) -> Pod:
    kw = {k: v for k, v in shape.items() if k not in ("cpu", "memory")}
    return pod(name, shape["cpu"], shape["memory"], **kw)


def summary(res: Results) -> tuple[object, ...]:
    return (
        [(c.name, c.nodepool, c.instance_type, c.zone, c.capacity_type, c.price_per_hour, c.instance_type_options,
          c.labels, c.requests, c.allocatable, [p.key for p in c.pods]) for c in res.nodeclaims],
        [e.name for e in res.existing],
        {k: [(r.nodepool, r.text) for r in why] for k, why in res.unschedulable_reasons.items()},
        res.pending,
        res.unusable_nodepools,
    )


@pytest.mark.parametrize("strategy", ["cost", "greedy"])
def test_a_remembered_answer_is_the_solve_s_for_other_pods_of_the_same_shapes(strategy: str) -> None:
    sched = Scheduler([mixed_capacity_pool(), on_demand_pool("od")], catalog())
    assert pods_only(sched)
    memo = PodsOnlySolves()
    rng = random.Random(7)
    questions = [[rng.randrange(len(SHAPES)) for _ in range(rng.randrange(1, 7))] for _ in range(12)]
    serial = 0
    for round_ in range(3):
        for q in questions:
            # new names each round, in a random name order: ties between equal pods break by name
            names = [f"w{round_}-{rng.randrange(1000):03d}-{serial + i}" for i in range(len(q))]
            serial += len(q)
            pods = [shaped(SHAPES[s], n) for s, n in zip(q, names, strict=True)]
            got = memo.solve(sched, pods, strategy)
            assert summary(got) == summary(sched.solve(pods, strategy=strategy))
            assert {id(p) for c in got.nodeclaims for p in c.pods} <= {id(p) for p in pods}
    assert memo.hits > 0 and memo.misses >= len({tuple(q) for q in questions})


def test_a_caller_changing_an_answer_does_not_change_the_next_one() -> None:
    sched = Scheduler([mixed_capacity_pool()], catalog())
    memo = PodsOnlySolves()
    first = memo.solve(sched, [pod("a", "1"), pod("b", "2")], "cost")
    want = summary(sched.solve([pod("c", "1"), pod("d", "2")]))
    for c in first.nodeclaims:
        c.labels["changed"] = "yes"
        c.pods.clear()
        c.instance_type_options.clear()
    again = memo.solve(sched, [pod("c", "1"), pod("d", "2")], "cost")
    assert memo.hits == 1 and summary(again) == want
    for c in again.nodeclaims:
        c.labels["changed"] = "again"
    assert summary(memo.solve(sched, [pod("c", "1"), pod("d", "2")], "cost")) == want


def test_pods_with_repeated_keys_or_topology_rules_are_solved_every_time() -> None:
    from tests.engine_builders import spread

    sched = Scheduler([mixed_capacity_pool()], catalog())
    memo = PodsOnlySolves()
    twice = [pod("a", "1"), pod("a", "1")]
    memo.solve(sched, twice, "cost")
    memo.solve(sched, twice, "cost")
    spreading = [pod("s", "1", spread=(spread("topology.kubernetes.io/zone", app="x"),), labels={"app": "x"})]
    memo.solve(sched, spreading, "cost")
    memo.solve(sched, spreading, "cost")
    assert memo.hits == 0 and memo.misses == 0


def test_consolidate_remembering_pods_only_solves_decides_as_without() -> None:
    """A consolidate run over a benchmark cluster, with a TableCache (remembered solves asked again in the next
    run) and without: the same actions, moves and replacements."""
    from packing.bench.catalogs import bench_catalog
    from packing.bench.consolidate import AT, build
    from packing.disruption import consolidate
    from packing.disruption.model import Report
    from packing.scheduling.tablecache import TableCache

    bc = build(bench_catalog()[0], 300, seed=3, protected=False, pool_kind="full")
    tables = TableCache()

    def decided(r: Report) -> list[object]:
        return [(a.method, a.reason, a.type, sorted(a.nodes), a.moves, a.replacements, a.savings_per_hour)
                for a in r.actions]

    plain = decided(consolidate(bc.cluster, AT))
    assert plain
    assert decided(consolidate(bc.cluster, AT, tables=tables)) == plain
    memo = next(v for (kind, _, _), (_, v) in tables._tables.items() if kind == "pods-only solves")
    asked = memo.hits + memo.misses
    assert decided(consolidate(bc.cluster, AT, tables=tables)) == plain
    assert asked > 0 and memo.hits + memo.misses > asked and memo.hits > 0


def test_answers_under_limits_with_stand_ins_are_remembered_and_the_solve_s() -> None:
    """A pool near its limits: the simulation shows the Scheduler one stand-in per limited pool holding what the
    other nodes count toward them; the answer (stand-ins' empty placements included) is remembered and right."""
    from packing.resources import Resources
    from packing.scheduling.compact import limit_stand_in

    capped = mixed_capacity_pool("capped", limits=Resources.parse({"cpu": "24"}), weight=10)
    sched = Scheduler([capped, on_demand_pool("od")], catalog())
    sched.existing_nodes = [limit_stand_in("capped", Resources.parse({"cpu": "16", "memory": "64Gi"}))]
    assert pods_only(sched)
    memo = PodsOnlySolves()
    for round_ in range(3):
        pods = [pod(f"r{round_}-{i}", cpu) for i, cpu in enumerate(["3", "3", "2", "500m"])]
        got = memo.solve(sched, pods, "cost")
        want = sched.solve(pods)
        assert summary(got) == summary(want)
        assert [(e.name, e.kind, e.pods, e.price_per_hour) for e in got.existing] == \
            [(e.name, e.kind, e.pods, e.price_per_hour) for e in want.existing]
        assert {c.nodepool for c in got.nodeclaims} == {"capped", "od"}  # the limit bound: both pools launch
    assert memo.hits == 2
