"""Property-based tests over random pods, pools and catalogs."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from packing.instancetype import InstanceType
from packing.nodepool import DaemonSet, ExistingNodeSpec, NodePool
from packing.ondemandshare import OnDemandShare, ShareBook, settle, split
from packing.overlay import NodeOverlay, resolve_overlays
from packing.pods import HostPort, LabelSelector, Pod, TopologySpread
from packing.requirements import Requirement, Requirements
from packing.resources import Resources
from packing.scheduling.reasons import ReasonKind
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


@st.composite
def daemonsets(draw: st.DrawFn) -> list[DaemonSet]:
    """DaemonSets on every node, on one arch, on one instance type, on control-plane nodes only (which no pool
    offers) or tolerating the tainted pool; some holding host port 8080 or 9090."""
    out = []
    for i in range(draw(st.integers(0, 4))):
        where = draw(st.integers(0, 4))
        selector: dict[str, str] = {}
        tolerations: tuple[Toleration, ...] = ()
        if where == 1:
            selector = {"kubernetes.io/arch": draw(st.sampled_from(["amd64", "arm64"]))}
        elif where == 2:
            selector = {"node.kubernetes.io/instance-type": f"t{draw(st.integers(0, 5))}"}
        elif where == 3:
            selector = {"node-role.kubernetes.io/control-plane": ""}
        elif where == 4:
            tolerations = (Toleration("dedicated", "Equal", "x", "NoSchedule"),)
        port = draw(st.sampled_from([None, 8080, 9090]))
        p = Pod(
            f"ds{i}",
            namespace="kube-system",
            requests=Resources({"cpu": 100 * draw(st.integers(1, 15)), "memory": 2**27 * 1000, "pods": 1000}),
            node_selector=selector,
            tolerations=tolerations,
            host_ports=(HostPort(port),) if port else (),
        )
        out.append(DaemonSet("kube-system", f"ds{i}", p))
    return out


def _lands(ds: DaemonSet, pool: NodePool, labels: dict[str, str]) -> bool:
    """The generated DaemonSets' landing rule, worked out independently of the engine: taints tolerated and
    every nodeSelector label on the node."""
    tolerated = all(any(t.tolerates(x) for t in ds.pod.tolerations) for x in pool.taints if x.effect != "PreferNoSchedule")
    return tolerated and all(labels.get(k) == v for k, v in ds.pod.node_selector.items())


@given(catalogs(), pools(), pod_lists(), daemonsets(), st.lists(st.sampled_from([0, 1, 2]), min_size=25, max_size=25))
def test_daemonsets_count_only_where_they_land(
    cat: list[InstanceType], nps: list[NodePool], pods: list[Pod], dss: list[DaemonSet], port_of: list[int]
) -> None:
    # some pods ask host port 8080 or 9090 too
    pods = [
        dataclasses.replace(p, host_ports=(HostPort((0, 8080, 9090)[port_of[i]]),)) if port_of[i] else p
        for i, p in enumerate(pods)
    ]
    s = Scheduler(nps, cat, daemonsets=dss)
    r = s.solve(pods, lower_bound=True)
    # no node overcommitted counting the DaemonSets that land on it, no host port held twice
    assert check_plan(s, pods, r) == []
    assert r.lower_bound is not None and r.lower_bound <= r.cost_per_hour + 1e-9
    by_pool = {p.name: p for p in nps}
    by_type = {it.name: it for it in cat}
    for c in r.nodeclaims:
        landed = [ds for ds in dss if _lands(ds, by_pool[c.nodepool], c.labels)]
        total = Resources()
        for p in [*c.pods, *(ds.pod for ds in landed)]:
            total = total + p.requests
        # the claim's requests are its pods' and exactly those DaemonSets'
        assert c.requests == total
        assert not total.exceeded(by_type[c.instance_type].allocatable)
        held = [hp for ds in landed for hp in ds.pod.host_ports]
        assert not any(hp.conflicts(q) for p in c.pods for hp in p.host_ports for q in held)


@given(catalogs(), pools(), pod_lists(), clusters(), daemonsets())
def test_daemonset_host_ports_respected_on_existing_nodes(
    cat: list[InstanceType],
    nps: list[NodePool],
    pods: list[Pod],
    cluster: tuple[list[ExistingNodeSpec], list[Pod]],
    dss: list[DaemonSet],
) -> None:
    # every third pod asks port 8080: never where a DaemonSet holding it runs (listed or not yet)
    pods = [dataclasses.replace(p, host_ports=(HostPort(8080),)) if i % 3 == 0 else p for i, p in enumerate(pods)]
    nodes, running = cluster
    s = Scheduler(nps, cat, nodes, running, dss)
    r = s.solve(pods, lower_bound=True)
    assert check_plan(s, pods, r) == []
    holders = [ds for ds in dss if any(hp.port == 8080 for hp in ds.pod.host_ports)]
    for e in r.existing:
        spec = next(n for n in nodes if n.name == e.name)
        if any(ds.runs_on(spec.taints if spec.initialized else (), spec.labels) for ds in holders):
            assert not any(p.host_ports for p in e.pods)


# ---------------------------------------------------------------- Gt/Lt tolerations and pod-level resources
@given(st.integers(1, 2**63 - 1), st.integers(1, 2**63 - 1))
def test_gt_lt_tolerations_compare_as_integers(taint_value: int, tol_value: int) -> None:
    taint = Taint("tier", str(taint_value), "NoSchedule")
    gt = Toleration("tier", "Gt", str(tol_value)).tolerates(taint)
    lt = Toleration("tier", "Lt", str(tol_value)).tolerates(taint)
    assert gt == (taint_value > tol_value) and lt == (taint_value < tol_value)
    assert not (gt and lt) and (gt or lt or taint_value == tol_value)


@given(
    st.integers(1, 9),
    st.lists(st.tuples(st.sampled_from(["Gt", "Lt", "Equal"]), st.integers(1, 9)), min_size=1, max_size=12),
)
def test_plans_honour_gt_lt_tolerations(tier: int, tols: list[tuple[str, int]]) -> None:
    cat = [instance_type("c-2x", 2, 4, 0.085), instance_type("m-8x", 8, 32, 0.384)]
    pool = NodePool("tiered", taints=(Taint("tier", str(tier), "NoSchedule"),))
    pods = [
        Pod(f"p{i}", requests=Resources.parse({"cpu": "500m", "pods": "1"}),
            tolerations=(Toleration("tier", op, str(v), "NoSchedule"),))
        for i, (op, v) in enumerate(tols)
    ]  # fmt: skip
    s = Scheduler([pool], cat)
    r = s.solve(pods)
    assert check_plan(s, pods, r) == []
    tolerated = {
        f"p{i}" for i, (op, v) in enumerate(tols)
        if (op == "Gt" and tier > v) or (op == "Lt" and tier < v) or (op == "Equal" and tier == v)
    }  # fmt: skip
    assert {p.name for c in r.nodeclaims for p in c.pods} == tolerated
    assert {k.split("/", 1)[1] for k in r.unschedulable} == {p.name for p in pods} - tolerated


@given(
    st.integers(0, 64_000),
    st.integers(0, 64_000),
    st.one_of(st.none(), st.integers(1, 64_000)),
    st.one_of(st.none(), st.integers(1, 64_000)),
)
def test_pod_level_requests_replace_the_containers(
    container_cpu: int, overhead_cpu: int, pod_request: int | None, pod_limit: int | None
) -> None:
    from packing.podspec import parse_pod_spec

    level: dict[str, dict[str, str]] = {}
    if pod_request is not None:
        level["requests"] = {"cpu": f"{pod_request}m"}
    if pod_limit is not None:
        level["limits"] = {"cpu": f"{max(pod_limit, pod_request or 0)}m"}
    spec = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{container_cpu}m"}}}],
        "overhead": {"cpu": f"{overhead_cpu}m"},
        "resources": level,
    }
    pod = parse_pod_spec({}, spec, "", name="p", namespace="default")
    if pod_request is not None:
        want = pod_request
    elif pod_limit is not None:
        want = container_cpu if container_cpu else pod_limit  # the API server's defaulting
    else:
        want = container_cpu
    assert pod.requests.get("cpu", 0) == want + overhead_cpu and pod.requests["pods"] == 1000


@given(catalogs(), pools(), pod_lists())
def test_exact_small_sets_never_cost_more_than_the_heuristic(
    cat: list[InstanceType], nps: list[NodePool], pods: list[Pod]
) -> None:
    """Issue 16 item 10: the exact re-solve of small groups is feasible and never dearer than the bulk packer."""
    from unittest import mock

    from packing.scheduling import exact

    s = Scheduler(nps, cat)
    with mock.patch.object(exact, "MAX_PODS", 0):
        heuristic = s.solve(pods)
    r = s.solve(pods)
    assert check_plan(s, pods, r) == []
    assert r.unschedulable.keys() == heuristic.unschedulable.keys()
    assert r.cost_per_hour <= heuristic.cost_per_hour + 1e-9
    assert len({c.name for c in r.nodeclaims}) == len(r.nodeclaims)


@given(catalogs(), pod_lists(), st.sampled_from([["on-demand"], ["spot"], ["spot", "on-demand"]]))
def test_equal_weights_never_cost_more_than_name_order(
    cat: list[InstanceType], pods: list[Pod], capacity: list[str]
) -> None:
    """Issue 16 item 7: of pools of equal weight the plan keeps the cheaper order; never more unschedulable
    pods, never a dearer plan than Karpenter's name order, and feasible."""
    from packing.scheduling.solve import Solve

    nps = [
        NodePool("a", Requirements([Requirement.new(CT, "In", ["on-demand"])])),
        NodePool("b", Requirements([Requirement.new(CT, "In", capacity)])),
        NodePool("c", Requirements([Requirement.new("kubernetes.io/arch", "In", ["arm64"])])),
    ]
    s = Scheduler(nps, cat)
    r = s.solve(pods)
    by_name = Solve(s, pods, frozenset()).run(False)
    assert check_plan(s, pods, r) == []
    assert len(r.unschedulable) <= len(by_name.unschedulable)
    if len(r.unschedulable) == len(by_name.unschedulable):
        assert r.cost_per_hour <= by_name.cost_per_hour + 1e-9


