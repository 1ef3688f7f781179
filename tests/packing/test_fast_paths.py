"""The shortcuts behind the 10,000-pod solve keep every guarantee of the slow paths they replace.

- the type-mix LP is solved over each pod cell's cheapest types only, and must reach the full LP's optimum;
- bulk packing builds claims from per-bin numpy sums and cached option tables;
- each claim's alternatives are listed a block of types at a time;
- a claim finalizes on the first fitting type of a ranked table instead of a loop over every type;
- the garbage collector is paused for a solve and restored after it.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing.nodepool import NodePool
from packing.pods import Pod
from packing.resources import Resources
from packing.scheduling import packer, solve, typemix
from packing.scheduling.packer import bin_totals, cheapest_fitting, pack
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.verify import check_plan
from tests.engine_builders import catalog, instance_type, on_demand_pool, pod

GIB = 2**30 * 1000  # memory in milli-bytes, as the engine counts it


def _synthetic_types(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n node types with cpu:memory ratios 1:2..1:8 and $/cpu that varies by size and family (non-linear)."""
    cpu = rng.choice([2, 4, 8, 16, 32, 48, 64, 96], size=n)
    ratio = rng.choice([2, 4, 8], size=n)
    per_cpu = np.where(ratio == 2, 0.042, np.where(ratio == 4, 0.048, 0.063)) * rng.uniform(0.85, 1.25, n)
    allocs = np.stack([cpu * 1000 - 100, cpu * ratio * GIB - GIB // 2, np.full(n, 110_000)], axis=1)
    return allocs.astype(np.int64), np.round(cpu * per_cpu, 5)


def _random_pods(rng: np.random.Generator, n: int, allocs: np.ndarray) -> np.ndarray:
    pods = np.stack(
        [rng.integers(1, 80, n) * 100, rng.integers(1, 256, n) * 128 * 2**20 * 1000, np.full(n, 1000)], axis=1
    ).astype(np.int64)
    return pods[(pods[:, None, :] <= allocs[None, :, :]).all(axis=2).any(axis=1)]


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_type_mix_lp_over_each_cells_cheapest_types_reaches_the_full_optimum(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(seed)
    allocs, price = _synthetic_types(rng, 40)
    pods = _random_pods(rng, 600, allocs)
    optima: list[float] = []
    solve_mix: Callable[..., Any] = typemix._solve_mix

    def recording(*args: Any) -> Any:
        out = solve_mix(*args)
        assert out is not None
        optima.append(out[3])
        return out

    monkeypatch.setattr(typemix, "_solve_mix", recording)
    restricted = typemix.assign_by_lp(pods, allocs, price, (1.5,))
    full = typemix.assign_by_lp(pods, allocs, price, (1.5,), first_types=len(price))
    assert restricted is not None and full is not None
    assert len(optima) == 2
    assert optima[0] == pytest.approx(optima[1], rel=1e-6)
    # and every pod is sent to a type it fits in
    assert bool((pods <= allocs[restricted]).all())


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(8, 150), st.integers(2, 12))
def test_lp_guided_packing_never_overcommits_and_places_every_pod_once(
    seed: int, n: int, n_types: int
) -> None:
    rng = np.random.default_rng(seed)
    allocs, price = _synthetic_types(rng, n_types)
    pods = _random_pods(rng, n, allocs)
    bins = pack(pods, allocs, price.tolist())
    assert sorted(i for b in bins for i in b.pods) == list(range(len(pods)))
    for b in bins:
        assert b.pods and bool((pods[list(b.pods)].sum(axis=0) <= allocs[b.option]).all())
    assert [(b.option, b.pods) for b in pack(pods, allocs, price.tolist())] == [
        (b.option, b.pods) for b in bins
    ]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 30), min_size=1, max_size=6), min_size=0, max_size=12),
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=6),
)
def test_vectorised_bin_sums_and_shrinking_match_the_pod_by_pod_versions(
    groups: list[list[int]], types: list[tuple[int, int]]
) -> None:
    rng = np.random.default_rng(len(groups))
    pods = rng.integers(0, 20, size=(31, 2)).astype(np.int64)
    totals = bin_totals(pods, groups)
    assert totals.shape == (len(groups), 2)
    for g, t in zip(groups, totals, strict=True):
        assert t.tolist() == pods[g].sum(axis=0).tolist()
    allocs = np.array(types, dtype=np.int64)
    price = rng.uniform(0.1, 1.0, len(types))
    each = packer._cheapest_fitting_each(totals, allocs, price)
    assert each.tolist() == [cheapest_fitting(t, allocs, price) for t in totals]


def _naive_options(s: Scheduler, used: Resources) -> list[str]:
    """Types of the pool that hold the claim's requests, spot first, then cheapest, then by name."""
    from packing.instancetype import CAPACITY_TYPE_SPOT

    tpl = s.templates(("cpu", "memory", "pods"))[0]
    ranked = []
    for o in tpl.viable(tpl.base):
        off = o.offering_for(tpl.base)
        if off is not None and all(used.get(k, 0) <= a for k, a in zip(tpl.keys, o.alloc, strict=True)):
            ranked.append((0 if off.capacity_type == CAPACITY_TYPE_SPOT else 1, off.price or 0.0, o.it.name))
    return [name for _, _, name in sorted(ranked)]


