"""Builders for disruption tests: a small catalog, pools, nodes with their pods, and the checks every report
must pass (placements re-verified with the provisioning engine's own feasibility check)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from packing.disruption import Budget, Cluster, DisruptionSettings, NodeInfo, PodMeta
from packing.instancetype import InstanceType, Offering
from packing.nodepool import ExistingNodeSpec, NodePool, PodDisruptionBudget
from packing.pods import LabelSelector, Pod, PodAffinityTerm, TopologySpread
from packing.requirements import Requirement, Requirements
from packing.resources import Resources
from packing.taints import Taint

ZONES = ("us-east-1a", "us-east-1b")
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
CT = "karpenter.sh/capacity-type"
IT = "node.kubernetes.io/instance-type"
POOL = "karpenter.sh/nodepool"
AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
OLD = AT - timedelta(days=3)


def res(cpu: str = "1", memory: str = "1Gi") -> Resources:
    return Resources.parse({"cpu": cpu, "memory": memory, "pods": "1"})


def itype(name: str, cpu: int, mem_gib: int, price: float, *, spot: float | None = 0.4, arch: str = "amd64") -> InstanceType:
    offerings = []
    for z in ZONES:
        offerings.append(Offering(z, "on-demand", price))
        if spot is not None:
            offerings.append(Offering(z, "spot", round(price * spot, 6)))
    labels = {"kubernetes.io/arch": arch, "kubernetes.io/os": "linux", "karpenter.k8s.aws/instance-family": name.split("-")[0]}
    cap = Resources.parse({"cpu": str(cpu), "memory": f"{mem_gib}Gi", "pods": "110"})
    return InstanceType(name, cap, Resources(), labels, tuple(offerings))


def catalog() -> list[InstanceType]:
    out = []
    for fam, ratio, per_cpu in (("c", 2, 0.04), ("m", 4, 0.05)):
        for size in (1, 2, 4, 8, 16):
            out.append(itype(f"{fam}-{size}x", size, size * ratio, round(size * per_cpu, 4)))
    return out


def many_spot_types() -> list[InstanceType]:
    """Twenty small spot-capable types: enough for spot-to-spot replacement (15 cheaper types)."""
    return [itype(f"s{i}-2x", 2, 8, round(0.05 + 0.001 * i, 4)) for i in range(20)] + [itype("big-8x", 8, 32, 0.4)]


def pool(name: str = "default", *reqs: Requirement, **kw: object) -> NodePool:
    base = (Requirement.new(CT, "In", ["on-demand", "spot"]),) if not any(r.key == CT for r in reqs) else ()
    return NodePool(name, Requirements((*base, *reqs)), **kw)  # type: ignore[arg-type]


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
    lab = dict(it.labels)
    lab.update({ZONE: zone, HOST: name, IT: it.name, CT: ct})
    if pool_name:
        lab[POOL] = pool_name
    if initialized:
        lab["karpenter.sh/initialized"] = "true"
    lab.update(labels or {})
    spec = ExistingNodeSpec(name, lab, it.allocatable, taints, initialized, "Node", capacity=it.capacity)
    return NodeInfo(spec, created, dict(annotations or {}), deleting, ready)


def pod(name: str, node_name: str = "", cpu: str = "1", memory: str = "1Gi", **kw: object) -> Pod:
    return Pod(name, requests=res(cpu, memory), node_name=node_name, **kw)  # type: ignore[arg-type]


def sel(**labels: str) -> LabelSelector:
    return LabelSelector(Requirements([Requirement.new(k, "In", [v]) for k, v in labels.items()]))


def spread(key: str, **labels: str) -> TopologySpread:
    return TopologySpread(1, key, "DoNotSchedule", sel(**labels))


def anti(key: str, **labels: str) -> PodAffinityTerm:
    return PodAffinityTerm(sel(**labels), key, frozenset({"default"}))


def pdb(name: str, min_available: str | None = None, max_unavailable: str | None = None, **labels: str) -> PodDisruptionBudget:
    return PodDisruptionBudget("default", name, {"matchLabels": dict(labels)}, min_available, max_unavailable)


def settings(
    *budgets: Budget, policy: str = "WhenEmptyOrUnderutilized", after: timedelta | None = timedelta(0),
    expire: timedelta | None = timedelta(hours=720)
) -> DisruptionSettings:
    return DisruptionSettings(policy, after, expire, budgets or (Budget(nodes="100%"),))


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
    pods = list(pods)
    pools = list(pools) if pools is not None else [pool()]
    st = dict(pool_settings) if pool_settings is not None else {p.name: settings() for p in pools}
    return Cluster(
        nodepools=pools,
        catalog=list(cat) if cat is not None else catalog(),
        nodes=list(nodes),
        running=[p for p in pods if p.node_name],
        pending=[p for p in pods if not p.node_name],
        pdbs=list(pdbs),
        settings=st,
        pod_meta=dict(meta or {}),
    )


def pending_copy(p: Pod) -> Pod:
    return dataclasses.replace(p, node_name="")