@given(catalogs(), st.lists(st.tuples(st.integers(1, 40), st.integers(1, 64)), min_size=2, max_size=8))
def test_exact_enumeration_and_integer_program_agree(cat: list[InstanceType], shapes: list[tuple[int, int]]) -> None:
    """Issue 16 item 10: on a few pods the subset enumeration is optimal, so the HiGHS program (forced with
    MAX_ENUMERATED = 0) never finds a cheaper plan; both are feasible and never dearer than the heuristic."""
    from unittest import mock

    from packing.scheduling import exact

    pods = [
        Pod(f"p{i}", requests=Resources({"cpu": c * 100, "memory": m * 128 * 2**20 * 1000, "pods": 1000}))
        for i, (c, m) in enumerate(shapes)
    ]
    s = Scheduler([NodePool("default")], cat)
    with mock.patch.object(exact, "MAX_PODS", 0):
        heuristic = s.solve(pods)
    enumerated = s.solve(pods)
    with mock.patch.object(exact, "MAX_ENUMERATED", 0):
        program = s.solve(pods)
    for r in (enumerated, program):
        assert check_plan(s, pods, r) == []
        assert r.unschedulable.keys() == heuristic.unschedulable.keys()
        assert r.cost_per_hour <= heuristic.cost_per_hour + 1e-9
    assert enumerated.cost_per_hour <= program.cost_per_hour + 1e-9