@pytest.mark.parametrize("block", [2, 5, 128])
def test_each_claims_alternatives_are_its_type_then_every_fitting_type_cheapest_first(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # blocks of 2 and 5 types make most claims gather their alternatives over several blocks
    monkeypatch.setattr(solve, "_ALT_BLOCK", block)
    monkeypatch.setattr(solve, "MAX_OPTIONS", 6)
    rng = np.random.default_rng(7)
    pods = [
        pod(f"p{i}", f"{int(rng.integers(1, 30)) * 100}m", f"{int(rng.integers(1, 40)) * 256}Mi")
        for i in range(60)
    ]
    s = Scheduler([NodePool("default")], catalog())
    r = s.solve(pods)
    assert check_plan(s, pods, r) == [] and r.nodeclaims
    for c in r.nodeclaims:
        fitting = _naive_options(s, c.requests)
        others = [n for n in fitting[:6] if n != c.instance_type]
        assert c.instance_type_options == [c.instance_type, *others[:5]]


@pytest.mark.parametrize("enabled", [True, False])
def test_solve_restores_the_garbage_collector_state(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        Scheduler([on_demand_pool()], catalog()).solve([pod("p", "1", "1Gi")])
        assert gc.isenabled() is enabled
        with pytest.raises(ValueError):
            Scheduler([on_demand_pool()], catalog()).solve([], strategy="nope")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 60), st.integers(1, 120)), min_size=1, max_size=120),
    st.one_of(st.none(), st.integers(2, 64)),
)
def test_resource_only_pods_are_placed_within_allocatable_and_limits_or_reported(
    shapes: list[tuple[int, int]], cpu_limit: int | None
) -> None:
    cat = [
        instance_type("c-2x", 2, 4, 0.085),
        instance_type("m-8x", 8, 32, 0.384),
        instance_type("r-4x", 4, 32, 0.25),
        instance_type("c-16x", 16, 32, 0.68),
    ]
    limits = Resources.parse({"cpu": str(cpu_limit)}) if cpu_limit is not None else None
    pods = [
        Pod(f"p{i}", requests=Resources({"cpu": c * 100, "memory": m * 256 * 2**20 * 1000, "pods": 1000}))
        for i, (c, m) in enumerate(shapes)
    ]
    s = Scheduler([NodePool("default", limits=limits)], cat)
    for attempt in range(2):  # the second solve runs on the option tables the first one cached
        r = s.solve(pods)
        assert check_plan(s, pods, r) == []  # allocatable and limits hold
        placed = [p.key for c in r.nodeclaims for p in c.pods]
        assert len(placed) == len(set(placed))
        assert sorted(placed + list(r.unschedulable)) == sorted(p.key for p in pods)
        if attempt == 0:
            first = [(c.instance_type, [p.name for p in c.pods]) for c in r.nodeclaims]
        else:
            assert [(c.instance_type, [p.name for p in c.pods]) for c in r.nodeclaims] == first


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    zone=st.sampled_from([None, "us-east-1a", "us-east-1c"]),
    ct=st.sampled_from([None, "spot", "on-demand"]),
)
def test_a_claim_finalizes_on_the_first_fitting_type_spot_first_then_price_then_name(
    seed: int, zone: str | None, ct: str | None
) -> None:
    # cheapest_holding (one numpy pass over a ranked table) against the loop NodeClaim.finalize used to run
    from packing.instancetype import CAPACITY_TYPE_SPOT
    from packing.requirements import Requirement, Requirements

    rng = np.random.default_rng(seed)
    types = [
        instance_type(f"t{i}", int(rng.choice([2, 4, 8, 16])), int(rng.choice([4, 8, 16, 32])), round(float(rng.uniform(0.05, 1)), 2),
           zones=list(rng.choice(["us-east-1a", "us-east-1b", "us-east-1c"], size=int(rng.integers(1, 4)), replace=False)),
           spot_factor=None if rng.random() < 0.3 else float(rng.choice([0.3, 0.5])))
        for i in range(30)
    ]
    sched = Scheduler([NodePool("default")], types)
    tpl = sched.templates(("cpu", "memory", "pods"))[0]
    reqs = tpl.base
    extra = []
    if zone:
        extra.append(Requirement.new("topology.kubernetes.io/zone", "In", [zone]))
    if ct:
        extra.append(Requirement.new("karpenter.sh/capacity-type", "In", [ct]))
    if extra:
        reqs = reqs.intersect(Requirements(extra))
    viable = np.array([o.index for o in tpl.viable(reqs)], dtype=np.int64)
    if not viable.size:
        return
    idx = viable[rng.random(viable.size) < 0.7] if viable.size > 1 else viable
    used = (int(rng.integers(0, 8)) * 1000, int(rng.integers(0, 16)) * GIB, 1000)
    best = None
    for o in (tpl.options[i] for i in idx.tolist()):
        off = o.offering_for(reqs)
        if off is None or any(u > a for u, a in zip(used, o.alloc, strict=True)):
            continue
        k = (0 if off.capacity_type == CAPACITY_TYPE_SPOT else 1, off.price or 0.0, o.it.name)
        if best is None or k < best[0]:
            best = (k, o)
    got = tpl.cheapest_holding(reqs, idx, used)
    assert (got.it.name if got else None) == (best[1].it.name if best else None)
