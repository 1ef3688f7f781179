"""Seeded workload families for the benchmark."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from packing.nodepool import NodePool
from packing.pods import LabelSelector, Pod, PodAffinityTerm, TopologySpread
from packing.requirements import Requirement, Requirements
from packing.resources import Resources
from packing.taints import Taint, Toleration

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


@dataclass
class Workload:
    name: str
    family: int
    pods: list[Pod]
    pools: list[NodePool] = field(default_factory=list)


def default_pool(name: str = "default", **kw: object) -> NodePool:
    reqs = Requirements(
        [
            Requirement.new("kubernetes.io/os", "In", ["linux"]),
            Requirement.new("karpenter.sh/capacity-type", "In", ["spot", "on-demand"]),
        ]
    )
    return NodePool(name, reqs, **kw)  # type: ignore[arg-type]


def _res(cpu_m: int, mem_mi: int, extra: dict[str, int] | None = None) -> Resources:
    d = {"cpu": cpu_m, "memory": mem_mi * 2**20 * 1000, "pods": 1000}
    d.update(extra or {})
    return Resources(d)


def resource_only(n: int, seed: int = 1) -> Workload:
    """Family 1: cpu 100m-8, memory 128Mi-32Gi, a few GPU pods."""
    rnd = random.Random(seed)
    pods = []
    for i in range(n):
        extra = {"nvidia.com/gpu": 1000} if i % 1000 == 999 else None
        pods.append(Pod(f"r-{i}", requests=_res(rnd.randint(1, 80) * 100, rnd.randint(1, 256) * 128, extra)))
    return Workload(f"resource-only {n}", 1, pods, [default_pool()])


_CPU = [100, 250, 500, 1000, 1500]
_MEM = [100, 256, 512, 1024, 2048, 4096]


def karpenter_mix(n: int, seed: int = 2) -> Workload:
    """Family 2: Karpenter's benchmark mix, one fifth each of five shapes, in groups of 10 apps per shape."""
    rnd = random.Random(seed)
    pods: list[Pod] = []
    per = n // 5
    for shape in ("generic", "zonal-spread", "hostname-spread", "zonal-affinity", "hostname-anti"):
        for i in range(per):
            app = f"{shape}-{i % 10}"
            labels = {"app": app}
            sel = LabelSelector(Requirements([Requirement.new("app", "In", [app])]))
            kw: dict[str, object] = {}
            if shape == "zonal-spread":
                kw["spread"] = (TopologySpread(1, ZONE, "DoNotSchedule", sel),)
            elif shape == "hostname-spread":
                kw["spread"] = (TopologySpread(1, HOST, "DoNotSchedule", sel),)
            elif shape == "zonal-affinity":
                kw["affinity"] = (PodAffinityTerm(sel, ZONE, frozenset({"default"})),)
            elif shape == "hostname-anti":
                kw["anti_affinity"] = (PodAffinityTerm(sel, HOST, frozenset({"default"})),)
            pods.append(
                Pod(f"{shape}-{i}", labels=labels, requests=_res(rnd.choice(_CPU), rnd.choice(_MEM)), **kw)  # type: ignore[arg-type]
            )
    return Workload(f"karpenter mix {n}", 2, pods, [default_pool()])


def taints_arm_spot(n: int, seed: int = 3) -> Workload:
    """Family 3: a tainted pool with tolerating pods, arm64-only pods and spot-only pods beside generic ones."""
    rnd = random.Random(seed)
    taint = Taint("dedicated", "batch", "NoSchedule")
    tainted = default_pool("batch", taints=(taint,), weight=10)
    pods: list[Pod] = []
    for i in range(n):
        kind = i % 4
        r = _res(rnd.randint(1, 40) * 100, rnd.randint(1, 64) * 128)
        if kind == 0:
            pods.append(
                Pod(
                    f"batch-{i}",
                    requests=r,
                    tolerations=(Toleration("dedicated", "Equal", "batch", "NoSchedule"),),
                )
            )
        elif kind == 1:
            pods.append(Pod(f"arm-{i}", requests=r, node_selector={"kubernetes.io/arch": "arm64"}))
        elif kind == 2:
            pods.append(
                Pod(
                    f"spot-{i}",
                    requests=r,
                    required_terms=(
                        Requirements([Requirement.new("karpenter.sh/capacity-type", "In", ["spot"])]),
                    ),
                )
            )
        else:
            pods.append(Pod(f"generic-{i}", requests=r))
    return Workload(f"taints/arm/spot {n}", 3, pods, [default_pool(), tainted])


