"""Small builders for pods, pools, catalogs and nodes used across the engine's tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from packing.instancetype import InstanceType, Offering
from packing.nodepool import ExistingNodeSpec, NodePool
from packing.pods import LabelSelector, Pod, PodAffinityTerm, TopologySpread
from packing.requirements import Requirement, Requirements
from packing.resources import Resources
from packing.taints import Taint, Toleration

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
CT = "karpenter.sh/capacity-type"


def res(cpu: str = "1", memory: str = "1Gi", **extra: str) -> Resources:
    d = {"cpu": cpu, "memory": memory, "pods": "1"}
    d.update({k.replace("__", "/").replace("_", "-"): v for k, v in extra.items()})
    return Resources.parse(d)


def it(
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
) -> InstanceType:
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
    return InstanceType(
        name, Resources.parse(cap), Resources.parse({"cpu": "100m", "memory": "256Mi"}), lab, tuple(offerings)
    )


def catalog() -> list[InstanceType]:
    out = []
    for fam, ratio, per_cpu in (("c", 2, 0.0425), ("m", 4, 0.048), ("r", 8, 0.063)):
        for size in (2, 4, 8, 16, 32):
            out.append(it(f"{fam}-{size}x", size, size * ratio, round(size * per_cpu, 4)))
    out.append(it("g-4x", 4, 16, 1.2, extra={"nvidia.com/gpu": "1"}))
    out.append(it("a-4x", 4, 16, 0.15, arch="arm64"))
    return out


def pool(name: str = "default", *reqs: Requirement, **kw: object) -> NodePool:
    return NodePool(name, Requirements(reqs), **kw)  # type: ignore[arg-type]


def on_demand_pool(name: str = "default", **kw: object) -> NodePool:
    return pool(name, Requirement.new(CT, "In", ["on-demand"]), **kw)


def pod(name: str, cpu: str = "1", memory: str = "1Gi", **kw: object) -> Pod:
    extra = kw.pop("extra", None)
    r = res(cpu, memory)
    if extra:
        r = r + Resources.parse(extra)  # type: ignore[arg-type]
    return Pod(name, requests=r, **kw)  # type: ignore[arg-type]


def sel(**labels: str) -> LabelSelector:
    return LabelSelector(Requirements([Requirement.new(k, "In", [v]) for k, v in labels.items()]))


def spread(
    key: str, skew: int = 1, when: str = "DoNotSchedule", min_domains: int = 1, **labels: str
) -> TopologySpread:
    return TopologySpread(skew, key, when, sel(**labels), min_domains)


def term(key: str, **labels: str) -> PodAffinityTerm:
    return PodAffinityTerm(sel(**labels), key, frozenset({"default"}))


def req(key: str, op: str, *values: str) -> Requirements:
    return Requirements([Requirement.new(key, op, values)])


def tol(key: str, value: str = "", effect: str = "NoSchedule", op: str = "Equal") -> Toleration:
    return Toleration(key, op, value, effect)


def node(
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
    lab = {
        ZONE: zone,
        HOST: name,
        "node.kubernetes.io/instance-type": instance_type,
        CT: ct,
        "kubernetes.io/arch": "amd64",
    }
    if pool_name:
        lab["karpenter.sh/nodepool"] = pool_name
    if initialized:
        lab["karpenter.sh/initialized"] = "true"
    lab.update(labels or {})
    alloc = Resources.parse({"cpu": cpu, "memory": memory, "pods": "110"})
    return ExistingNodeSpec(name, lab, alloc, taints, initialized, kind, capacity=alloc)
