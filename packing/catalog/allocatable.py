"""Capacity and overhead of a node exactly as the kubelet will report them, with Karpenter's AWS defaults.

allocatable = capacity - kube-reserved - system-reserved - eviction threshold

Where the VM memory overhead goes (our choice, the same as Karpenter's): the hypervisor and kernel keep
part of the nominal memory, so a node's *reported* capacity is below the EC2 spec. Karpenter removes
that (VM_MEMORY_OVERHEAD_PERCENT = 7.5 %, rounded up to whole MiB) from `capacity` itself, because
capacity is what `kubectl describe node` shows. Everything the kubelet subtracts on top of that
(kube-reserved, system-reserved, eviction threshold) goes into `InstanceType.overhead`, so
`InstanceType.allocatable` equals the node's status.allocatable.

Defaults (override any of them with the EC2NodeClass `spec.kubelet` dict):
- pods: maxPods if set, else the VPC CNI limit ENIs x (IPv4 per ENI - 1) + 2; then min(podsPerCore x vCPUs, pods)
  when podsPerCore is set (m5.large: 3 x (10 - 1) + 2 = 29).
- kube-reserved memory: 11 MiB x pods + 255 MiB.
- kube-reserved cpu: 6 % of the first core, 1 % of the second, 0.5 % of the next two, 0.25 % of the rest
  (each band truncated to whole millicores, as Karpenter does).
- kube-reserved ephemeral-storage: 1Gi.
- eviction threshold: memory.available 100Mi, nodefs.available 10 % (the larger of evictionHard and evictionSoft
  per signal; percentages are of capacity).
- ephemeral-storage capacity: the root volume, 20Gi unless given (the EKS AMIs' default volume size).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from packing.catalog.specs import InstanceSpec
from packing.quantity import QuantityError, parse_quantity
from packing.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resources

__all__ = [
    "DEFAULT_EPHEMERAL_STORAGE",
    "VM_MEMORY_OVERHEAD_PERCENT",
    "KubeletError",
    "capacity_and_overhead",
    "kube_reserved_cpu_milli",
    "max_pods",
    "validate_kubelet",
]

VM_MEMORY_OVERHEAD_PERCENT = 0.075
DEFAULT_EPHEMERAL_STORAGE = "20Gi"
MIB = 2**20
_MILLI_PER_MIB = MIB * 1000

# (band start, band end) in millicores -> share reserved for kube components
_CPU_BANDS = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005), (4000, 1 << 31, 0.0025))

_KUBELET_KEYS = frozenset(
    {
        "maxPods",
        "podsPerCore",
        "systemReserved",
        "kubeReserved",
        "evictionHard",
        "evictionSoft",
        "evictionSoftGracePeriod",
        "evictionMaxPodGracePeriod",
        "imageGCHighThresholdPercent",
        "imageGCLowThresholdPercent",
        "cpuCFSQuota",
        "clusterDNS",
    }
)
_RESERVABLE = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE, "pid"})
_SIGNALS = {"memory.available": MEMORY, "nodefs.available": EPHEMERAL_STORAGE}


class KubeletError(ValueError):
    """An invalid EC2NodeClass kubelet setting; the message names the field."""


def validate_kubelet(kubelet: Mapping[str, Any] | None) -> None:
    """Raise KubeletError for a kubelet block Karpenter would reject, naming the offending field."""
    if not kubelet:
        return
    if not isinstance(kubelet, Mapping):
        raise KubeletError("kubelet must be a mapping")
    for key in kubelet:
        if key not in _KUBELET_KEYS:
            raise KubeletError(f"kubelet.{key}: unknown field")
    for key in ("maxPods", "podsPerCore"):
        v = kubelet.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise KubeletError(f"kubelet.{key}: must be a non-negative integer, got {v!r}")
    for key in ("systemReserved", "kubeReserved"):
        block = kubelet.get(key) or {}
        if not isinstance(block, Mapping):
            raise KubeletError(f"kubelet.{key}: must be a mapping")
        for res, val in block.items():
            if res not in _RESERVABLE:
                raise KubeletError(
                    f"kubelet.{key}.{res}: only cpu, memory, ephemeral-storage and pid can be reserved"
                )
            try:
                if parse_quantity(val) < 0:
                    raise KubeletError(f"kubelet.{key}.{res}: must not be negative")
            except QuantityError as e:
                raise KubeletError(f"kubelet.{key}.{res}: {e}") from None
    for key in ("evictionHard", "evictionSoft"):
        block = kubelet.get(key) or {}
        if not isinstance(block, Mapping):
            raise KubeletError(f"kubelet.{key}: must be a mapping")
        for signal, val in block.items():
            try:
                _threshold(str(val), 1)
            except (QuantityError, ValueError):
                raise KubeletError(f"kubelet.{key}.{signal}: invalid threshold {val!r}") from None


def max_pods(spec: InstanceSpec, kubelet: Mapping[str, Any] | None = None) -> int:
    kc = kubelet or {}
    pods = kc.get("maxPods")
    count = int(pods) if pods is not None else spec.eni_limited_pods()
    ppc = kc.get("podsPerCore")
    if ppc:
        count = min(int(ppc) * spec.vcpus, count)
    return count


def kube_reserved_cpu_milli(vcpus: int) -> int:
    cpu = vcpus * 1000
    total = 0
    for start, end, share in _CPU_BANDS:
        if cpu >= start:
            span = (min(cpu, end)) - start
            total += int(span * share)
    return total


def _threshold(value: str, capacity_milli: int) -> int:
    """A kubelet eviction threshold ("100Mi" or "10%") in milli-units of the resource."""
    text = value.strip()
    if text.endswith("%"):
        pct = float(text[:-1])
        if not 0 <= pct <= 100:
            raise ValueError(value)
        return math.ceil(capacity_milli * pct / 100)
    return parse_quantity(text)


def vm_memory_mib(spec: InstanceSpec) -> int:
    """Memory the kubelet reports as capacity: the EC2 spec minus the VM overhead, in MiB."""
    return spec.memory_mib - math.ceil(spec.memory_mib * VM_MEMORY_OVERHEAD_PERCENT)


def capacity_and_overhead(
    spec: InstanceSpec,
    kubelet: Mapping[str, Any] | None = None,
    *,
    ephemeral_storage: str = DEFAULT_EPHEMERAL_STORAGE,
) -> tuple[Resources, Resources]:
    """(capacity, overhead) of one node of this type; overhead = kube-reserved + system-reserved + eviction."""
    kc = kubelet or {}
    pods = max_pods(spec, kc)
    capacity: dict[str, int] = {
        CPU: spec.vcpus * 1000,
        MEMORY: vm_memory_mib(spec) * _MILLI_PER_MIB,
        PODS: pods * 1000,
        EPHEMERAL_STORAGE: parse_quantity(ephemeral_storage),
    }
    for name, count in spec.extended_resources().items():
        capacity[name] = count * 1000

    kube_reserved: dict[str, int] = {
        CPU: kube_reserved_cpu_milli(spec.vcpus),
        MEMORY: (11 * pods + 255) * _MILLI_PER_MIB,
        EPHEMERAL_STORAGE: parse_quantity("1Gi"),
    }
    # NodeClass values replace the computed default key by key, as in Karpenter
    for res, val in (kc.get("kubeReserved") or {}).items():
        if res in _RESERVABLE and res != "pid":
            kube_reserved[res] = parse_quantity(val)
    system_reserved = {
        res: parse_quantity(val)
        for res, val in (kc.get("systemReserved") or {}).items()
        if res in _RESERVABLE and res != "pid"
    }
    hard = {"memory.available": "100Mi", "nodefs.available": "10%"}
    hard.update({str(k): str(v) for k, v in (kc.get("evictionHard") or {}).items()})
    soft = {str(k): str(v) for k, v in (kc.get("evictionSoft") or {}).items()}
    eviction: dict[str, int] = {}
    for signal, resource in _SIGNALS.items():
        values = [_threshold(t[signal], capacity[resource]) for t in (hard, soft) if signal in t]
        if values:
            eviction[resource] = max(values)
    overhead = Resources(kube_reserved) + Resources(system_reserved) + Resources(eviction)
    return Resources(capacity), overhead
