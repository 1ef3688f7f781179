"""Builders of the engine's inputs for the tests of packing/ (provisioning) and packing/disruption/
(consolidation): resources, instance types and catalogs, NodePools, pods and their selectors, nodes,
PodDisruptionBudgets, disruption settings and whole clusters.

Two catalogs, because the two engines' tests were written against different ones: `catalog()` is the
provisioning tests' (c/m/r families 2x-32x, a GPU and an arm64 type, three zones, kubelet overhead reserved);
`small_catalog()` the consolidation tests' (c/m families 1x-16x, two zones, allocatable = capacity), whose
prices and sizes their expected actions are worked out from."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from packing.disruption import Budget, Cluster, DisruptionSettings, NodeInfo, PodMeta
from packing.instancetype import InstanceType, Offering, Reservation, ReservationType
from packing.nodepool import ExistingNodeSpec, NodePool, PodDisruptionBudget
from packing.ondemandshare import OnDemandShare, ShareBook, bind
from packing.pods import LabelSelector, Pod, PodAffinityTerm, TopologySpread
from packing.requirements import Requirement, Requirements
from packing.resources import Resources
from packing.scheduling.results import Results
from packing.scheduling.scheduler import Scheduler
from packing.scheduling.verify import check_plan
from packing.taints import Taint, Toleration

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
TWO_ZONES = ZONES[:2]  # small_catalog()'s zones
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
CT = "karpenter.sh/capacity-type"
IT = "node.kubernetes.io/instance-type"
POOL = "karpenter.sh/nodepool"
INITIALIZED = "karpenter.sh/initialized"
# the consolidation tests' clock, and the creation time of a node old enough for every method
AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
OLD = AT - timedelta(days=3)

KUBELET_OVERHEAD = Resources.parse({"cpu": "100m", "memory": "256Mi"})


def res(cpu: str = "1", memory: str = "1Gi", **extra: str) -> Resources:
    """Requests of one pod; extra resources by keyword (`__` reads as "/", `_` as "-")."""
    d = {"cpu": cpu, "memory": memory, "pods": "1"}
    d.update({k.replace("__", "/").replace("_", "-"): v for k, v in extra.items()})
    return Resources.parse(d)


def instance_type(
    name: str,
    cpu: int,
    mem_gib: int,
    price: float,
    *,
    zones: Iterable[str] = ZONES,
    spot_factor: float | None = 0.4,
    arch: str = "amd64",
    pods: int = 110,
    extra: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    overhead: Resources = KUBELET_OVERHEAD,
) -> InstanceType:
    """An on-demand offering at `price` in each zone, and a spot one at `price * spot_factor` unless that is
    None; the family label is the name up to its first "-"."""
    cap = {"cpu": str(cpu), "memory": f"{mem_gib}Gi", "pods": str(pods)}
    cap.update(extra or {})
    offerings = []
    for z in zones:
        offerings.append(Offering(z, "on-demand", price))
        if spot_factor is not None:
            offerings.append(Offering(z, "spot", round(price * spot_factor, 6)))
    lab = {
        "kubernetes.io/arch": arch,
        "kubernetes.io/os": "linux",
        "karpenter.k8s.aws/instance-family": name.split("-")[0],
    }
    lab.update(labels or {})
    return InstanceType(name, Resources.parse(cap), overhead, lab, tuple(offerings))


def with_reservation(
    it: InstanceType,
    rid: str,
    available: int,
    *,
    zone: str = "us-east-1a",
    price: float | None = None,
    ends: datetime | None = None,
    block: bool = False,
    interruptible: bool = False,
) -> InstanceType:
    """`it` with a reserved offering in `zone` on reservation `rid` with `available` free instances, listed at
    `price` (the type's on-demand price there unless given); a Capacity Block when `block`."""
    if price is None:
        price = next(o.price for o in it.offerings if o.zone == zone and o.capacity_type == "on-demand")
    r = Reservation(
        rid,
        available,
        ends=ends,
        type=ReservationType.CAPACITY_BLOCK if block else ReservationType.DEFAULT,
        interruptible=interruptible,
    )
    return dataclasses.replace(it, offerings=(*it.offerings, Offering(zone, "reserved", price, reservation=r)))


def all_capacity_pool(name: str = "default", *reqs: Requirement, **kw: object) -> NodePool:
    """A pool allowing reserved, spot and on-demand capacity."""
    return pool(name, Requirement.new(CT, "In", ["reserved", "on-demand", "spot"]), *reqs, **kw)


def small_catalog_type(
    name: str, cpu: int, mem_gib: int, price: float, *, spot_factor: float | None = 0.4, arch: str = "amd64"
) -> InstanceType:
    """An instance type like those of small_catalog(): two zones, nothing reserved."""
    return instance_type(
        name, cpu, mem_gib, price, zones=TWO_ZONES, spot_factor=spot_factor, arch=arch, overhead=Resources()
    )


def catalog() -> list[InstanceType]:
    out = []
    for fam, ratio, per_cpu in (("c", 2, 0.0425), ("m", 4, 0.048), ("r", 8, 0.063)):
        for size in (2, 4, 8, 16, 32):
            out.append(instance_type(f"{fam}-{size}x", size, size * ratio, round(size * per_cpu, 4)))
    out.append(instance_type("g-4x", 4, 16, 1.2, extra={"nvidia.com/gpu": "1"}))
    out.append(instance_type("a-4x", 4, 16, 0.15, arch="arm64"))
    return out


def small_catalog() -> list[InstanceType]:
    out = []
    for fam, ratio, per_cpu in (("c", 2, 0.04), ("m", 4, 0.05)):
        for size in (1, 2, 4, 8, 16):
            out.append(small_catalog_type(f"{fam}-{size}x", size, size * ratio, round(size * per_cpu, 4)))
    return out


def many_spot_types() -> list[InstanceType]:
    """Twenty small spot-capable types: enough for spot-to-spot replacement (15 cheaper types)."""
    return [small_catalog_type(f"s{i}-2x", 2, 8, round(0.05 + 0.001 * i, 4)) for i in range(20)] + [
        small_catalog_type("big-8x", 8, 32, 0.4)
    ]


def pool(name: str = "default", *reqs: Requirement, **kw: object) -> NodePool:
    return NodePool(name, Requirements(reqs), **kw)  # type: ignore[arg-type]


def on_demand_pool(name: str = "default", **kw: object) -> NodePool:
    return pool(name, Requirement.new(CT, "In", ["on-demand"]), **kw)


def mixed_capacity_pool(name: str = "default", *reqs: Requirement, **kw: object) -> NodePool:
    """A pool allowing on-demand and spot, unless `reqs` say which capacity types."""
    base = (Requirement.new(CT, "In", ["on-demand", "spot"]),) if not any(r.key == CT for r in reqs) else ()
    return pool(name, *base, *reqs, **kw)


def pod(name: str, cpu: str = "1", memory: str = "1Gi", **kw: object) -> Pod:
    """A pod, pending unless `node_name` is given; `extra` adds requests: extra={"nvidia.com/gpu": "1"}."""
    extra = kw.pop("extra", None)
    r = res(cpu, memory)
    if extra:
        r = r + Resources.parse(extra)  # type: ignore[arg-type]
    return Pod(name, requests=r, **kw)  # type: ignore[arg-type]


def bound_pod(name: str, node_name: str, cpu: str = "1", memory: str = "1Gi", **kw: object) -> Pod:
    """A pod bound to node `node_name` (running there)."""
    return pod(name, cpu, memory, node_name=node_name, **kw)


def pending_copy(p: Pod) -> Pod:
    return dataclasses.replace(p, node_name="")


def sel(**labels: str) -> LabelSelector:
    return LabelSelector(Requirements([Requirement.new(k, "In", [v]) for k, v in labels.items()]))


def spread(
    key: str, skew: int = 1, when: str = "DoNotSchedule", min_domains: int = 1, **labels: str
) -> TopologySpread:
    return TopologySpread(skew, key, when, sel(**labels), min_domains)


def term(key: str, **labels: str) -> PodAffinityTerm:
    """A pod (anti-)affinity term over `key` for pods with `labels` in namespace "default"."""
    return PodAffinityTerm(sel(**labels), key, frozenset({"default"}))


def req(key: str, op: str, *values: str) -> Requirements:
    return Requirements([Requirement.new(key, op, values)])


def tol(key: str, value: str = "", effect: str = "NoSchedule", op: str = "Equal") -> Toleration:
    return Toleration(key, op, value, effect)


def existing_node(
    name: str,
    cpu: str = "4",
    memory: str = "16Gi",
    *,
    zone: str = "us-east-1a",
    pool_name: str | None = "default",
    instance_type: str = "m-4x",
    ct: str = "on-demand",
    taints: tuple[Taint, ...] = (),
    initialized: bool = True,
    kind: str = "Node",
    labels: Mapping[str, str] | None = None,
) -> ExistingNodeSpec:
    """A node (or, with kind="NodeClaim", an in-flight claim) the provisioning scheduler can place pods on."""
    lab = {
        ZONE: zone,
        HOST: name,
        IT: instance_type,
        CT: ct,
        "kubernetes.io/arch": "amd64",
    }
    if pool_name:
        lab[POOL] = pool_name
    if initialized:
        lab[INITIALIZED] = "true"
    lab.update(labels or {})
    alloc = Resources.parse({"cpu": cpu, "memory": memory, "pods": "110"})
    return ExistingNodeSpec(name, lab, alloc, taints, initialized, kind, capacity=alloc)


def node(
    name: str,
    it: InstanceType,
    *,
    pool_name: str | None = "default",
    zone: str = "us-east-1a",
    ct: str = "on-demand",
    initialized: bool = True,
    taints: tuple[Taint, ...] = (),
    labels: Mapping[str, str] | None = None,
    created: datetime = OLD,
    annotations: Mapping[str, str] | None = None,
    deleting: bool = False,
    ready: bool = True,
) -> NodeInfo:
    """A cluster node of type `it` as the disruption engine sees it: its labels, age and state."""
    lab = dict(it.labels)
    lab.update({ZONE: zone, HOST: name, IT: it.name, CT: ct})
    if pool_name:
        lab[POOL] = pool_name
    if initialized:
        lab[INITIALIZED] = "true"
    lab.update(labels or {})
    spec = ExistingNodeSpec(name, lab, it.allocatable, taints, initialized, "Node", capacity=it.capacity)
    return NodeInfo(spec, created, dict(annotations or {}), deleting, ready)


def pdb(
    name: str, min_available: str | None = None, max_unavailable: str | None = None, **labels: str
) -> PodDisruptionBudget:
    return PodDisruptionBudget("default", name, {"matchLabels": dict(labels)}, min_available, max_unavailable)


def disruption_settings(
    *budgets: Budget,
    policy: str = "WhenEmptyOrUnderutilized",
    after: timedelta | None = timedelta(0),
    expire: timedelta | None = timedelta(hours=720),
    grace: timedelta | None = None,
) -> DisruptionSettings:
    """A NodePool's disruption block; with no budget, Karpenter's default (nodes: 100%). grace: the template's
    terminationGracePeriod."""
    return DisruptionSettings(policy, after, expire, budgets or (Budget(nodes="100%"),), grace)


def cluster(
    nodes: Sequence[NodeInfo],
    pods: Iterable[Pod],
    *,
    pools: Sequence[NodePool] | None = None,
    cat: Sequence[InstanceType] | None = None,
    pool_settings: Mapping[str, DisruptionSettings] | None = None,
    pdbs: Sequence[PodDisruptionBudget] = (),
    meta: Mapping[str, PodMeta] | None = None,
) -> Cluster:
    """The disruption engine's input: pods with a node_name run there, the others are pending; by default one
    mixed-capacity pool "default", small_catalog() and default disruption settings for every pool."""
    pods = list(pods)
    pools = list(pools) if pools is not None else [mixed_capacity_pool()]
    st = dict(pool_settings) if pool_settings is not None else {p.name: disruption_settings() for p in pools}
    return Cluster(
        nodepools=pools,
        catalog=list(cat) if cat is not None else small_catalog(),
        nodes=list(nodes),
        running=[p for p in pods if p.node_name],
        pending=[p for p in pods if not p.node_name],
        pdbs=list(pdbs),
        settings=st,
        pod_meta=dict(meta or {}),
    )


def solve(pods: list[Pod], pools: list[NodePool] | None = None, **kw: object) -> tuple[Scheduler, Results]:
    """A Scheduler's plan for `pods` (one on-demand pool and catalog() unless given), checked by check_plan."""
    s = Scheduler(pools if pools is not None else [on_demand_pool()], kw.pop("cat", None) or catalog(), **kw)  # type: ignore[arg-type]
    r = s.solve(pods, lower_bound=True)
    assert check_plan(s, pods, r) == []
    return s, r


def where(r: Results, name: str) -> str:
    """The NodeClaim or existing node the plan puts pod `name` on."""
    for c in r.nodeclaims:
        if any(p.name == name for p in c.pods):
            return c.name
    for e in r.existing:
        if any(p.name == name for p in e.pods):
            return e.name
    raise AssertionError(f"{name} not placed: {r.unschedulable}")


def with_on_demand_shares(c: Cluster, shares: Mapping[tuple[str, str, str], OnDemandShare]) -> Cluster:
    """The cluster with on-demand shares (packing.ondemandshare) keyed (kind, namespace, name): ("Deployment",
    "default", "web") binds the pods owned by Deployment web; ("NodePool", "", "default") the pool's."""
    book = ShareBook(shares)
    return dataclasses.replace(c, on_demand=bind(book, c.nodepools, [*c.running, *c.pending]))
