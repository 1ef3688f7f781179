"""Pods that depend on pods pending in the same batch (issue 16 item 1), and reasons that are true (item 9).

A solve retries the pods that failed while later placements could let them in, as Karpenter's queue does:
a follower with required pod affinity to a pending target is placed once its target is, whatever their order.
"""

from __future__ import annotations

import pytest

from packing.disruption import consolidate
from packing.resources import Resources
from packing.scheduling.preferences import PodContext
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.solve import Solve
from packing.scheduling.verify import check_plan
from tests.engine_builders import (
    HOST,
    ZONE,
    bound_pod,
    catalog,
    cluster,
    existing_node,
    instance_type,
    node,
    on_demand_pool,
    pod,
    req,
    small_catalog,
    solve,
    spread,
    term,
    where,
)


def zone_of(r: Results, name: str) -> str:
    return next(c.zone for c in r.nodeclaims if any(p.name == name for p in c.pods))


# ---------------------------------------------------------------- item 1: affinity to pending pods
def test_hostname_affinity_to_a_target_that_sorts_later() -> None:
    # the follower is larger, so it is tried first, before its target has a node
    pods = [pod("b-target", "500m", labels={"app": "db"}), pod("a-follower", "2", affinity=(term(HOST, app="db"),))]
    for batch in (pods, pods[::-1]):
        _, r = solve(batch)
        assert not r.unschedulable
        assert where(r, "a-follower") == where(r, "b-target")


def test_zone_affinity_to_a_target_pinned_by_node_affinity() -> None:
    target = pod("target", labels={"app": "db"}, required_terms=(req(ZONE, "In", "us-east-1b"),))
    followers = [pod(f"f{i}", "3", affinity=(term(ZONE, app="db"),)) for i in range(4)]
    _, r = solve([target, *followers])
    assert not r.unschedulable
    assert {zone_of(r, p.name) for p in [target, *followers]} == {"us-east-1b"}


def test_zone_affinity_to_an_unconstrained_target() -> None:
    followers = [pod(f"a{i}", "2", affinity=(term(ZONE, app="db"),)) for i in range(5)]
    _, r = solve([*followers, pod("z-target", labels={"app": "db"})])
    assert not r.unschedulable
    assert len({zone_of(r, p.name) for p in [*followers]} | {zone_of(r, "z-target")}) == 1


def test_chain_of_hostname_affinities_in_either_name_order() -> None:
    names = ["db", "web", "cache", "ui"]
    for prefix in ("abcd", "dcba"):  # the chain's pods sort first-to-last, then last-to-first
        pods = [pod(f"{prefix[0]}-db", labels={"type": "db"})]
        for i in range(1, 4):
            pods.append(
                pod(f"{prefix[i]}-{names[i]}", labels={"type": names[i]}, affinity=(term(HOST, type=names[i - 1]),))
            )
        _, r = solve(pods)
        assert not r.unschedulable
        assert len({where(r, p.name) for p in pods}) == 1


def test_a_long_reversed_chain_costs_one_retry_per_link(monkeypatch: pytest.MonkeyPatch) -> None:
    # each link sorts before the one it needs, so each fails once; a retry is made only when the pod it waits for
    # has been placed: about two attempts per link, not one pass over the remaining links per link placed
    attempts = 0
    real = Solve._schedule_constrained

    def counting(self: Solve, ctx: PodContext) -> bool:
        nonlocal attempts
        attempts += 1
        return real(self, ctx)

    monkeypatch.setattr(Solve, "_schedule_constrained", counting)
    n = 40
    pods = [pod(f"l{n:03d}", "10m", "16Mi", labels={"link": "0"})]
    for i in range(1, n):
        pods.append(pod(f"l{n - i:03d}", "10m", "16Mi", labels={"link": str(i)}, affinity=(term(HOST, link=str(i - 1)),)))
    _, r = solve(pods)
    assert not r.unschedulable
    assert len({where(r, p.name) for p in pods}) == 1
    assert attempts <= 2 * n


def test_mutual_affinity_without_self_match_stays_unschedulable() -> None:
    # a needs b and b needs a, neither matches its own term: no first pod can go (as kube-scheduler), and the
    # retries end once a pass places nothing
    a = pod("a", labels={"app": "a"}, affinity=(term(HOST, app="b"),))
    b = pod("b", labels={"app": "b"}, affinity=(term(HOST, app="a"),))
    _, r = solve([a, b, pod("plain")])
    assert set(r.unschedulable) == {"default/a", "default/b"}
    assert "matches no pod in a reachable domain" in dict(r.unschedulable["default/a"])["default"]
    where(r, "plain")