def _values_of(it: InstanceType, key: str) -> set[str]:
    if key == ZONE:
        return {o.zone for o in it.offerings if o.available}
    if key == "node.kubernetes.io/instance-type":
        return {it.name}
    return {it.labels[key]} if key in it.labels else set()


@given(
    catalogs(),
    pod_lists(),
    st.sampled_from([ZONE, "node.kubernetes.io/instance-type", "kubernetes.io/arch"]),
    st.integers(1, 3),
    st.sampled_from(["Strict", "BestEffort"]),
)
def test_min_values_kept_or_reported(
    cat: list[InstanceType], pods: list[Pod], key: str, minimum: int, policy: str
) -> None:
    """minValues (issue 16 item 6): under Strict every NodeClaim's options keep the minimum; under BestEffort
    a claim that does not keep it says so, and minValues never makes a pod unschedulable."""
    import dataclasses

    from packing.requirements import MinValuesPolicy

    req = dataclasses.replace(Requirement.new(key, "Exists"), min_values=minimum)
    s = Scheduler([NodePool("default", Requirements([req]))], cat, min_values_policy=MinValuesPolicy(policy))
    r = s.solve(pods)
    assert check_plan(s, pods, r) == []
    by_name = {it.name: it for it in cat}
    for c in r.nodeclaims:
        kept: set[str] = set()
        for t in c.instance_type_options:
            kept |= _values_of(by_name[t], key)
        if policy == "Strict" or not c.min_values_relaxed:
            assert len(kept) >= minimum, (c.instance_type_options, key, minimum)
    if policy == "BestEffort":
        free = Scheduler([NodePool("default")], cat).solve(pods)
        assert r.unschedulable.keys() == free.unschedulable.keys()


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


