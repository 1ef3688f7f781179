"""Zone spread packed per zone (packing.scheduling.spreadsplit) and bounded per zone (packing.spreadbound)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packing.bound import lower_bound
from packing.instancetype import InstanceType, Offering
from packing.nodepool import NodePool
from packing.pods import Pod
from packing.requirements import Requirement, Requirements
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.verify import check_plan
from tests.engine_builders import ZONE, ZONES, instance_type, pod, spread


def _zone_priced(name: str, cpu: int, mem_gib: int, prices: dict[str, float]) -> InstanceType:
    """An on-demand-only type with its own price in each zone (only the zones listed)."""
    base = instance_type(name, cpu, mem_gib, 1.0, zones=sorted(prices), spot_factor=None)
    offs = tuple(Offering(z, "on-demand", p) for z, p in sorted(prices.items()))
    return InstanceType(base.name, base.capacity, base.overhead, base.labels, offs)


def _spread_pods(n: int, app: str, cpu: str = "1", memory: str = "2Gi", skew: int = 1) -> list[Pod]:
    return [
        pod(f"{app}-{i}", cpu, memory, labels={"app": app}, spread=(spread(ZONE, skew, app=app),))
        for i in range(n)
    ]


def test_spread_pods_are_packed_per_zone_like_pods_pinned_to_it() -> None:
    # a spread group's pods are dealt out to the zones evenly and each zone's share is bulk-packed: the
    # plan costs what the same pods pinned to those zones cost (pod by pod, the first claims of each zone
    # took the pods as they came)
    cat = [instance_type(f"c-{s}x", s, 2 * s, round(0.0425 * s, 4), spot_factor=None) for s in (2, 4, 8, 16)]
    pods = _spread_pods(30, "a", "1500m", "1Gi") + _spread_pods(30, "b", "700m", "3Gi")
    s = Scheduler([NodePool("default")], cat)
    r = s.solve(pods)
    assert check_plan(s, pods, r) == []
    per_zone = {z: sum(1 for c in r.nodeclaims if c.zone == z for _ in c.pods) for z in ZONES}
    assert sorted(per_zone.values()) == [20, 20, 20]
    pinned = [
        Pod(p.name, requests=p.requests, node_selector={ZONE: c.zone}) for c in r.nodeclaims for p in c.pods
    ]
    alone = s.solve(pinned)
    assert r.cost_per_hour <= alone.cost_per_hour + 1e-9


def test_spread_bound_charges_each_zone_its_share_at_its_prices() -> None:
    # zone b costs four times zone a; a spread of 12 pods over the two zones puts 6 in each, so any plan
    # pays for 6 pods' worth in zone b. The topology-blind bound put all 12 in zone a.
    cat = [_zone_priced("m-4x", 4, 16, {ZONES[0]: 0.1, ZONES[1]: 0.4})]
    pods = _spread_pods(12, "a", "1", "2Gi")
    s = Scheduler([NodePool("default")], cat)
    r = s.solve(pods, lower_bound=True)
    assert check_plan(s, pods, r) == []
    assert r.lower_bound is not None
    alloc_cpu = 4 - 0.08  # instance_type's kubelet overhead leaves 3920m
    zone_a, zone_b = 6 / alloc_cpu * 0.1, 6 / alloc_cpu * 0.4
    assert r.lower_bound >= (zone_a + zone_b) * 0.999
    assert r.lower_bound <= r.cost_per_hour + 1e-9


def test_spread_bound_is_not_used_when_another_pod_is_counted() -> None:
    # a pod the spread's selector selects without carrying the spread moves the counts: only the
    # topology-blind bound holds then (all 13 pods' worth at zone a's price)
    cat = [_zone_priced("m-4x", 4, 16, {ZONES[0]: 0.1, ZONES[1]: 0.4})]
    pods = _spread_pods(12, "a", "1", "2Gi") + [pod("loose", "1", "2Gi", labels={"app": "a"})]
    s = Scheduler([NodePool("default")], cat)
    r = s.solve(pods, lower_bound=True)
    assert check_plan(s, pods, r) == []
    assert r.lower_bound is not None and r.lower_bound <= 13 / 3.92 * 0.1 * 1.01


@st.composite
def zone_cases(draw: st.DrawFn) -> tuple[list[InstanceType], list[Pod]]:
    cat = []
    for i in range(draw(st.integers(1, 4))):
        cpu = draw(st.sampled_from([2, 4, 8]))
        zones = draw(st.lists(st.sampled_from(ZONES), min_size=1, max_size=3, unique=True))
        prices = {z: round(cpu * draw(st.floats(0.02, 0.2)), 4) for z in zones}
        cat.append(_zone_priced(f"t{i}", cpu, cpu * draw(st.sampled_from([2, 4, 8])), prices))
    pods: list[Pod] = []
    for app in ("a", "b"):
        n = draw(st.integers(0, 12))
        skew = draw(st.integers(1, 2))
        # node affinity per app, not per pod: pods of one selector with different zone sets hit a known
        # pod-by-pod miscount (reported to the lead), which this test is not about
        narrowed = draw(st.integers(0, 3)) == 0
        for i in range(n):
            cpu_m = draw(st.integers(1, 20)) * 100
            mem_mi = draw(st.integers(1, 32)) * 128
            kw: dict[str, object] = {"labels": {"app": app}, "spread": (spread(ZONE, skew, app=app),)}
            if narrowed:
                kw["required_terms"] = (Requirements([Requirement.new(ZONE, "In", list(ZONES[:2]))]),)
            pods.append(pod(f"{app}-{i}", f"{cpu_m}m", f"{mem_mi}Mi", **kw))
    for i in range(draw(st.integers(0, 6))):
        pods.append(pod(f"free-{i}", f"{draw(st.integers(1, 20)) * 100}m", "1Gi"))
    return cat, pods


@settings(max_examples=150, deadline=None)
@given(zone_cases())
def test_zone_spread_plans_are_feasible_and_the_bound_stays_below_any_plan(
    case: tuple[list[InstanceType], list[Pod]],
) -> None:
    cat, pods = case
    s = Scheduler([NodePool("default")], cat)
    r = s.solve(pods, lower_bound=True)
    assert check_plan(s, pods, r) == []
    assert r.lower_bound is not None and r.lower_bound <= r.cost_per_hour + 1e-9
    greedy = s.solve(pods, strategy="greedy")
    # the greedy strategy is another plan honouring the constraints (when it does: it is a baseline)
    if check_plan(s, pods, greedy) == [] and set(greedy.unschedulable) == set(r.unschedulable):
        assert lower_bound(s, greedy, pods) <= greedy.cost_per_hour + 1e-9
        assert r.lower_bound <= greedy.cost_per_hour + 1e-6


def test_lp_guided_deal_keeps_every_app_even_across_zones() -> None:
    # from LP_GUIDE_MIN_PODS pods the deal follows the zone LP (zone b lacks the cheap memory type): the plan
    # stays feasible, every app keeps 250/250 and the bound (the same LP, exact) stays below the plan
    from packing.scheduling import spreadsplit

    cat = [
        _zone_priced("m-8x", 8, 32, {ZONES[0]: 0.40, ZONES[1]: 0.40}),
        _zone_priced("r-8x", 8, 64, {ZONES[0]: 0.30}),
        _zone_priced("c-8x", 8, 16, {ZONES[0]: 0.34, ZONES[1]: 0.34}),
    ]
    pods = []
    for app in ("a", "b"):
        for i in range(500):
            cpu, mem = ("1", "7Gi") if i % 2 else ("1500m", "1Gi")
            pods.append(pod(f"{app}-{i}", cpu, mem, labels={"app": app}, spread=(spread(ZONE, 1, app=app),)))
    assert len(pods) >= spreadsplit.LP_GUIDE_MIN_PODS
    s = Scheduler([NodePool("default")], cat)
    r = s.solve(pods, lower_bound=True)
    assert check_plan(s, pods, r) == []
    for app in ("a", "b"):
        counts = [
            sum(1 for c in r.nodeclaims if c.zone == z for p in c.pods if p.labels["app"] == app) for z in ZONES[:2]
        ]
        assert counts == [250, 250]
    assert r.lower_bound is not None and r.lower_bound <= r.cost_per_hour


def test_a_zone_only_types_too_small_for_the_daemonsets_offer_is_no_domain() -> None:
    """Zone a offers only a type that cannot hold the pool's DaemonSet: no new node can be there, so it is not a
    domain of the spread (kube-scheduler, counting the nodes' zones, never sees it either) and both pods go to
    zone b. The plan checker counts domains the same way; it used to count zone a and call the plan skewed."""
    from packing.nodepool import DaemonSet

    small = instance_type("t0-small", 1, 4, 0.05, zones=["us-east-1a"], spot_factor=None)
    large = instance_type("t1-large", 4, 16, 0.2, zones=["us-east-1b"], spot_factor=None)
    agent = DaemonSet("kube-system", "agent", pod("agent", "1", "128Mi", namespace="kube-system"))
    pods = _spread_pods(2, "web", cpu="100m", memory="128Mi")
    sched = Scheduler([NodePool("default")], [small, large], daemonsets=[agent])
    res = sched.solve(pods)
    assert not res.unschedulable
    assert {c.zone for c in res.nodeclaims} == {"us-east-1b"}
    assert check_plan(sched, pods, res) == []
def test_the_lp_deal_is_kept_only_when_it_packs_cheaper_than_the_even_deal(monkeypatch: pytest.MonkeyPatch) -> None:
    # the zone LP's deal is its relaxation's, rounded to pods: on this catalog (each zone its own prices, some
    # types in one zone only) it packed to $20.20/h where the even deal packs to $18.74/h; both are packed and
    # the cheaper kept
    from packing.scheduling import spreadsplit

    prices = [
        ("c-2x", 2, 4, (0.0328, 0.0239)), ("c-4x", 4, 8, (0.0608, 0.0733)), ("c-8x", 8, 16, (0.1199, 0.1346)),
        ("c-16x", 16, 32, (None, 0.2877)), ("m-2x", 2, 8, (0.0448, 0.0374)), ("m-4x", 4, 16, (0.0756, None)),
        ("m-16x", 16, 64, (0.3912, 0.3181)), ("r-2x", 2, 16, (0.0523, 0.072)), ("r-8x", 8, 64, (None, 0.214)),
        ("r-16x", 16, 128, (0.4326, 0.4062)),
    ]  # fmt: skip
    cat = [
        _zone_priced(name, cpu, mem, {z: p for z, p in zip(ZONES[:2], zone_prices, strict=True) if p is not None})
        for name, cpu, mem, zone_prices in prices
    ]
    shapes = [("1", "4Gi"), ("1500m", "1Gi"), ("500m", "2Gi")]
    pods = [
        pod(f"a{app}-{i}", *shapes[i % 3], labels={"app": f"a{app}"}, spread=(spread(ZONE, 1, app=f"a{app}"),))
        for app in range(2)
        for i in range(501)
    ]
    s = Scheduler([NodePool("default")], cat)
    r = s.solve(pods)
    assert check_plan(s, pods, r) == [] and not r.unschedulable
    monkeypatch.setattr(spreadsplit, "LP_GUIDE_MIN_PODS", 10**9)  # the even deal only
    even = Scheduler([NodePool("default")], cat).solve(pods)
    assert r.cost_per_hour <= even.cost_per_hour + 1e-9
