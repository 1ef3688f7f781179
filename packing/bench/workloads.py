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


def families(quick: bool) -> list[Workload]:
    if quick:
        return [resource_only(2000), karpenter_mix(1000), taints_arm_spot(1000)]
    return [
        resource_only(10_000),
        karpenter_mix(1000),
        karpenter_mix(5000),
        karpenter_mix(10_000),
        taints_arm_spot(3000),
    ]