@given(catalogs(), pools(), pod_lists(), clusters(), st.data())
def test_static_pools_launch_nothing_and_their_nodes_still_take_pods(
    cat: list[InstanceType],
    nps: list[NodePool],
    pods: list[Pod],
    cluster: tuple[list[ExistingNodeSpec], list[Pod]],
    data: st.DataObject,
) -> None:
    """Static NodePools (spec.replicas): no plan launches a node from one; the other pools plan as before, the
    pods a static pool would have taken aside; every pod left over names each pool, static ones included."""
    nodes, running = cluster
    static = data.draw(st.sets(st.sampled_from([p.name for p in nps])))
    mixed = [dataclasses.replace(p, replicas=2, weight=0, limits=None) if p.name in static else p for p in nps]
    s = Scheduler(mixed, cat, nodes, running)
    r = s.solve(pods)
    assert check_plan(s, pods, r) == []
    assert not any(c.nodepool in static for c in r.nodeclaims)
    for reasons in r.unschedulable.values():
        assert [p for p, _ in reasons] == [p.name for p in s.nodepools]
    # with every pool static, only existing nodes take pods
    frozen = Scheduler([dataclasses.replace(p, replicas=1) for p in nps], cat, nodes, running).solve(pods)
    assert frozen.nodeclaims == []


