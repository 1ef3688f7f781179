"""DaemonSets on new and existing nodes: their overhead counts only on the pools and instance types their pods
land on (nodeSelector, required node affinity, tolerations), and their host ports keep colliding pods off
those nodes, in plans and in consolidation's what-ifs alike (issue 16 items 2 and 3)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from packing.disruption import consolidate
from packing.nodepool import DaemonSet, NodePool
from packing.pods import HostPort, Pod
from packing.requirements import Requirements
from packing.resources import Resources
from packing.scheduling.reasons import ReasonKind
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.verify import check_plan
from packing.taints import Taint, Toleration
from tests.engine_builders import (
    AT,
    IT,
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
    tol,
)

ARCH = "kubernetes.io/arch"
CONTROL_PLANE = "node-role.kubernetes.io/control-plane"


def daemonset(
    name: str,
    cpu: str = "1",
    memory: str = "1Gi",
    *,
    selector: Mapping[str, str] | None = None,
    terms: tuple[Requirements, ...] = (),
    tolerations: tuple[Toleration, ...] = (),
    ports: tuple[HostPort, ...] = (),
) -> DaemonSet:
    p = Pod(
        name,
        namespace="kube-system",
        requests=Resources.parse({"cpu": cpu, "memory": memory, "pods": "1"}),
        node_selector=dict(selector or {}),
        required_terms=terms,
        tolerations=tolerations,
        host_ports=ports,
    )
    return DaemonSet("kube-system", name, p)


def with_ports(p: Pod, *ports: HostPort) -> Pod:
    return dataclasses.replace(p, host_ports=ports)


def solve(pods: list[Pod], dss: list[DaemonSet], pools: list[NodePool] | None = None, **kw: object) -> tuple[Scheduler, Results]:
    s = Scheduler(pools or [on_demand_pool()], kw.pop("cat", None) or catalog(), daemonsets=dss, **kw)  # type: ignore[arg-type]
    r = s.solve(pods, lower_bound=True)
    assert check_plan(s, pods, r) == []
    assert r.lower_bound is not None and r.lower_bound <= r.cost_per_hour + 1e-9
    return s, r


# ---------------------------------------------------------------- overhead only where the DaemonSet lands
def test_control_plane_daemonset_adds_nothing() -> None:
    cp = daemonset(
        "cp-agent", "2", "2Gi", selector={CONTROL_PLANE: ""}, tolerations=(tol(CONTROL_PLANE, op="Exists"),)
    )
    _, r = solve([pod("p", "1", "1Gi")], [cp])
    assert r.nodeclaims[0].requests["cpu"] == 1000 and r.nodeclaims[0].requests["pods"] == 1000
    _, plain = solve([pod("p", "1", "1Gi")], [])
    assert r.cost_per_hour == plain.cost_per_hour


def test_daemonset_on_a_label_no_pool_offers_adds_nothing() -> None:
    odd = daemonset("odd", "3", "3Gi", terms=(req("example.com/rack", "In", "r1"),))
    _, r = solve([pod("p", "1", "1Gi")], [odd])
    assert r.nodeclaims[0].requests["cpu"] == 1000


def test_daemonset_counts_on_pool_label_it_selects() -> None:
    labelled = on_demand_pool(labels={"purpose": "monitoring"})
    ds = daemonset("mon", "1", "1Gi", selector={"purpose": "monitoring"})
    _, r = solve([pod("p", "1", "1Gi")], [ds], [labelled])
    assert r.nodeclaims[0].requests["cpu"] == 2000


def test_overhead_per_instance_type() -> None:
    # the 2-cpu DaemonSet runs on arm64 nodes only: the amd64 claim carries none of it, the arm64 one all of it
    arm_ds = daemonset("arm-agent", "2", "1Gi", selector={ARCH: "arm64"})
    amd = pod("amd", "1", "1Gi", node_selector={ARCH: "amd64"})
    arm = pod("arm", "1", "1Gi", node_selector={ARCH: "arm64"})
    _, r = solve([amd, arm], [arm_ds])
    by_pod = {c.pods[0].name: c for c in r.nodeclaims}
    assert by_pod["amd"].requests["cpu"] == 1000
    assert by_pod["arm"].requests["cpu"] == 3000 and by_pod["arm"].instance_type == "a-4x"
    # 1 + 3 cpu does not fit the arm type's 3900m allocatable, so the arm pod cannot be placed; the amd one can
    _, r = solve([amd, pod("arm2", "1", "1Gi", node_selector={ARCH: "arm64"})], [daemonset("big", "3500m", selector={ARCH: "arm64"})])
    assert [c.pods[0].name for c in r.nodeclaims] == ["amd"] and "default/arm2" in r.unschedulable


def test_instance_type_alternatives_hold_their_own_overhead() -> None:
    # a DaemonSet pinned to c-2x: that type cannot hold the 1.5-cpu pod next to it, every other type can
    pinned = daemonset("pinned", "1", "256Mi", terms=(req(IT, "In", "c-2x"),))
    _, r = solve([pod("p", "1500m", "1Gi")], [pinned])
    c = r.nodeclaims[0]
    assert "c-2x" not in c.instance_type_options and c.requests["cpu"] == 1500
    _, alone = solve([pod("p", "1500m", "1Gi")], [])
    assert alone.nodeclaims[0].instance_type == "c-2x"


def test_pod_by_pod_claims_count_the_overhead_once() -> None:
    # a pod with a host port goes pod by pod; 2 cpu + the DaemonSet's 1 cpu fit a 4-cpu type (3900m)
    ds = daemonset("agent", "1", "1Gi")
    p = with_ports(pod("p", "2", "1Gi"), HostPort(9000))
    cat = [instance_type("c-4x", 4, 8, 0.17), instance_type("c-8x", 8, 16, 0.34)]
    _, r = solve([p], [ds], cat=cat)
    c = r.nodeclaims[0]
    assert c.instance_type == "c-4x" and c.requests["cpu"] == 3000
    assert c.instance_type_options == ["c-4x", "c-8x"]


def test_untolerated_pool_taint_keeps_daemonset_off() -> None:
    tainted = on_demand_pool("t", taints=(Taint("dedicated", "x", "NoSchedule"),))
    ds = daemonset("agent", "1", "1Gi")
    tolerant = daemonset("tolerant", "1", "1Gi", tolerations=(tol("dedicated", "x"),))
    _, r = solve([pod("p", "1", "1Gi", tolerations=(tol("dedicated", "x"),))], [ds, tolerant], [tainted])
    assert r.nodeclaims[0].requests["cpu"] == 2000


def test_well_known_label_undefined_by_the_catalog_still_lands() -> None:
    # no type carries topology.kubernetes.io/region; every node will, so the DaemonSet counts
    ds = daemonset("regional", "1", "1Gi", selector={"topology.kubernetes.io/region": "us-east-1"})
    _, r = solve([pod("p", "1", "1Gi")], [ds])
    assert r.nodeclaims[0].requests["cpu"] == 2000


# ---------------------------------------------------------------- host ports
def test_daemonset_host_port_blocks_new_nodes_with_reason() -> None:
    ds = daemonset("proxy", "100m", ports=(HostPort(8080),))
    _, r = solve([with_ports(pod("p"), HostPort(8080))], [ds])
    assert r.nodeclaims == []
    (why,) = r.unschedulable_reasons["default/p"]
    assert why.kind == ReasonKind.DAEMONSET_HOST_PORT
    assert dict(why.detail) == {"port": 8080, "protocol": "TCP", "daemonset": "kube-system/proxy"}
    assert why.text == "host port 8080/TCP in use by DaemonSet kube-system/proxy"


def test_host_port_collision_follows_protocol_and_ip() -> None:
    wildcard = daemonset("proxy", "100m", ports=(HostPort(8080, "TCP", "0.0.0.0"),))
    specific = daemonset("proxy", "100m", ports=(HostPort(8080, "TCP", "10.0.0.2"),))
    on_ip = with_ports(pod("p"), HostPort(8080, "TCP", "10.0.0.1"))
    assert solve([on_ip], [wildcard])[1].nodeclaims == []
    assert len(solve([on_ip], [specific])[1].nodeclaims) == 1  # two different addresses
    udp = with_ports(pod("p"), HostPort(8080, "UDP"))
    assert len(solve([udp], [wildcard])[1].nodeclaims) == 1
    any_ip = with_ports(pod("p"), HostPort(8080, "TCP", ""))
    assert solve([any_ip], [specific])[1].nodeclaims == []


def test_daemonset_host_port_only_where_it_lands() -> None:
    # the port is taken on arm64 nodes only: the pod goes to an amd64 type
    ds = daemonset("arm-proxy", "100m", selector={ARCH: "arm64"}, ports=(HostPort(8080),))
    _, r = solve([with_ports(pod("p", "1", "1Gi"), HostPort(8080))], [ds])
    c = r.nodeclaims[0]
    assert c.labels[ARCH] == "amd64" and "a-4x" not in c.instance_type_options
    # pinned to arm64 it has nowhere to go
    _, r = solve([with_ports(pod("p", "1", "1Gi", node_selector={ARCH: "arm64"}), HostPort(8080))], [ds])
    assert r.unschedulable_reasons["default/p"][0].kind == ReasonKind.DAEMONSET_HOST_PORT


def test_existing_nodes_running_or_about_to_run_the_daemonset() -> None:
    ds = daemonset("proxy", "100m", ports=(HostPort(8080),))
    inflight = existing_node("claim-1", instance_type="c-4x", kind="NodeClaim", initialized=False)
    running = existing_node("n1", instance_type="c-4x")
    ds_pod = bound_pod("proxy-abc", "n1", "100m", owner_kind="DaemonSet", owner_name="proxy", namespace="kube-system")
    ds_pod = dataclasses.replace(ds_pod, host_ports=(HostPort(8080),))
    p = with_ports(pod("p", "100m", "128Mi"), HostPort(8080))
    s = Scheduler([on_demand_pool()], catalog(), [running, inflight], [ds_pod], [ds])
    r = s.solve([p])
    assert check_plan(s, [p], r) == []
    assert all(e.pods == [] for e in r.existing) and r.nodeclaims == []
    # without the DaemonSet the in-flight claim takes it (the running pod still holds n1's port)
    s = Scheduler([on_demand_pool()], catalog(), [running, inflight], [ds_pod], [])
    r = s.solve([p])
    assert [e.name for e in r.existing if e.pods] == ["claim-1"]


def test_existing_node_reserves_the_daemonsets_not_running_there_yet() -> None:
    """Karpenter's ExistingNode: the remaining daemon resources (compatible DaemonSets whose pod is not on the
    node yet) are kept out of the room pending pods may take."""
    agent = daemonset("agent", "2", "1Gi")
    inflight = existing_node("claim-1", cpu="4", instance_type="c-4x", kind="NodeClaim", initialized=False)
    p = pod("p", "3", "1Gi")
    _, r = solve([p], [agent], existing_nodes=[inflight])
    assert all(e.pods == [] for e in r.existing) and len(r.nodeclaims) == 1
    # the agent already runs there: its requests are among the running pods', nothing more is reserved
    running_agent = bound_pod("agent-x", "claim-1", "2", owner_kind="DaemonSet", owner_name="agent",
                              namespace="kube-system")  # fmt: skip
    small = pod("s", "1500m", "1Gi")
    s, r = solve([small], [agent], existing_nodes=[inflight], running_pods=[running_agent])
    assert [e.name for e in r.existing if e.pods] == ["claim-1"] and r.nodeclaims == []
    # a DaemonSet that does not run there (untolerated taint, a nodeSelector the node fails) reserves nothing
    tainted = dataclasses.replace(inflight, taints=(Taint("dedicated", "db", "NoSchedule"),))
    p_tol = dataclasses.replace(p, tolerations=(tol("dedicated", "db"),))
    _, r = solve([p_tol], [agent], existing_nodes=[tainted])
    assert [e.name for e in r.existing if e.pods] == ["claim-1"]
    picky = daemonset("picky", "2", selector={ARCH: "arm64"})
    _, r = solve([p], [picky], existing_nodes=[inflight])
    assert [e.name for e in r.existing if e.pods] == ["claim-1"]
    # two DaemonSets, one of them running: only the other is reserved
    other = daemonset("other", "1", "512Mi")
    _, r = solve([pod("q", "1500m", "1Gi")], [agent, other], existing_nodes=[inflight], running_pods=[running_agent])
    assert r.nodeclaims and all(e.pods == [] for e in r.existing)
    _, r = solve([pod("q", "900m", "1Gi")], [agent, other], existing_nodes=[inflight], running_pods=[running_agent])
    assert [e.name for e in r.existing if e.pods] == ["claim-1"]


def test_existing_node_refusal_names_the_daemonset() -> None:
    from packing.scheduling.existingnode import ExistingNode
    from packing.scheduling.preferences import PodContext
    from packing.scheduling.topology import Topology

    ds = daemonset("proxy", "100m", ports=(HostPort(8080),))
    spec = existing_node("claim-1", instance_type="c-4x", kind="NodeClaim", initialized=False)
    keys = ("cpu", "memory", "pods")
    n = ExistingNode(spec, (4000, 8 * 2**30 * 1000, 110_000), [], None, (), [ds])
    why = n.can_add(PodContext(with_ports(pod("p", "100m", "128Mi"), HostPort(8080)), keys), Topology())
    assert why.reason.kind == ReasonKind.DAEMONSET_HOST_PORT  # type: ignore[union-attr]
    assert why.reason.detail["daemonset"] == "kube-system/proxy"  # type: ignore[union-attr]


# ---------------------------------------------------------------- consolidation what-ifs
def test_consolidation_replacement_ignores_daemonsets_that_do_not_land() -> None:
    cat = {it.name: it for it in small_catalog()}
    pods = [bound_pod("a", "n1", "500m", "512Mi")]
    cp = daemonset("cp-agent", "1", "1Gi", selector={CONTROL_PLANE: ""})
    c = cluster([node("n1", cat["m-4x"])], pods)
    c.daemonsets = [cp]
    r = consolidate(c, AT)
    (a,) = r.actions
    assert a.type == "replace" and a.replacements[0]["instance_type"] == "c-1x"
    # a DaemonSet that lands on every node needs its 1 cpu next to the pod: a 2-cpu replacement
    c = cluster([node("n1", cat["m-4x"])], pods)
    c.daemonsets = [daemonset("agent", "1", "1Gi")]
    (a,) = consolidate(c, AT).actions
    assert a.type == "replace" and a.replacements[0]["instance_type"] != "c-1x"
