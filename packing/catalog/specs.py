"""EC2 instance type specifications and the Karpenter labels derived from them.

One `InstanceSpec` is built from one DescribeInstanceTypes entry, whether that entry came from the
bundled snapshot (generated from the JSON moto ships) or from a live boto3 call, so both paths
yield identical labels. Label names and value formats follow karpenter-provider-aws
(pkg/providers/instancetype/types.go) so that requirements written for Karpenter select the same
types here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = [
    "ANNOTATION_PREFIX",
    "LABEL_ARCH",
    "LABEL_CAPACITY_TYPE",
    "LABEL_INSTANCE_TYPE",
    "LABEL_OS",
    "LABEL_REGION",
    "LABEL_ZONE",
    "RESOURCE_AMD_GPU",
    "RESOURCE_EFA",
    "RESOURCE_NEURON",
    "RESOURCE_NEURON_CORE",
    "RESOURCE_NVIDIA_GPU",
    "InstanceSpec",
    "spec_from_ec2",
    "split_name",
]

LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
LABEL_ARCH = "kubernetes.io/arch"
LABEL_OS = "kubernetes.io/os"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
LABEL_CAPACITY_TYPE = "karpenter.sh/capacity-type"
ANNOTATION_PREFIX = "karpenter.k8s.aws/"

RESOURCE_NVIDIA_GPU = "nvidia.com/gpu"
RESOURCE_AMD_GPU = "amd.com/gpu"
RESOURCE_NEURON = "aws.amazon.com/neuron"
RESOURCE_NEURON_CORE = "aws.amazon.com/neuroncore"
RESOURCE_EFA = "vpc.amazonaws.com/efa"

# Karpenter's instanceTypeScheme: category letters, an optional "-<n>tb" (u-6tb1), then the generation digits.
_CATEGORY_RE = re.compile(r"(^[a-z]+)(-[0-9]+tb)?([0-9]+).*\.")

_ARCH = {"x86_64": "amd64", "arm64": "arm64"}


def _kebab_lower(value: str) -> str:
    # Karpenter's lowerKabobCase: "Radeon Pro V520" -> "radeon-pro-v520"
    return value.lower().replace(" ", "-")


def split_name(name: str) -> tuple[str, str]:
    """("m5", "large") for "m5.large"; the size is "" for a malformed name."""
    family, _, size = name.partition(".")
    return family, size


@dataclass(frozen=True)
class InstanceSpec:
    """The subset of DescribeInstanceTypes Loadmaster uses; every field has a JSON-friendly type."""

    name: str
    vcpus: int
    memory_mib: int
    arch: str  # "amd64" | "arm64"
    cpu_manufacturer: str = ""  # lower case: intel, amd, aws
    cpu_clock_mhz: int = 0  # sustained clock speed
    hypervisor: str = ""  # nitro | xen | "" (bare metal)
    bare_metal: bool = False
    burstable: bool = False
    current_generation: bool = False
    gpu_name: str = ""
    gpu_manufacturer: str = ""
    gpu_count: int = 0
    gpu_memory_mib: int = 0  # per GPU, as Karpenter's label
    accelerator_name: str = ""  # Neuron / Inferentia / Trainium device name
    accelerator_manufacturer: str = ""
    accelerator_count: int = 0  # Neuron devices
    neuron_cores: int = 0
    local_nvme_gb: int = 0
    network_bandwidth_mbps: int = 0  # baseline, summed over network cards
    ebs_bandwidth_mbps: int = 0
    max_enis: int = 0  # on the default network card: the ENIs the VPC CNI can use for pods
    ipv4_per_eni: int = 0
    efa_count: int = 0
    spot: bool = True  # SupportedUsageClasses includes spot
    encryption_in_transit: bool = False

    @property
    def family(self) -> str:
        return split_name(self.name)[0]

    @property
    def size(self) -> str:
        return split_name(self.name)[1]

    def eni_limited_pods(self) -> int:
        """The VPC CNI's pod limit: ENIs x (IPv4 addresses per ENI - 1) + 2 (primary IPs + host-network pods)."""
        return self.max_enis * (self.ipv4_per_eni - 1) + 2

    def labels(self, region: str) -> dict[str, str]:
        """Well-known labels of a node of this type (zone and capacity type come from the offering)."""
        p = ANNOTATION_PREFIX
        out: dict[str, str] = {
            LABEL_INSTANCE_TYPE: self.name,
            LABEL_ARCH: self.arch,
            LABEL_OS: "linux",
            LABEL_REGION: region,
            p + "instance-family": self.family,
            p + "instance-size": self.size,
            p + "instance-cpu": str(self.vcpus),
            p + "instance-memory": str(self.memory_mib),
            p + "instance-hypervisor": self.hypervisor,
            p + "instance-encryption-in-transit-supported": str(self.encryption_in_transit).lower(),
        }
        m = _CATEGORY_RE.match(self.name)
        if m:
            out[p + "instance-category"] = m.group(1)
            out[p + "instance-generation"] = m.group(3)
        if self.cpu_manufacturer:
            out[p + "instance-cpu-manufacturer"] = self.cpu_manufacturer
        if self.cpu_clock_mhz:
            out[p + "instance-cpu-sustained-clock-speed-mhz"] = str(self.cpu_clock_mhz)
        if self.gpu_count:
            out[p + "instance-gpu-name"] = self.gpu_name
            out[p + "instance-gpu-manufacturer"] = self.gpu_manufacturer
            out[p + "instance-gpu-count"] = str(self.gpu_count)
            out[p + "instance-gpu-memory"] = str(self.gpu_memory_mib)
        if self.accelerator_count:
            out[p + "instance-accelerator-name"] = self.accelerator_name
            out[p + "instance-accelerator-manufacturer"] = self.accelerator_manufacturer
            out[p + "instance-accelerator-count"] = str(self.accelerator_count)
        if self.local_nvme_gb:
            out[p + "instance-local-nvme"] = str(self.local_nvme_gb)
        if self.network_bandwidth_mbps:
            out[p + "instance-network-bandwidth"] = str(self.network_bandwidth_mbps)
        if self.ebs_bandwidth_mbps:
            out[p + "instance-ebs-bandwidth"] = str(self.ebs_bandwidth_mbps)
        return out

    def extended_resources(self) -> dict[str, int]:
        """Device-plugin resources (whole units) a node of this type advertises."""
        out: dict[str, int] = {}
        if self.gpu_count and self.gpu_manufacturer == "nvidia":
            out[RESOURCE_NVIDIA_GPU] = self.gpu_count
        if self.gpu_count and self.gpu_manufacturer == "amd":
            out[RESOURCE_AMD_GPU] = self.gpu_count
        if self.accelerator_count and self.accelerator_manufacturer == "aws":
            out[RESOURCE_NEURON] = self.accelerator_count
            if self.neuron_cores:
                out[RESOURCE_NEURON_CORE] = self.neuron_cores
        if self.efa_count:
            out[RESOURCE_EFA] = self.efa_count
        return out

    def to_json(self) -> dict[str, Any]:
        """Compact dict: fields equal to their default are left out (the snapshot stays small)."""
        defaults = {f.name: f.default for f in fields(self)}
        return {
            k: v
            for k, v in asdict(self).items()
            if k in ("name", "vcpus", "memory_mib", "arch") or v != defaults[k]
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> InstanceSpec:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


def spec_from_ec2(info: Mapping[str, Any]) -> InstanceSpec | None:
    """Build a spec from one DescribeInstanceTypes entry; None for types Kubernetes nodes cannot run on
    (Mac instances and anything without an amd64/arm64 architecture)."""
    name = str(info["InstanceType"])
    proc = info.get("ProcessorInfo") or {}
    archs = proc.get("SupportedArchitectures") or []
    arch = next((_ARCH[a] for a in archs if a in _ARCH), None)
    if arch is None:
        return None
    net = info.get("NetworkInfo") or {}
    cards = net.get("NetworkCards") or []
    default_card = int(net.get("DefaultNetworkCardIndex", 0) or 0)
    # Karpenter counts only the default card's interfaces: the VPC CNI does not place pods on the others
    # (p5.48xlarge has 64 ENIs over 32 cards but runs 100 pods, as eni-max-pods.txt says).
    enis = int(net.get("MaximumNetworkInterfaces", 0) or 0)
    for card in cards:
        if int(card.get("NetworkCardIndex", 0) or 0) == default_card and card.get("MaximumNetworkInterfaces"):
            enis = int(card["MaximumNetworkInterfaces"])
    bandwidth = sum(float(c.get("BaselineBandwidthInGbps", 0) or 0) for c in cards)
    gpus = (info.get("GpuInfo") or {}).get("Gpus") or []
    gpu_name = gpu_manufacturer = ""
    gpu_count = gpu_memory = 0
    if len(gpus) == 1:  # Karpenter labels only types with one GPU model
        g = gpus[0]
        gpu_name = _kebab_lower(str(g.get("Name", "")))
        gpu_manufacturer = _kebab_lower(str(g.get("Manufacturer", "")))
        gpu_count = int(g.get("Count", 0) or 0)
        gpu_memory = int((g.get("MemoryInfo") or {}).get("SizeInMiB", 0) or 0)
    acc_name = acc_manufacturer = ""
    acc_count = neuron_cores = 0
    neuron = (info.get("NeuronInfo") or {}).get("NeuronDevices") or []
    inference = (info.get("InferenceAcceleratorInfo") or {}).get("Accelerators") or []
    if len(neuron) == 1:
        d = neuron[0]
        acc_name = _kebab_lower(str(d.get("Name", "")))
        acc_manufacturer = "aws"
        acc_count = int(d.get("Count", 0) or 0)
        neuron_cores = acc_count * int((d.get("CoreInfo") or {}).get("Count", 0) or 0)
    elif len(inference) == 1:
        d = inference[0]
        acc_name = _kebab_lower(str(d.get("Name", "")))
        acc_manufacturer = _kebab_lower(str(d.get("Manufacturer", "")))
        acc_count = int(d.get("Count", 0) or 0)
    storage = info.get("InstanceStorageInfo") or {}
    nvme = 0
    if storage and storage.get("NvmeSupport", "unsupported") != "unsupported":
        nvme = int(storage.get("TotalSizeInGB", 0) or 0)
    ebs = ((info.get("EbsInfo") or {}).get("EbsOptimizedInfo") or {}).get("MaximumBandwidthInMbps", 0) or 0
    clock = proc.get("SustainedClockSpeedInGhz") or 0
    return InstanceSpec(
        name=name,
        vcpus=int((info.get("VCpuInfo") or {}).get("DefaultVCpus", 0) or 0),
        memory_mib=int((info.get("MemoryInfo") or {}).get("SizeInMiB", 0) or 0),
        arch=arch,
        cpu_manufacturer=_kebab_lower(str(proc.get("Manufacturer", ""))),
        cpu_clock_mhz=int(round(float(clock) * 1000)),
        hypervisor=str(info.get("Hypervisor") or ""),
        bare_metal=bool(info.get("BareMetal", False)),
        burstable=bool(info.get("BurstablePerformanceSupported", False)),
        current_generation=bool(info.get("CurrentGeneration", False)),
        gpu_name=gpu_name,
        gpu_manufacturer=gpu_manufacturer,
        gpu_count=gpu_count,
        gpu_memory_mib=gpu_memory,
        accelerator_name=acc_name,
        accelerator_manufacturer=acc_manufacturer,
        accelerator_count=acc_count,
        neuron_cores=neuron_cores,
        local_nvme_gb=nvme,
        network_bandwidth_mbps=int(round(bandwidth * 1000)),
        ebs_bandwidth_mbps=int(ebs),
        max_enis=enis,
        ipv4_per_eni=int(net.get("Ipv4AddressesPerInterface", 0) or 0),
        efa_count=int((net.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0) or 0),
        spot="spot" in (info.get("SupportedUsageClasses") or ["spot"]),
        encryption_in_transit=bool(net.get("EncryptionInTransitSupported", False)),
    )