# ---------------------------------------------------------------- the history file (packing.history)
@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Any], dict[str, Any]]:
    """A consistent random history (pods arrive before they are bound or leave, nodes launch before they end)
    and its templates; free text may hold any character, U+2028 and newlines included."""
    from datetime import UTC, datetime, timedelta

    from packing.history import (
        InterruptionKind,
        NodeInterrupted,
        NodeLaunched,
        NodeTerminated,
        OfferingPrice,
        PodArrived,
        PodBound,
        PodDeparted,
        PodEnd,
        Prices,
        spec_id,
        template_of,
    )

    text = st.text(min_size=1, max_size=12)
    templates = {}
    for cpu in draw(st.lists(st.sampled_from(["100m", "1", "2500m", "7"]), min_size=1, max_size=3, unique=True)):
        t = template_of({"metadata": {"labels": {"app": draw(st.sampled_from(["a", "b"]))}},
                         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}})
        templates[spec_id(t)] = t
    at = datetime(2026, 12, 3, tzinfo=UTC)
    pods: dict[str, bool] = {}
    nodes: set[str] = set()
    events: list[Any] = []
    for _ in range(draw(st.integers(0, 25))):
        at += timedelta(microseconds=draw(st.integers(0, 5_000_000)))
        op = draw(st.integers(0, 6))
        name = draw(st.sampled_from(["p1", "p2", "p3", "n1", "n2"]))
        if op == 0 and name.startswith("p") and name not in pods:
            events.append(PodArrived(at, "ns", name, draw(st.sampled_from(sorted(templates))), uid=draw(text),
                                     owner_kind="ReplicaSet", owner_name=draw(text)))
            pods[name] = False
        elif op == 1 and name in pods and not pods[name]:
            events.append(PodBound(at, "ns", name, draw(text)))
            pods[name] = True
        elif op == 2 and name in pods:
            events.append(PodDeparted(at, "ns", name, draw(st.sampled_from(list(PodEnd)))))
            del pods[name]
        elif op == 3 and name.startswith("n") and name not in nodes:
            events.append(NodeLaunched(at, name, "m5.large", "us-east-1a", "spot",
                                       draw(st.none() | st.floats(0, 1000, allow_nan=False)), labels={"k": draw(text)}))
            nodes.add(name)
        elif op == 4 and name in nodes:
            events.append(NodeInterrupted(at, name, draw(st.sampled_from(list(InterruptionKind)))))
        elif op == 5 and name in nodes:
            events.append(NodeTerminated(at, name, draw(st.text(max_size=20))))
            nodes.discard(name)
        elif op == 6:
            events.append(Prices(at, (OfferingPrice("m5.large", "us-east-1a", "spot",
                                                    draw(st.none() | st.floats(0, 1000, allow_nan=False))),)))
    return events, templates


@given(histories())
def test_a_history_written_reads_back_the_same(history: tuple[list[Any], dict[str, Any]]) -> None:
    import io

    from packing.history import Header, HistoryWriter, read_history

    events, templates = history
    out = io.StringIO()
    writer = HistoryWriter(out, Header(source="property"))
    for sid, t in templates.items():
        writer.add_template(sid, t)
    writer.write_all(events)
    text = out.getvalue()
    lines = text.split("\n")[:-1]  # a file is read at newlines only
    back = read_history(lines, "h.jsonl")
    assert back.events == events
    assert len(lines) == 1 + len(events) + len(back.templates)
@st.composite
def on_demand_shares(draw: st.DrawFn) -> dict[tuple[str, str, str], OnDemandShare]:
    """Shares for the workloads w-a, w-b, w-c (the pods of app a, b, c) and sometimes for pool "default"."""
    out: dict[tuple[str, str, str], OnDemandShare] = {}
    for app in draw(st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3)):
        out[("Deployment", "default", f"w-{app}")] = OnDemandShare(
            draw(st.integers(0, 4)), draw(st.sampled_from([0, 20, 50, 100]))
        )
    if draw(st.booleans()):
        out[("NodePool", "", "default")] = OnDemandShare(draw(st.integers(0, 3)), draw(st.sampled_from([0, 34, 100])))
    return out


def _owned(pods: list[Pod]) -> list[Pod]:
    return [dataclasses.replace(p, owner_kind="Deployment", owner_name=f"w-{p.labels.get('app', 'x')}") for p in pods]


