"""Checks on the bundled data: instance-type snapshot and the dated on-demand price snapshot."""

from __future__ import annotations

import datetime as dt
import re
from importlib import resources

import pytest

from packing.catalog import CatalogError, load_builtin
from packing.catalog.pricing import PricingError, _parse_snapshot_text, load_on_demand_snapshot
from packing.catalog.snapshot import bundled_regions, load_bundled, snapshot_info

# The families the issue requires to be fully priced (every size offered in us-east-1).
REQUIRED_FAMILIES = (
    "m5 m6i m6a m6g m7i m7a m7g m8g c5 c6i c6a c6g c7i c7a c7g c8g r5 r6i r6a r6g r7i r7a r7g r8g "
    "t3 t3a t4g g4dn g5 g6 g6e p4d p5 inf2 trn1"
).split()
# Families whose list price is exactly proportional to size (memory) for every non-metal size. GPU / accelerator
# families are deliberately absent: their prices are not linear (g5.16xlarge is cheaper than g5.12xlarge).
# (Not c4 or t2: c4.8xlarge is 1.591, not 1.600, and t2.small 0.023, not 0.0232: older families were not linear.)
LINEAR_FAMILIES = (
    "m4 m5 m5a m5d m5n m5ad m5dn m6i m6a m6g m6gd m6id m7i m7a m7g m8g c5 c5a c5d c5n c6i c6a c6g c6gd c6gn "
    "c7i c7a c7g c8g r4 r5 r5a r5d r5n r5b r6i r6a r6g r6gd r7i r7a r7g r8g t3 t3a t4g i3 i3en x2gd"
).split()


@pytest.fixture(scope="module")
def prices() -> dict[str, float]:
    p = load_on_demand_snapshot("us-east-1")
    assert p is not None
    return dict(p.prices)


@pytest.fixture(scope="module")
def region_types() -> dict[str, object]:
    return dict(load_bundled("us-east-1").specs)


def test_price_snapshot_is_dated_and_sourced() -> None:
    p = load_on_demand_snapshot("us-east-1")
    assert p is not None
    date = dt.date.fromisoformat(p.date)
    assert dt.date(2025, 1, 1) <= date <= dt.date.today()
    assert p.source == f"snapshot {p.date}"
    assert "Price List API" in p.detail and "Linux" in p.detail and "Shared" in p.detail
    assert re.search(r"github\.com/aws/karpenter-provider-aws/blob/[0-9a-f]{40}/", p.detail)


def test_no_zero_or_negative_price(prices: dict[str, float]) -> None:
    assert len(prices) > 500
    bad = {k: v for k, v in prices.items() if not v > 0}
    assert bad == {}


def test_known_list_prices(prices: dict[str, float]) -> None:
    assert prices["m5.large"] == 0.096
    assert prices["m5.xlarge"] == 0.192
    assert prices["c5.large"] == 0.085
    assert prices["t3.micro"] == 0.0104
    assert prices["m7g.medium"] == 0.0408


@pytest.mark.parametrize("family", REQUIRED_FAMILIES)
def test_required_family_fully_priced(
    family: str, prices: dict[str, float], region_types: dict[str, object]
) -> None:
    sizes = [t for t in region_types if t.split(".")[0] == family]
    assert sizes, f"{family} missing from the us-east-1 snapshot"
    assert [t for t in sizes if t not in prices] == []


@pytest.mark.parametrize("family", LINEAR_FAMILIES)
def test_linear_scaling_within_family(family: str, prices: dict[str, float]) -> None:
    specs = load_bundled("us-east-1").specs
    members = [
        (n, specs[n]) for n in prices if n.split(".")[0] == family and n in specs and not specs[n].bare_metal
    ]
    assert len(members) >= 3, family
    # burstable sizes share vCPU counts (t3.nano..t3.small all have 2) and scale with memory; the rest with vCPUs
    rates = {n: prices[n] / (s.memory_mib if s.burstable else s.vcpus) for n, s in members}
    ref = min(rates.values())
    # AWS rounds list prices to 4 decimals on the smallest sizes (c7g.medium 0.0363 = 0.0725 / 2 rounded)
    off = {n: r / ref for n, r in rates.items() if abs(r / ref - 1) > 0.005}
    assert off == {}, f"{family}: not proportional to size: {off}"


def test_gpu_family_prices_grow_with_size(prices: dict[str, float]) -> None:
    # not linear, but at a fixed GPU count a bigger host must cost more, and more GPUs of a kind cost more
    specs = load_bundled("us-east-1").specs
    for family in ("g4dn", "g5", "g6", "g6e"):
        members = sorted(
            (s.gpu_count, s.vcpus, prices[n]) for n, s in specs.items() if n.split(".")[0] == family
        )
        assert len(members) >= 6, family
        for (g1, v1, p1), (g2, v2, p2) in zip(members, members[1:], strict=False):
            if g1 == g2:
                assert v1 < v2 and p1 < p2, (family, g1, v1, v2)
        by_gpus = {}
        for g, _, p in members:
            by_gpus.setdefault(g, []).append(p)
        counts = sorted(by_gpus)
        assert all(min(by_gpus[b]) > min(by_gpus[a]) for a, b in zip(counts, counts[1:], strict=False)), (
            family
        )