def test_follower_with_preferences_gets_them_back_on_retry() -> None:
    # the first try relaxes the follower's preferred family away (its target is not placed yet); the retry starts
    # again from the pod as written, so the preference is honoured
    family = "karpenter.k8s.aws/instance-family"
    follower = pod(
        "a-follower", "2", affinity=(term(ZONE, app="db"),), preferred_terms=((10, req(family, "In", "r")),)
    )
    _, r = solve([follower, pod("b-target", labels={"app": "db"})])
    assert not r.unschedulable
    assert zone_of(r, "a-follower") == zone_of(r, "b-target")
    claim = next(c for c in r.nodeclaims if any(p.name == "a-follower" for p in c.pods))
    assert claim.instance_type.startswith("r-")


def test_spread_counts_pods_placed_after_a_failed_pod() -> None:
    # zone a already holds one matching pod. The GPU pod may use zones a and b (its spread counts those two) but
    # GPUs are offered in zone a only; it is the largest, so it comes first, when zone a is one ahead of b. Once
    # the two others have gone to zones b and c, a is level with b and the retry places it there.
    cat = [t for t in catalog() if t.name != "g-4x"]
    cat.append(instance_type("g-4x", 4, 16, 1.2, zones=("us-east-1a",), extra={"nvidia.com/gpu": "1"}))
    running = [bound_pod("r", "n-a", "100m", "128Mi", labels={"app": "s"})]
    nodes = [existing_node("n-a", cpu="200m", memory="256Mi", zone="us-east-1a")]
    gpu = pod(
        "gpu",
        "3",
        extra={"nvidia.com/gpu": "1"},
        labels={"app": "s"},
        spread=(spread(ZONE, app="s"),),
        required_terms=(req(ZONE, "In", "us-east-1a", "us-east-1b"),),
    )
    others = [pod(f"s{i}", labels={"app": "s"}, spread=(spread(ZONE, app="s"),)) for i in range(2)]
    _, r = solve([gpu, *others], cat=cat, existing_nodes=nodes, running_pods=running)
    assert not r.unschedulable
    assert zone_of(r, "gpu") == "us-east-1a"
    assert {zone_of(r, "s0"), zone_of(r, "s1")} == {"us-east-1b", "us-east-1c"}


def test_anti_affinity_counts_pods_placed_earlier_in_the_solve() -> None:
    guard = pod("guard", "2", labels={"app": "guard"}, anti_affinity=(term(ZONE, app="web"),))
    webs = [pod(f"web{i}", labels={"app": "web"}) for i in range(3)]
    _, r = solve([guard, *webs])
    assert not r.unschedulable
    assert zone_of(r, "guard") not in {zone_of(r, w.name) for w in webs}


def test_spread_pod_keeps_out_of_a_zone_an_earlier_pods_anti_affinity_forbids() -> None:
    # the spread ranks zone a first (all empty); the guard placed before it in zone a rules zone a out, and the
    # pick must come from what is left
    guard = pod("a-guard", labels={"app": "guard"}, anti_affinity=(term(ZONE, app="c"),))
    spreader = pod("b-spread", labels={"app": "c"}, spread=(spread(ZONE, app="c"),))
    _, r = solve([guard, spreader])
    assert not r.unschedulable
    assert zone_of(r, "a-guard") != zone_of(r, "b-spread")


def test_new_claims_do_not_take_an_existing_nodes_name() -> None:
    # a node named like a claim ("default-1") runs a pod with hostname anti-affinity: a claim named "default-1"
    # would share its hostname counts and refuse the pending replica
    nodes = [existing_node("default-1", cpu="1", memory="1Gi")]
    running = [bound_pod("w0", "default-1", "900m", "512Mi", labels={"app": "web"}, anti_affinity=(term(HOST, app="web"),))]
    w1 = pod("w1", labels={"app": "web"}, anti_affinity=(term(HOST, app="web"),))
    _, r = solve([w1], existing_nodes=nodes, running_pods=running)
    assert not r.unschedulable
    assert where(r, "w1") == "default-2"


# ---------------------------------------------------------------- item 9: reasons that are true
def test_spread_on_a_key_no_node_carries_says_so() -> None:
    p = pod("p", labels={"app": "s"}, spread=(spread("example.com/rack", app="s"),))
    _, r = solve([p, pod("plain")])
    why = dict(r.unschedulable["default/p"])
    assert why == {"default": "no node of nodepool default carries label example.com/rack"}
    where(r, "plain")