@given(catalogs(), pools(), pod_lists(), clusters(), on_demand_shares(), st.lists(st.booleans(), max_size=5))
def test_every_plan_keeps_each_on_demand_share_where_the_pool_allows_on_demand(
    cat: list[InstanceType],
    nps: list[NodePool],
    pods: list[Pod],
    cluster: tuple[list[ExistingNodeSpec], list[Pod]],
    shares: dict[tuple[str, str, str], OnDemandShare],
    spot_nodes: list[bool],
) -> None:
    nodes, running = cluster
    # some existing nodes are spot, the others on-demand; running pods belong to the workloads too
    nodes = [
        dataclasses.replace(n, labels={**n.labels, CT: "spot" if i < len(spot_nodes) and spot_nodes[i] else "on-demand"})
        for i, n in enumerate(nodes)
    ]
    running, pods = _owned(running), _owned(pods)
    s = Scheduler(nps, cat, nodes, running)
    sp = split(ShareBook(shares), s.nodepools, pods, running, nodes)
    r = settle(sp, s.solve(sp.pods))
    assert check_plan(s, sp.pods, r) == []
    ct = {n.name: n.labels[CT] for n in nodes}
    placed: dict[str, str] = {}
    for c in r.nodeclaims:
        placed.update({p.key: c.capacity_type for p in c.pods})
    for e in r.existing:
        placed.update({p.key: ct[e.name] for p in e.pods})
    # a pod the share puts on on-demand lands on on-demand, or is unschedulable saying why first
    for key in sp.restricted:
        if key in placed:
            assert placed[key] == "on-demand"
        else:
            assert r.unschedulable_reasons[key][0].kind is ReasonKind.ON_DEMAND_SHARE
    rows = {row.workload: row for row in r.on_demand_share}
    contracts, of = ShareBook(shares).contracts(s.nodepools, [*running, *pods])  # whom the shares bind
    for w, c in contracts.items():
        members = [p for p in (*running, *pods) if of.get(p.key) == w]
        on_demand = sum(1 for p in members if (ct.get(p.node_name) if p.node_name else placed.get(p.key)) == "on-demand")
        unplaced = sum(1 for p in members if not p.node_name and p.key not in placed)
        pending = sum(1 for p in members if not p.node_name)
        running_od = sum(1 for p in members if p.node_name and ct[p.node_name] == "on-demand")
        assert rows[str(w)].on_demand == on_demand and rows[str(w)].required == c.required
        if c.pool_allows_on_demand:
            # at least the required replicas run on on-demand, unless pods of the workload found no place at all,
            # or too few are pending to make up for those already running on spot (provisioning moves no pod)
            assert on_demand + unplaced >= min(c.required, running_od + pending)
@st.composite
def overlay_lists(draw: st.DrawFn) -> list[NodeOverlay]:
    out = []
    for i in range(draw(st.integers(0, 5))):
        reqs = []
        if draw(st.booleans()):
            reqs.append(Requirement.new(CT, "In", [draw(st.sampled_from(["spot", "on-demand"]))]))
        if draw(st.booleans()):
            reqs.append(Requirement.new(ZONE, draw(st.sampled_from(["In", "NotIn"])), [draw(st.sampled_from(ZONES))]))
        kind = draw(st.integers(0, 3))
        price = round(draw(st.floats(0, 2)), 4) if kind == 1 else None
        adjustment = draw(st.sampled_from(["+0.1", "-0.05", "-10%", "+15%", "-100%", "-5"])) if kind == 2 else None
        capacity = Resources({"example.com/dongle": draw(st.integers(1, 4)) * 1000}) if kind == 3 else Resources()
        out.append(NodeOverlay(f"o{i}", Requirements(reqs), price, adjustment, capacity, draw(st.integers(0, 3))))
    return out


@given(catalogs(), overlay_lists(), st.randoms(use_true_random=False))
def test_overlays_are_order_free_never_negative_and_touch_only_what_they_select(
    cat: list[InstanceType], overlays: list[NodeOverlay], rnd: Any
) -> None:
    result = resolve_overlays(cat, overlays)
    shuffled = list(overlays)
    rnd.shuffle(shuffled)
    again = resolve_overlays(cat, shuffled)
    # the input order of the overlays does not matter (Karpenter orders them by weight, then name)
    assert again.types == result.types and again.conflicts == result.conflicts
    for before, after in zip(cat, result.types, strict=True):
        assert after.name == before.name and len(after.offerings) == len(before.offerings)
        for o0, o1 in zip(before.offerings, after.offerings, strict=True):
            assert o1.price is None or o1.price >= 0
            if o1.price != o0.price:
                assert o1.overlays  # a changed price names the overlay that changed it
        # cpu, memory and pods are never overlaid
        for key in ("cpu", "pods"):
            assert after.capacity.get(key) == before.capacity.get(key)
    # a conflicting overlay is applied nowhere
    out = {c.overlay for c in result.conflicts}
    assert not out & {name for t in result.types for o in t.offerings for name in o.overlays}
