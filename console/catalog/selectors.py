"""What the catalog page shows: every instance type with allocatable, prices (and where each
price comes from) and zones, searchable like `python -m packing catalog`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from console import adapters
from packing.api import VM_MEMORY_OVERHEAD_PERCENT, InstanceType, Offering, catalog_info

FAMILY = "karpenter.k8s.aws/instance-family"
CATEGORY = "karpenter.k8s.aws/instance-category"
ARCH = "kubernetes.io/arch"
GPU_NAME = "karpenter.k8s.aws/instance-gpu-name"
MEMORY_MIB = "karpenter.k8s.aws/instance-memory"
# The share of an instance's memory the hypervisor and kernel keep: node capacity is the EC2 memory minus it.
VM_OVERHEAD_PERCENT = f"{VM_MEMORY_OVERHEAD_PERCENT * 100:g}"


def gib(mib: float) -> str:
    """MiB as a person reads memory: "8 GiB", "7.4 GiB", "512 MiB"."""
    if mib < 1024:
        return f"{mib:.0f} MiB"
    return f"{mib / 1024:.1f}".removesuffix(".0") + " GiB"


@dataclass
class CatalogRow:
    itype: InstanceType
    on_demand: Offering | None
    cheapest_spot: Offering | None
    zones: list[str]

    @property
    def name(self) -> str:
        return self.itype.name

    @property
    def labels(self) -> Any:
        return self.itype.labels

    @property
    def capacity(self) -> dict[str, str]:
        return self.itype.capacity.to_strings()

    @property
    def allocatable(self) -> dict[str, str]:
        return self.itype.allocatable.to_strings()

    @property
    def memory_ec2(self) -> str:
        """The memory EC2 lists for the type (its instance-memory label), before any overhead."""
        raw = self.itype.labels.get(MEMORY_MIB)
        try:
            return gib(float(str(raw)))
        except ValueError:
            return "–"

    @property
    def memory_capacity(self) -> str:
        """What the node reports as capacity: the EC2 memory net of the VM overhead."""
        return gib(self.itype.capacity.get("memory", 0) / 1000 / 2**20)

    @property
    def memory_allocatable(self) -> str:
        """What pods can request: capacity minus kube-reserved, system-reserved and the eviction threshold."""
        return gib(self.itype.allocatable.get("memory", 0) / 1000 / 2**20)

    @property
    def overridden(self) -> bool:
        """A NodeOverlay (or a price override, which is one) changed one of its prices or its capacity."""
        return any(o.overlays for o in self.itype.offerings)


def _row(itype: InstanceType) -> CatalogRow:
    on_demand = [o for o in itype.offerings if o.capacity_type == "on-demand"]
    spot = [o for o in itype.offerings if o.capacity_type == "spot" and o.price is not None]
    return CatalogRow(
        itype=itype,
        on_demand=min(on_demand, key=lambda o: (o.price is None, o.price or 0.0)) if on_demand else None,
        cheapest_spot=min(spot, key=lambda o: o.price or 0.0) if spot else None,
        zones=sorted({o.zone for o in itype.offerings}),
    )


def catalog_rows(*, region: str = "us-east-1", q: str = "", family: str = "", category: str = "", arch: str = "",
                 gpu: bool = False, priced_only: bool = False) -> list[CatalogRow]:
    rows = []
    needle = q.strip().lower()
    for itype in adapters.instance_types(region):
        labels = itype.labels
        if needle and needle not in itype.name.lower():
            continue
        if family and labels.get(FAMILY) != family:
            continue
        if category and labels.get(CATEGORY) != category:
            continue
        if arch and labels.get(ARCH) != arch:
            continue
        if gpu and not labels.get(GPU_NAME):
            continue
        row = _row(itype)
        if priced_only and (row.on_demand is None or row.on_demand.price is None):
            continue
        rows.append(row)
    rows.sort(key=lambda r: (labels_key(r.itype), r.itype.capacity.get("cpu", 0), r.itype.capacity.get("memory", 0)))
    return rows


def labels_key(itype: InstanceType) -> str:
    return str(itype.labels.get(FAMILY, itype.name.split(".")[0]))


def catalog_choices(region: str = "us-east-1") -> dict[str, list[str]]:
    types = adapters.instance_types(region)
    return {
        "families": sorted({str(t.labels.get(FAMILY)) for t in types if t.labels.get(FAMILY)}),
        "categories": sorted({str(t.labels.get(CATEGORY)) for t in types if t.labels.get(CATEGORY)}),
    }


def catalog_summary(region: str = "us-east-1") -> dict[str, Any]:
    from django.conf import settings

    from console.catalog.models import CatalogRefresh

    info = catalog_info(region, cache_dir=settings.LOADMASTER_CATALOG_CACHE)
    types = adapters.instance_types(region)
    priced = sum(1 for t in types if any(o.capacity_type == "on-demand" and o.price is not None for o in t.offerings))
    return {**info, "count": len(types), "priced": priced, "unpriced": len(types) - priced,
            "last_refresh": CatalogRefresh.objects.filter(region=region).first()}
