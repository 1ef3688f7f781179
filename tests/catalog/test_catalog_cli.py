"""`python -m packing catalog`: json / text output, filters, overrides, refresh, bad input."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import packing.catalog.live as live
from packing.catalog.cli import main

from .test_catalog_live import stubbed_pricing

ROOT = Path(__file__).resolve().parents[2]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cache(tmp_path: Path) -> str:
    return str(tmp_path / "cache")


def test_json_shape(capsys: pytest.CaptureFixture[str], cache: str) -> None:
    code, out, err = run(
        capsys,
        "--output",
        "json",
        "--filter",
        "node.kubernetes.io/instance-type In [m5.large,g5.xlarge]",
        "--cache-dir",
        cache,
    )
    assert code == 0, err
    doc = {d["name"]: d for d in json.loads(out)}
    assert set(doc) == {"m5.large", "g5.xlarge"}
    m5 = doc["m5.large"]
    assert m5["capacity"] == {"cpu": "2", "memory": "7577Mi", "pods": "29", "ephemeral-storage": "20Gi"}
    assert m5["allocatable"]["memory"] == "6903Mi"
    assert m5["on_demand_price"] == 0.096 and m5["on_demand_source"] == "snapshot 2026-01-19"
    assert m5["labels"]["karpenter.k8s.aws/instance-family"] == "m5"
    spot = [o for o in m5["offerings"] if o["capacityType"] == "spot"]
    assert spot and all(o["price_source"] == "estimate" and o["available"] is True for o in spot)
    assert {o["zone"] for o in m5["offerings"]} == {
        "us-east-1a",
        "us-east-1b",
        "us-east-1c",
        "us-east-1d",
        "us-east-1f",
    }
    assert doc["g5.xlarge"]["capacity"]["nvidia.com/gpu"] == "1"
    assert (
        m5["spec"]["max_enis"] == 3 and m5["spec"]["ipv4_per_eni"] == 10 and m5["spec"]["bare_metal"] is False
    )


def test_unknown_price_is_null(capsys: pytest.CaptureFixture[str], cache: str) -> None:
    code, out, _ = run(
        capsys,
        "--output",
        "json",
        "--filter",
        "karpenter.k8s.aws/instance-family In [m9g]",
        "--cache-dir",
        cache,
    )
    assert code == 0
    doc = json.loads(out)
    assert doc and all(d["on_demand_price"] is None and d["on_demand_source"] == "price unknown" for d in doc)
    code, out, _ = run(capsys, "--filter", "karpenter.k8s.aws/instance-family In [m9g]", "--cache-dir", cache)
    assert "price unknown" in out


def test_text_output_with_filters_and_override(capsys: pytest.CaptureFixture[str], cache: str) -> None:
    code, out, _ = run(
        capsys,
        "--filter",
        "karpenter.k8s.aws/instance-family In [m7g,c7g]",
        "--filter",
        "karpenter.k8s.aws/instance-cpu Lt 3",
        "--override",
        "m7g=-10%",
        "--cache-dir",
        cache,
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("# region us-east-1; instance types: snapshot moto")
    assert "snapshot 2026-01-19" in lines[1] and "estimate" in lines[2] and "override m7g=-10%" in lines[2]
    names = [line.split()[0] for line in lines[4:-1]]
    assert names == ["c7g.medium", "c7g.large", "m7g.medium", "m7g.large"]
    m7g = next(line for line in lines if line.startswith("m7g.large"))
    assert "0.0734" in m7g and " est" in m7g  # 0.0816 - 10 %
    assert lines[-1] == "4 instance types"


def test_zone_and_capacity_type_filters_narrow_offerings(
    capsys: pytest.CaptureFixture[str], cache: str
) -> None:
    code, out, _ = run(
        capsys,
        "--output",
        "json",
        "--filter",
        "node.kubernetes.io/instance-type In [m5.large]",
        "--filter",
        "topology.kubernetes.io/zone In [us-east-1b]",
        "--filter",
        "karpenter.sh/capacity-type In [spot]",
        "--cache-dir",
        cache,
    )
    assert code == 0
    (m5,) = json.loads(out)
    assert [(o["zone"], o["capacityType"]) for o in m5["offerings"]] == [("us-east-1b", "spot")]
    code, out, _ = run(
        capsys,
        "--output",
        "json",
        "--filter",
        "node.kubernetes.io/instance-type In [m5.large]",
        "--filter",
        "topology.kubernetes.io/zone In [us-east-1e]",
        "--cache-dir",
        cache,
    )
    assert json.loads(out) == []  # m5.large is not offered in us-east-1e


def test_kubelet_option(capsys: pytest.CaptureFixture[str], cache: str) -> None:
    code, out, _ = run(
        capsys,
        "--output",
        "json",
        "--kubelet",
        '{"maxPods": 110}',
        "--filter",
        "node.kubernetes.io/instance-type In [m5.large]",
        "--cache-dir",
        cache,
    )
    assert code == 0 and json.loads(out)[0]["capacity"]["pods"] == "110"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--region", "mars-1"], "unknown region 'mars-1'"),
        (["--filter", "nonsense"], "bad --filter 'nonsense'"),
        (["--filter", "karpenter.k8s.aws/instance-cpu Gt [a]"], "needs exactly one integer value"),
        (["--filter", "kubernetes.io/arch Near [arm64]"], "unknown operator"),
        (["--filter", "kubernetes.io/arch In [arm64"], "unbalanced"),
        (["--output", "yaml"], "invalid choice"),
        (["--override", "m5=free"], "bad price override"),
        (["--kubelet", "maxPods: [1"], "bad --kubelet"),
        (["--kubelet", '{"maxPods": "many"}'], "kubelet.maxPods"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], cache: str, argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv, "--cache-dir", cache)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err


def test_help_returns_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "--refresh" in out


def test_refresh_without_credentials(
    capsys: pytest.CaptureFixture[str], cache: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "have_credentials", lambda: False)
    code, out, err = run(
        capsys,
        "--refresh",
        "--output",
        "json",
        "--filter",
        "node.kubernetes.io/instance-type In [m5.large]",
        "--cache-dir",
        cache,
    )
    assert code == 1 and "needs AWS credentials" in err
    assert json.loads(out)[0]["name"] == "m5.large"  # still lists the last good data


def test_refresh_through_moto(
    capsys: pytest.CaptureFixture[str], cache: str, monkeypatch: pytest.MonkeyPatch, moto_ec2: Any
) -> None:
    pricing, _ = stubbed_pricing({"m5.large": "0.1000000000"})
    monkeypatch.setattr(
        live, "refresh", functools.partial(live.refresh, ec2=moto_ec2, pricing=pricing, spot=False)
    )
    code, out, err = run(
        capsys,
        "--refresh",
        "--output",
        "json",
        "--filter",
        "node.kubernetes.io/instance-type In [m5.large]",
        "--cache-dir",
        cache,
    )
    assert code == 0, err
    assert "refresh us-east-1" in err and "m5.large: 0.096 -> 0.1" in err
    (m5,) = json.loads(out)
    assert m5["on_demand_price"] == 0.1 and m5["on_demand_source"].startswith("live ")


def test_refresh_failure_is_reported(
    capsys: pytest.CaptureFixture[str], cache: str, monkeypatch: pytest.MonkeyPatch, moto_ec2: Any
) -> None:
    import boto3
    from botocore.stub import Stubber

    pricing = boto3.client("pricing", region_name="us-east-1")
    stub = Stubber(pricing)
    stub.add_client_error("get_products", "AccessDeniedException", "no pricing:GetProducts")
    stub.activate()
    monkeypatch.setattr(
        live, "refresh", functools.partial(live.refresh, ec2=moto_ec2, pricing=pricing, spot=False)
    )
    code, out, err = run(
        capsys,
        "--refresh",
        "--filter",
        "node.kubernetes.io/instance-type In [m5.large]",
        "--cache-dir",
        cache,
    )
    assert code == 1
    assert "FAILED on-demand prices" in err and "kept the last good data" in err
    assert "0.0960" in out


def test_python_dash_m_packing_catalog(tmp_path: Path) -> None:
    if not (ROOT / "packing" / "__main__.py").exists():
        pytest.skip("packing/__main__.py (the engine's dispatcher) is not there yet")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "packing",
            "catalog",
            "--output",
            "json",
            "--filter",
            "node.kubernetes.io/instance-type In [m5.large]",
            "--cache-dir",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["capacity"]["pods"] == "29"
    bad = subprocess.run(
        [sys.executable, "-m", "packing", "catalog", "--region", "mars-1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