@st.composite
def reserved_catalogs(draw: st.DrawFn) -> list[InstanceType]:
    """catalogs() with reserved offerings on some types: one or two reservations, each shared by offerings of
    one type in one zone (sometimes seen twice, with different free counts, as through two NodeClasses)."""
    from tests.engine_builders import with_reservation

    cat = draw(catalogs())
    for k in range(draw(st.integers(1, 2))):
        i = draw(st.integers(0, len(cat) - 1))
        zone = next(o.zone for o in cat[i].offerings)
        free = draw(st.integers(0, 4))
        cat[i] = with_reservation(cat[i], f"cr-{k}", free, zone=zone, price=draw(st.sampled_from([None, 0.01])))
        if draw(st.booleans()):
            cat[i] = with_reservation(cat[i], f"cr-{k}", free + 1, zone=zone)
    return cat


@st.composite
def reserved_pools(draw: st.DrawFn) -> list[NodePool]:
    cts = draw(st.sampled_from([["reserved"], ["reserved", "spot", "on-demand"], ["reserved", "on-demand"]]))
    return [NodePool("default", Requirements([Requirement.new(CT, "In", cts)]))]


@given(reserved_catalogs(), reserved_pools(), pod_lists(), st.integers(0, 2))
def test_no_reservation_is_overfilled_and_effective_cost_is_bounded(
    cat: list[InstanceType], nps: list[NodePool], pods: list[Pod], inflight: int
) -> None:
    from packing.scheduling.reservations import RESERVATION_ID_LABEL

    nodes = [
        ExistingNodeSpec(
            f"claim{i}",
            {ZONE: ZONES[0], HOST: f"claim{i}", CT: "reserved", RESERVATION_ID_LABEL: "cr-0"},
            Resources.parse({"cpu": "1", "memory": "1Gi", "pods": "10"}),
            kind="NodeClaim",
        )
        for i in range(inflight)
    ]
    s = Scheduler(nps, cat, nodes)
    r = s.solve(pods, lower_bound=True)
    # check_plan counts the NodeClaims on each reservation against its free instances (less the in-flight ones)
    assert check_plan(s, pods, r) == []
    # the bound prices reserved capacity as the solve does (prepaid: 0): the plan's bill never goes below it
    assert r.lower_bound is not None and r.lower_bound <= r.effective_cost_per_hour + 1e-9
    assert r.effective_cost_per_hour <= r.cost_per_hour + 1e-9


@given(reserved_catalogs(), pod_lists(), st.data())
def test_a_reservation_serves_only_the_pools_that_may_use_it(
    cat: list[InstanceType], pods: list[Pod], data: st.DataObject
) -> None:
    # Reservation.node_classes (empty = any) and the pool's capacity-type requirement (none = no reserved)
    import dataclasses

    classes = ["default", "gpu"]
    scope = {f"cr-{k}": frozenset(data.draw(st.sets(st.sampled_from(classes)))) for k in range(2)}
    cat = [
        dataclasses.replace(it, offerings=tuple(
            dataclasses.replace(o, reservation=dataclasses.replace(o.reservation, node_classes=scope[o.reservation.id]))
            if o.reservation is not None else o
            for o in it.offerings
        ))
        for it in cat
    ]
    pools = []
    for i, node_class in enumerate(classes):
        cts = data.draw(st.sampled_from([None, ["reserved"], ["reserved", "on-demand"], ["spot", "on-demand"]]))
        reqs = Requirements([Requirement.new(CT, "In", cts)]) if cts else Requirements([])
        pools.append(NodePool(f"p{i}", reqs, node_class=node_class))
    s = Scheduler(pools, cat, [])
    r = s.solve(pods)
    assert check_plan(s, pods, r) == []
    by_name = {p.name: p for p in pools}
    for c in r.nodeclaims:
        if c.reservation_id is None:
            continue
        pool = by_name[c.nodepool]
        cr = pool.requirements.get(CT)
        assert cr is not None and cr.has("reserved")
        assert not scope[c.reservation_id] or pool.node_class in scope[c.reservation_id]


