"""Property-based tests over random pods, pools and catalogs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from packing.instancetype import InstanceType
from packing.nodepool import ExistingNodeSpec, NodePool
from packing.pods import LabelSelector, Pod, TopologySpread
from packing.requirements import Requirement, Requirements
from packing.resources import Resources
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.verify import check_plan
from packing.taints import Taint, Toleration
from tests.engine_builders import CT, HOST, ZONE, ZONES, catalog, instance_type, term


@st.composite
def catalogs(draw: st.DrawFn) -> list[InstanceType]:
    n = draw(st.integers(1, 6))
    out = []
    for i in range(n):
        cpu = draw(st.sampled_from([1, 2, 4, 8, 16]))
        ratio = draw(st.sampled_from([1, 2, 4, 8]))
        price = round(cpu * draw(st.floats(0.02, 0.1)) * (1 + draw(st.floats(0, 0.3))), 4)
        zones = draw(st.lists(st.sampled_from(ZONES), min_size=1, max_size=3, unique=True))
        arch = draw(st.sampled_from(["amd64", "arm64"]))
        gpu = {"nvidia.com/gpu": "1"} if draw(st.integers(0, 5)) == 0 else None
        out.append(
            instance_type(
                f"t{i}",
                cpu,
                cpu * ratio,
                price,
                zones=sorted(zones),
                arch=arch,
                extra=gpu,
                spot_factor=draw(st.sampled_from([None, 0.4])),
            )
        )
    return out


@st.composite
def pools(draw: st.DrawFn) -> list[NodePool]:
    out = [
        NodePool(
            "default",
            Requirements(
                [Requirement.new(CT, "In", draw(st.sampled_from([["on-demand"], ["spot", "on-demand"]])))]
            ),
            limits=Resources.parse({"cpu": str(draw(st.integers(4, 200)))}) if draw(st.booleans()) else None,
        )
    ]
    if draw(st.booleans()):
        out.append(
            NodePool(
                "tainted", taints=(Taint("dedicated", "x", "NoSchedule"),), weight=draw(st.integers(0, 20))
            )
        )
    return out


@st.composite
def pod_lists(draw: st.DrawFn) -> list[Pod]:
    n = draw(st.integers(1, 25))
    pods = []
    for i in range(n):
        cpu = draw(st.integers(1, 40)) * 100
        mem = draw(st.integers(1, 64)) * 128
        reqs = {"cpu": cpu, "memory": mem * 2**20 * 1000, "pods": 1000}
        if draw(st.integers(0, 8)) == 0:
            reqs["nvidia.com/gpu"] = 1000
        app = draw(st.sampled_from(["a", "b", "c"]))
        kw: dict[str, object] = {"labels": {"app": app}}
        shape = draw(st.integers(0, 12))
        selector = LabelSelector(Requirements([Requirement.new("app", "In", [app])]))
        if shape == 1:
            kw["spread"] = (TopologySpread(1, ZONE, "DoNotSchedule", selector),)
        elif shape == 2:
            kw["spread"] = (TopologySpread(draw(st.integers(1, 2)), HOST, "DoNotSchedule", selector),)
        elif shape == 3:
            kw["anti_affinity"] = (term(HOST, app=app),)
        elif shape == 4:
            kw["affinity"] = (term(ZONE, app=app),)
        elif shape == 5:
            kw["node_selector"] = {"kubernetes.io/arch": draw(st.sampled_from(["amd64", "arm64"]))}
        elif shape == 6:
            kw["tolerations"] = (Toleration("dedicated", "Equal", "x", "NoSchedule"),)
        elif shape == 7:
            kw["required_terms"] = (
                Requirements([Requirement.new(ZONE, "In", [draw(st.sampled_from(ZONES))])]),
            )
        elif shape in (10, 11):
            # required affinity to another app's pods, pending in the same batch (or absent: unschedulable)
            other = draw(st.sampled_from([a for a in ("a", "b", "c") if a != app]))
            kw["affinity"] = (term(HOST if shape == 10 else ZONE, app=other),)
        elif shape == 12:
            other = draw(st.sampled_from([a for a in ("a", "b", "c") if a != app]))
            kw["anti_affinity"] = (term(draw(st.sampled_from([HOST, ZONE])), app=other),)
        pods.append(Pod(f"p{i}", requests=Resources(reqs), **kw))  # type: ignore[arg-type]
    return pods


@given(catalogs(), pools(), pod_lists())
def test_plans_are_feasible_bounded_and_deterministic(
    cat: list[InstanceType], nps: list[NodePool], pods: list[Pod]
) -> None:
    s = Scheduler(nps, cat)
    r = s.solve(pods, lower_bound=True)
    # every hard constraint holds: allocatable, selectors, affinity, tolerations, spread, limits
    assert check_plan(s, pods, r) == []
    assert r.lower_bound is not None
    assert r.lower_bound <= r.cost_per_hour + 1e-9
    again = s.solve(list(reversed(pods)), lower_bound=True)
    assert [(c.instance_type, c.zone, sorted(p.name for p in c.pods)) for c in again.nodeclaims] == [
        (c.instance_type, c.zone, sorted(p.name for p in c.pods)) for c in r.nodeclaims
    ]
    assert again.unschedulable.keys() == r.unschedulable.keys()
    for reasons in r.unschedulable.values():
        assert [p for p, _ in reasons] == [p.name for p in s.nodepools]


@given(catalogs(), pod_lists())
def test_bound_never_exceeds_greedy_plan(cat: list[InstanceType], pods: list[Pod]) -> None:
    s = Scheduler([NodePool("default")], cat)
    greedy = s.solve(pods, strategy="greedy")
    cost = s.solve(pods, lower_bound=True)
    assert check_plan(s, pods, greedy) == []
    if set(greedy.unschedulable) == set(cost.unschedulable):
        from packing.bound import lower_bound

        assert lower_bound(s, greedy, pods) <= greedy.cost_per_hour + 1e-9
        assert cost.lower_bound is not None and cost.lower_bound <= greedy.cost_per_hour + 1e-6


@given(st.lists(st.tuples(st.integers(1, 30), st.integers(1, 40)), min_size=1, max_size=40))
def test_no_node_over_allocatable_resource_only(shapes: list[tuple[int, int]]) -> None:
    cat = [instance_type("c-2x", 2, 4, 0.085), instance_type("m-8x", 8, 32, 0.384), instance_type("r-4x", 4, 32, 0.25)]
    pods = [
        Pod(f"p{i}", requests=Resources({"cpu": c * 100, "memory": m * 256 * 2**20 * 1000, "pods": 1000}))
        for i, (c, m) in enumerate(shapes)
    ]
    s = Scheduler([NodePool("default")], cat)
    r = s.solve(pods, lower_bound=True)
    assert check_plan(s, pods, r) == []
    assert r.lower_bound is not None and r.lower_bound <= r.cost_per_hour + 1e-9


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[ExistingNodeSpec], list[Pod]]:
    nodes = []
    running = []
    for i in range(draw(st.integers(0, 5))):
        zone = draw(st.sampled_from(ZONES))
        initialized = draw(st.booleans())
        labels = {
            ZONE: zone,
            HOST: f"n{i}",
            "karpenter.sh/nodepool": "default",
            "node.kubernetes.io/instance-type": "t0",
        }
        if initialized:
            labels["karpenter.sh/initialized"] = "true"
        taints = (Taint("node.kubernetes.io/not-ready", "", "NoSchedule"),) if draw(st.booleans()) else ()
        alloc = Resources.parse(
            {"cpu": str(draw(st.integers(1, 8))), "memory": f"{draw(st.integers(1, 16))}Gi", "pods": "20"}
        )
        nodes.append(ExistingNodeSpec(f"n{i}", labels, alloc, taints, initialized, capacity=alloc))
        for j in range(draw(st.integers(0, 3))):
            running.append(
                Pod(
                    f"r{i}-{j}",
                    labels={"app": draw(st.sampled_from(["a", "b"]))},
                    node_name=f"n{i}",
                    requests=Resources({"cpu": 100 * draw(st.integers(1, 5)), "pods": 1000}),
                )
            )
    return nodes, running


@given(catalogs(), pools(), pod_lists(), clusters())
def test_existing_nodes_feasible_and_bounded(
    cat: list[InstanceType],
    nps: list[NodePool],
    pods: list[Pod],
    cluster: tuple[list[ExistingNodeSpec], list[Pod]],
) -> None:
    nodes, running = cluster
    s = Scheduler(nps, cat, nodes, running)
    r = s.solve(pods, lower_bound=True)
    assert check_plan(s, pods, r) == []
    assert r.lower_bound is not None and r.lower_bound <= r.cost_per_hour + 1e-9
    # a what-if without the first node is just as feasible
    if nodes:
        w = s.solve(pods, exclude_nodes={nodes[0].name})
        assert all(e.name != nodes[0].name for e in w.existing)


@given(st.data())
def test_pods_that_depend_on_pending_pods_are_placed_with_them(data: st.DataObject) -> None:
    """A chain of required pod affinities (each pod near the one before, on hostname or zone) among pods pending
    together is placed whole, whatever the names' order and sizes, next to unrelated pods; a target pinned to a
    zone takes its followers there."""
    key = data.draw(st.sampled_from([HOST, ZONE]))
    length = data.draw(st.integers(2, 5))
    order = data.draw(st.permutations(range(length)))
    pin = data.draw(st.sampled_from([None, *ZONES]))
    followers = data.draw(st.integers(1, 3)) if key == ZONE else 1
    pods: list[Pod] = []
    chain: list[str] = []
    for i in range(length):
        kw: dict[str, object] = {"labels": {"link": str(i)}}
        if i:
            kw["affinity"] = (term(key, link=str(i - 1)),)
        elif pin is not None:
            kw["required_terms"] = (Requirements([Requirement.new(ZONE, "In", [pin])]),)
        cpu = data.draw(st.integers(1, 10)) * 100
        for j in range(followers if i else 1):
            name = f"l{order[i]}-{j}"
            chain.append(name)
            pods.append(Pod(name, requests=Resources({"cpu": cpu, "memory": cpu * 2**20 * 1000, "pods": 1000}), **kw))  # type: ignore[arg-type]
    for k in range(data.draw(st.integers(0, 6))):
        cpu = data.draw(st.integers(1, 30)) * 100
        pods.append(Pod(f"x{k}", requests=Resources({"cpu": cpu, "memory": cpu * 2**20 * 1000, "pods": 1000})))
    s = Scheduler([NodePool("default")], catalog())
    r = s.solve(pods)
    assert check_plan(s, pods, r) == []
    assert not r.unschedulable, r.unschedulable
    at = {p.name: (c.name, c.zone) for c in r.nodeclaims for p in c.pods}
    domains = {at[n][0 if key == HOST else 1] for n in chain}
    assert len(domains) == 1
    if pin is not None:
        assert {at[n][1] for n in chain} == {pin}
