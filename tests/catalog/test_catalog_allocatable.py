"""Allocatable as the kubelet reports it, with Karpenter's AWS defaults and NodeClass overrides."""

from __future__ import annotations

import pytest

from packing.catalog import KubeletError, load_builtin
from packing.catalog.allocatable import capacity_and_overhead, kube_reserved_cpu_milli, max_pods
from packing.catalog.snapshot import load_bundled
from packing.instancetype import InstanceType

MI = 2**20 * 1000  # one MiB in milli-units


@pytest.fixture(scope="module")
def types() -> dict[str, InstanceType]:
    return {t.name: t for t in load_builtin("us-east-1")}


@pytest.mark.parametrize(
    ("name", "pods"),
    [
        ("m5.large", 29),
        ("m5.xlarge", 58),
        ("t3.micro", 4),
        ("t3.nano", 4),
        ("c5.18xlarge", 737),
        ("m6g.medium", 8),
        ("p5.48xlarge", 100),
        ("m5.24xlarge", 737),
    ],
)
def test_max_pods_from_enis(types: dict[str, InstanceType], name: str, pods: int) -> None:
    # the numbers in the EKS AMI's eni-max-pods.txt
    assert types[name].capacity["pods"] == pods * 1000


def test_m5_large_exact(types: dict[str, InstanceType]) -> None:
    t = types["m5.large"]
    # 8192 MiB - ceil(7.5 %) = 7577 MiB reported by the kubelet
    assert t.capacity.to_strings() == {
        "cpu": "2",
        "memory": "7577Mi",
        "pods": "29",
        "ephemeral-storage": "20Gi",
    }
    # kube-reserved 11*29+255 = 574 MiB, eviction 100 MiB; cpu 60m + 10m
    assert t.overhead["memory"] == 674 * MI
    assert t.overhead["cpu"] == 70
    assert t.allocatable.to_strings() == {
        "cpu": "1930m",
        "memory": "6903Mi",
        "pods": "29",
        "ephemeral-storage": "17Gi",
    }


@pytest.mark.parametrize(("vcpus", "milli"), [(1, 60), (2, 70), (4, 80), (8, 90), (96, 310), (192, 550)])
def test_kube_reserved_cpu_bands(vcpus: int, milli: int) -> None:
    assert kube_reserved_cpu_milli(vcpus) == milli


def test_gpu_and_neuron_types_expose_extended_resources(types: dict[str, InstanceType]) -> None:
    assert types["g5.xlarge"].capacity["nvidia.com/gpu"] == 1000
    assert types["g5.xlarge"].allocatable["nvidia.com/gpu"] == 1000
    assert types["p4d.24xlarge"].capacity["nvidia.com/gpu"] == 8000
    assert types["inf2.48xlarge"].capacity["aws.amazon.com/neuron"] == 12000
    assert types["trn1.32xlarge"].capacity["aws.amazon.com/neuron"] == 16000
    assert "nvidia.com/gpu" not in types["m5.large"].capacity


def test_nodeclass_kubelet_overrides() -> None:
    spec = load_bundled("us-east-1").specs["m5.large"]
    assert max_pods(spec, {"maxPods": 110}) == 110
    assert max_pods(spec, {"podsPerCore": 4}) == 8
    assert max_pods(spec, {"maxPods": 110, "podsPerCore": 20}) == 40
    cap, over = capacity_and_overhead(
        spec,
        {
            "maxPods": 110,
            "kubeReserved": {"cpu": "200m"},
            "systemReserved": {"memory": "300Mi", "cpu": "100m"},
            "evictionHard": {"memory.available": "5%"},
            "evictionSoft": {"memory.available": "500Mi"},
        },
    )
    assert cap["pods"] == 110_000
    assert over["cpu"] == 300
    # 11*110+255 = 1465 kube-reserved + 300 system-reserved + max(5 % of 7577 Mi, 500Mi)
    assert over["memory"] == (1465 + 300 + 500) * MI
    types = {t.name: t for t in load_builtin("us-east-1", kubelet={"maxPods": 110})}
    assert types["m5.large"].allocatable["pods"] == 110_000


@pytest.mark.parametrize(
    ("kubelet", "message"),
    [
        ({"maxPod": 3}, "kubelet.maxPod: unknown field"),
        ({"maxPods": -1}, "kubelet.maxPods"),
        ({"kubeReserved": {"cpu": "lots"}}, "kubelet.kubeReserved.cpu"),
        ({"evictionHard": {"memory.available": "150%"}}, "evictionHard"),
        ({"systemReserved": {"gpu": "1"}}, "systemReserved.gpu"),
    ],
)
def test_invalid_kubelet_is_a_clear_error(kubelet: dict[str, object], message: str) -> None:
    with pytest.raises(KubeletError, match=message.replace(".", r"\.")):
        load_builtin("us-east-1", kubelet=kubelet)