def test_snapshot_parser_rejects_garbage() -> None:
    with pytest.raises(PricingError, match="no '# date:'"):
        _parse_snapshot_text('"m5.large": 0.096,\n', "us-east-1")
    with pytest.raises(PricingError, match="line 2"):
        _parse_snapshot_text('# date: 2026-01-19\n"m5.large": 0.096x,\n', "us-east-1")
    with pytest.raises(PricingError, match="twice"):
        _parse_snapshot_text('# date: 2026-01-19\n"m5.large": 0.096, "m5.large": 0.1\n', "us-east-1")


def test_instance_type_snapshot_records_moto_version_and_date() -> None:
    info = snapshot_info()
    assert re.match(r"moto \d+\.\d+\.\d+", info["source"])
    dt.date.fromisoformat(info["generated"])
    data = resources.files("packing.catalog").joinpath("data").joinpath("instance-types.json.gz")
    assert len(data.read_bytes()) < 1_000_000  # stays small in the repository


def test_regions_and_zones() -> None:
    assert "us-east-1" in bundled_regions() and "us-west-2" in bundled_regions()
    data = load_bundled("us-east-1")
    assert len(data.specs) > 500
    # offerings are per zone and real: m5.large is not offered in us-east-1e
    assert "us-east-1e" not in data.zones["m5.large"]
    assert "us-east-1a" in data.zones["m5.large"]
    assert all(z.startswith("us-east-1") for zs in data.zones.values() for z in zs)
    with pytest.raises(CatalogError, match="unknown region 'mars-1'"):
        load_builtin("mars-1")


def test_labels_of_known_types() -> None:
    types = {t.name: t for t in load_builtin("us-east-1")}
    m5 = types["m5.large"].labels
    assert m5["node.kubernetes.io/instance-type"] == "m5.large"
    assert m5["kubernetes.io/arch"] == "amd64" and m5["kubernetes.io/os"] == "linux"
    assert m5["topology.kubernetes.io/region"] == "us-east-1"
    p = "karpenter.k8s.aws/"
    assert {
        k: m5[p + k]
        for k in (
            "instance-category",
            "instance-family",
            "instance-generation",
            "instance-size",
            "instance-cpu",
            "instance-cpu-manufacturer",
            "instance-memory",
            "instance-hypervisor",
            "instance-network-bandwidth",
            "instance-ebs-bandwidth",
        )
    } == {
        "instance-category": "m",
        "instance-family": "m5",
        "instance-generation": "5",
        "instance-size": "large",
        "instance-cpu": "2",
        "instance-cpu-manufacturer": "intel",
        "instance-memory": "8192",
        "instance-hypervisor": "nitro",
        "instance-network-bandwidth": "750",
        "instance-ebs-bandwidth": "4750",
    }
    assert "topology.kubernetes.io/zone" not in m5 and "karpenter.sh/capacity-type" not in m5
    g5 = types["g5.xlarge"].labels
    assert (
        g5[p + "instance-gpu-name"],
        g5[p + "instance-gpu-manufacturer"],
        g5[p + "instance-gpu-count"],
        g5[p + "instance-gpu-memory"],
        g5[p + "instance-local-nvme"],
    ) == ("a10g", "nvidia", "1", "22888", "250")
    assert types["m7g.large"].labels["kubernetes.io/arch"] == "arm64"
    assert types["m7g.large"].labels[p + "instance-cpu-manufacturer"] == "aws"
    inf = types["inf2.xlarge"].labels
    assert (inf[p + "instance-accelerator-name"], inf[p + "instance-accelerator-count"]) == (
        "inferentia2",
        "1",
    )
    assert types["trn1.2xlarge"].labels[p + "instance-accelerator-name"] == "trainium"
    assert types["m7g.metal"].labels[p + "instance-hypervisor"] == ""
    assert types["u-6tb1.112xlarge"].labels[p + "instance-category"] == "u"
    assert types["m7i-flex.large"].labels[p + "instance-generation"] == "7"
    assert not any(n.startswith("mac") for n in types)  # macOS hosts cannot be Kubernetes nodes


def test_catalog_info_names_every_source() -> None:
    from packing.catalog import catalog_info

    info = catalog_info("us-east-1")
    assert info["on_demand"] == "snapshot 2026-01-19" and info["spot"] == "estimate"
    assert info["types"].startswith("snapshot moto ")
    assert "karpenter-provider-aws" in info["on_demand_detail"]
    assert catalog_info("eu-west-1")["on_demand"] == "none"  # no price snapshot shipped: every price unknown


def test_generator_reproduces_the_bundled_snapshot(tmp_path: object) -> None:
    import gzip
    import importlib.util
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "build_catalog_snapshot", root / "scripts" / "build_catalog_snapshot.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    info = snapshot_info()
    built = mod.build(info["generated"], ["us-east-1"])
    if built["source"] != info["source"]:
        pytest.skip(f"installed moto differs from the snapshot's ({info['source']}): regenerate the snapshot")
    bundled = json.loads(
        gzip.decompress(
            resources.files("packing.catalog")
            .joinpath("data")
            .joinpath("instance-types.json.gz")
            .read_bytes()
        )
    )
    assert built["types"] == bundled["types"]
    assert built["regions"]["us-east-1"] == bundled["regions"]["us-east-1"]