@given(reserved_catalogs(), pod_lists(), st.data())
def test_consolidation_never_overfills_a_reservation_or_a_commitment(
    cat: list[InstanceType], pods: list[Pod], data: st.DataObject
) -> None:
    from packing.disruption import consolidate
    from tests.engine_builders import AT, all_capacity_pool, cluster, node

    types = [it for it in cat if any(o.capacity_type == "on-demand" for o in it.offerings)]
    if not types:
        return
    nodes = []
    running = []
    for i in range(data.draw(st.integers(1, 5))):
        it = data.draw(st.sampled_from(types))
        zone = next(o.zone for o in it.offerings if o.capacity_type == "on-demand")
        nodes.append(node(f"n{i}", it, zone=zone))
        for j, p in enumerate(pods[i::5][:2]):
            running.append(dataclasses.replace(p, name=f"r{i}-{j}", node_name=f"n{i}"))
    from packing.commitments import Commitment, CommitmentKind

    ri_count = data.draw(st.integers(0, 2))
    ri_type = data.draw(st.sampled_from(types)).name
    ri = Commitment("ri", CommitmentKind.RESERVED_INSTANCES, instance_type=ri_type, count=ri_count)
    c = dataclasses.replace(cluster(nodes, running, pools=[all_capacity_pool()], cat=cat), commitments=[ri])
    report = consolidate(c, AT)
    # a commitment is never used by more replacements than it covers
    assert sum(1 for a in report.actions for rep in a.replacements if rep.get("covered_by") == ["ri"]) <= ri_count
    free: dict[str, int] = {}
    for it in cat:
        for o in it.offerings:
            if o.reservation is not None:
                rid = o.reservation.id
                free[rid] = min(free.get(rid, o.reservation.available), o.reservation.available)
    launched: dict[str, int] = {}
    for a in report.actions:
        for rep in a.replacements:
            rid = rep.get("reservation_id")
            if rid is not None:
                launched[rid] = launched.get(rid, 0) + 1
    assert all(launched[rid] <= free[rid] for rid in launched)


@given(catalogs(), pools(), pod_lists(), st.data())
def test_commitment_priced_plans_are_feasible_and_bounded(
    cat: list[InstanceType], nps: list[NodePool], pods: list[Pod], data: st.DataObject
) -> None:
    from packing.commitmentpricing import priced_catalog, settle_plan
    from packing.commitments import Commitment, CommitmentKind

    names = [it.name for it in cat]
    commitments = []
    if data.draw(st.booleans()):
        ri_type = data.draw(st.sampled_from(names))
        commitments.append(
            Commitment("ri", CommitmentKind.RESERVED_INSTANCES, instance_type=ri_type, count=data.draw(st.integers(0, 4)))
        )
    if data.draw(st.booleans()):
        rates = {n: data.draw(st.sampled_from([0.0, 0.2, 0.5, 0.9])) for n in names if data.draw(st.booleans())}
        hourly = data.draw(st.sampled_from([0.05, 0.3, 2.0]))
        commitments.append(Commitment("sp", CommitmentKind.COMPUTE_SAVINGS_PLAN, hourly_commitment=hourly, rates=rates))
    priced = priced_catalog(cat, commitments, [])
    s = Scheduler(nps, priced)
    r = s.solve(pods, lower_bound=True)
    assert check_plan(s, pods, r) == []
    settle_plan(r, cat, commitments, [])
    # the bound is computed over the same marginal prices: the effective bill never goes below it
    assert r.lower_bound is not None and r.lower_bound <= r.effective_cost_per_hour + 1e-9
    for u in r.commitments:
        assert u.used_by_plan <= u.total + 1e-9
    for c in r.nodeclaims:
        assert c.effective_price_per_hour is None or -1e-9 <= c.effective_price_per_hour <= c.price_per_hour + 1e-9
