"""The benchmark's instance catalog: the built-in one when packing.catalog provides it, else a seeded synthetic one."""

from __future__ import annotations

import random

from packing.instancetype import InstanceType, Offering
from packing.resources import Resources

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f")


def synthetic_catalog(seed: int = 7, count: int = 520) -> list[InstanceType]:
    """>= 500 types across families with different cpu:memory ratios and non-linear $/resource."""
    rnd = random.Random(seed)
    families = [
        ("c", 2, 0.0425, "amd64"),
        ("m", 4, 0.048, "amd64"),
        ("r", 8, 0.063, "amd64"),
        ("x", 16, 0.083, "amd64"),
        ("c7g", 2, 0.0363, "arm64"),
        ("m7g", 4, 0.0408, "arm64"),
        ("r7g", 8, 0.0536, "arm64"),
    ]
    sizes = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96]
    out: list[InstanceType] = []
    gen = 0
    while len(out) < count:
        gen += 1
        for fam, ratio, base, arch in families:
            for s in sizes:
                if len(out) >= count:
                    break
                vcpu = s * 2 if s > 1 else 2
                mem_gib = vcpu * ratio
                # bigger sizes are slightly cheaper per vCPU, newer generations slightly dearer, plus noise
                price = (
                    base * vcpu * (1.0 - 0.015 * (s**0.5)) * (1 + 0.03 * (gen - 1)) * rnd.uniform(0.97, 1.05)
                )
                pods = 110 if vcpu >= 8 else 29
                name = f"{fam}{gen}.{s}x"
                gpu = 0
                labels = {
                    "kubernetes.io/arch": arch,
                    "kubernetes.io/os": "linux",
                    "karpenter.k8s.aws/instance-family": f"{fam}{gen}",
                    "karpenter.k8s.aws/instance-cpu": str(vcpu),
                    "karpenter.k8s.aws/instance-generation": str(gen),
                }
                cap = {"cpu": vcpu * 1000, "memory": int(mem_gib * 2**30) * 1000, "pods": pods * 1000}
                if fam == "m" and s in (4, 8, 16) and gen <= 2:
                    gpu = s // 4
                    cap["nvidia.com/gpu"] = gpu * 1000
                    price += 0.9 * gpu
                offerings = tuple(
                    Offering(z, ct, round(price * (rnd.uniform(0.3, 0.45) if ct == "spot" else 1.0), 5))
                    for z in ZONES
                    for ct in ("spot", "on-demand")
                )
                overhead = Resources({"cpu": 70 + 10 * vcpu, "memory": (255 + 11 * pods) * 2**20 * 1000})
                out.append(InstanceType(name, Resources(cap), overhead, labels, offerings))
    return out


def bench_catalog() -> tuple[list[InstanceType], str]:
    try:
        from packing.catalog import load_builtin

        cat = list(load_builtin("us-east-1"))
        if len(cat) >= 500:
            return cat, f"built-in us-east-1 ({len(cat)} types)"
    except Exception:  # noqa: BLE001 - any failure of the optional catalog means: use the synthetic one
        pass
    cat = synthetic_catalog()
    return cat, f"synthetic seeded ({len(cat)} types)"