def test_spread_on_a_key_only_existing_nodes_carry() -> None:
    nodes = [existing_node("n1", cpu="100m", memory="128Mi", labels={"example.com/rack": "r1"})]
    p = pod("p", labels={"app": "s"}, spread=(spread("example.com/rack", app="s"),))
    _, r = solve([p], existing_nodes=nodes)
    assert dict(r.unschedulable["default/p"]) == {
        "default": "no new node of nodepool default would carry label example.com/rack"
    }


def test_spread_reason_is_structured() -> None:
    p = pod("p", labels={"app": "s"}, spread=(spread("example.com/rack", app="s"),))
    s = Scheduler([on_demand_pool()], catalog())
    r = s.solve([p])
    (why,) = r.unschedulable_reasons["default/p"]
    assert why.kind == "topology"
    assert dict(why.detail) == {"constraint": "spread", "topology_key": "example.com/rack", "missing_label": True}


def test_consolidation_moves_a_pod_with_hostname_anti_affinity_to_a_new_node() -> None:
    # after the first replacement (a node named "default-1" in the simulation), the next node's replica fits a
    # new node: it is consolidated too, never "would not fit elsewhere"
    cat = {it.name: it for it in small_catalog()}
    nodes = [node(n, cat["m-8x"]) for n in "abc"]
    pods = [
        bound_pod(f"w{i}", n, "500m", "1Gi", labels={"app": "web"}, anti_affinity=(term(HOST, app="web"),))
        for i, n in enumerate("abc")
    ]
    report = consolidate(cluster(nodes, pods))
    assert not [x.text for x in report.not_disrupted if "would not fit elsewhere" in x.text]
    moved = {p for a in report.actions for p in a.moves}
    assert moved == {"default/w0", "default/w1", "default/w2"}
    for a in report.actions:
        for c in a.replacements:
            assert len(c["pods"]) == 1


def test_consolidation_still_says_would_not_fit_when_nothing_can_take_the_pod() -> None:
    # the replica's anti-affinity keeps it off the other node, and the pool's limit leaves no room for a new one
    cat = {it.name: it for it in small_catalog()}
    limited = on_demand_pool(limits=Resources.parse({"cpu": "8"}))  # already exceeded: no new node
    nodes = [node(n, cat["m-8x"]) for n in "ab"]
    pods = [
        bound_pod(f"w{i}", n, "500m", "1Gi", labels={"app": "web"}, anti_affinity=(term(HOST, app="web"),))
        for i, n in enumerate("ab")
    ]
    report = consolidate(cluster(nodes, pods, pools=[limited]))
    assert not report.actions
    assert all("would not fit elsewhere" in x.text for x in report.not_disrupted), report.not_disrupted


# ---------------------------------------------------------------- the plan checker sees pods of the same solve
def test_check_plan_flags_constraints_between_pods_placed_in_the_same_solve() -> None:
    # target and follower (hostname affinity) share a node; "apart" keeps off the target's node (anti-affinity)
    target = pod("target", labels={"app": "db"})
    follower = pod("follower", affinity=(term(HOST, app="db"),))
    apart = pod("apart", labels={"app": "apart"}, anti_affinity=(term(HOST, app="db"),))
    pods = [target, follower, apart]
    s, r = solve(pods)
    mine = next(c for c in r.nodeclaims if any(p.name == "target" for p in c.pods))
    other = next(c for c in r.nodeclaims if any(p.name == "apart" for p in c.pods))
    assert mine is not other
    # the follower moved away from its target: its affinity is broken
    mine.pods = [p for p in mine.pods if p.name != "follower"]
    other.pods = [*other.pods, follower]
    assert any("follower: affinity on kubernetes.io/hostname not satisfied" in e for e in check_plan(s, pods, r))
    # "apart" moved next to the target: its anti-affinity is broken
    s, r = solve(pods)
    mine = next(c for c in r.nodeclaims if any(p.name == "target" for p in c.pods))
    other = next(c for c in r.nodeclaims if any(p.name == "apart" for p in c.pods))
    other.pods = [p for p in other.pods if p.name != "apart"]
    mine.pods = [*mine.pods, apart]
    assert any("apart: anti-affinity on kubernetes.io/hostname violated by default/target" in e for e in check_plan(s, pods, r))


def test_check_plan_flags_a_spread_broken_by_pods_of_the_same_solve() -> None:
    pods = [pod(f"s{i}", labels={"app": "s"}, spread=(spread(ZONE, app="s"),)) for i in range(3)]
    s, r = solve(pods)
    assert len({c.zone for c in r.nodeclaims}) == 3
    # all three into one claim's zone: counts 3/0/0 exceed maxSkew 1
    first = r.nodeclaims[0]
    for c in r.nodeclaims[1:]:
        first.pods.extend(c.pods)
        c.pods = []
    assert any("spread on zone" in e for e in check_plan(s, pods, r))