def mixed_request(rnd: random.Random) -> Resources:
    """One pod of a realistic mix: 70% web-sized (250m-2 cpu at 2-4 GiB per vCPU), 20% memory-heavy
    (8 GiB per vCPU), 10% CPU-heavy (1 GiB per 2 vCPU)."""
    roll = rnd.random()
    if roll < 0.7:
        cpu_m = rnd.choice([250, 500, 750, 1000, 1500, 2000])
        gib_per_vcpu = rnd.choice([2, 3, 4])
        return _res(cpu_m, cpu_m * gib_per_vcpu * 1024 // 1000)
    if roll < 0.9:
        cpu_m = rnd.choice([500, 1000, 2000, 4000])
        return _res(cpu_m, cpu_m * 8 * 1024 // 1000)
    cpu_m = rnd.choice([1000, 2000, 4000, 8000])
    return _res(cpu_m, cpu_m * 512 // 1000)


def mixed_shapes(n: int, seed: int = 4) -> Workload:
    """Family 4: resource-only, web-sized / memory-heavy / CPU-heavy pods in 70/20/10 proportions."""
    rnd = random.Random(seed)
    pods = [Pod(f"m-{i}", requests=mixed_request(rnd)) for i in range(n)]
    return Workload(f"mixed shapes {n}", 4, pods, [default_pool()])


_SELECTOR_CLASSES: tuple[dict[str, str], ...] = (
    {"kubernetes.io/arch": "arm64", "karpenter.sh/capacity-type": "spot"},
    {"karpenter.sh/capacity-type": "on-demand"},
    {},
)


def selector_classes(n: int, seed: int = 5) -> Workload:
    """Family 5: the mixed shapes of family 4 under node-selector classes: a third arm64 and spot, a third
    on-demand only, a third any node."""
    rnd = random.Random(seed)
    pods = [
        Pod(f"s-{i}", requests=mixed_request(rnd), node_selector=dict(_SELECTOR_CLASSES[i % 3]))
        for i in range(n)
    ]
    return Workload(f"selector classes {n}", 5, pods, [default_pool()])


def zonal_spread(n: int, seed: int = 6) -> Workload:
    """Family 6: the mixed shapes of family 4, every pod in one of 50 apps spread across zones (maxSkew 1,
    DoNotSchedule)."""
    rnd = random.Random(seed)
    pods: list[Pod] = []
    for i in range(n):
        app = f"zs-{i % 50}"
        sel = LabelSelector(Requirements([Requirement.new("app", "In", [app])]))
        pods.append(
            Pod(
                f"z-{i}",
                labels={"app": app},
                requests=mixed_request(rnd),
                spread=(TopologySpread(1, ZONE, "DoNotSchedule", sel),),
            )
        )
    return Workload(f"zonal spread {n}", 6, pods, [default_pool()])


def families(quick: bool, large: bool = False) -> list[Workload]:
    """The benchmark's workloads; `large` adds the 50,000-pod mixed-shape family (about a minute more)."""
    if quick:
        return [resource_only(2000), karpenter_mix(1000), taints_arm_spot(1000), mixed_shapes(2000)]
    fams = [
        resource_only(10_000),
        karpenter_mix(1000),
        karpenter_mix(5000),
        karpenter_mix(10_000),
        taints_arm_spot(3000),
        mixed_shapes(10_000),
        selector_classes(10_000),
        zonal_spread(10_000),
    ]
    if large:
        fams.append(mixed_shapes(50_000))
    return fams
