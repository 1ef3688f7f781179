from __future__ import annotations

import io
import json
from pathlib import Path

from packing.__main__ import main as packing_main
from packing.advise_cli import main
from tests.packing.advisor.helpers import deployment, nodepool, pdb

CATALOG = """
apiVersion: loadmaster.dev/v1alpha1
kind: InstanceType
metadata: {name: m-4x}
spec:
  capacity: {cpu: "4", memory: 16Gi, pods: "110"}
  labels: {kubernetes.io/arch: amd64, karpenter.k8s.aws/instance-family: m}
  offerings:
  - {zone: us-east-1a, capacityType: on-demand, price: "0.192"}
  - {zone: us-east-1a, capacityType: spot, price: "0.08"}
"""


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(argv), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def test_json_shape(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(nodepool(extra_spec="  limits: {cpu: '4'}") + deployment("web", 6) + pdb("web", "web", min_available="6"))
    cat = tmp_path / "types.yaml"
    cat.write_text(CATALOG)
    rc, out, err = _run(str(f), "--catalog", str(cat))
    assert rc == 0, err
    doc = json.loads(out)
    assert set(doc) == {"findings", "summary"}
    first = doc["findings"][0]
    assert list(first) == ["code", "severity", "title", "objects", "evidence", "monthly_savings", "fix"]
    assert first["code"] == "LM101" and first["objects"] == ["nodepool/default"]
    assert set(first["fix"]) == {"kind", "name", "patch", "diff"} and first["fix"]["kind"] == "NodePool"
    assert doc["summary"]["findings"] == len(doc["findings"])
    assert doc["summary"]["by_severity"]["error"] >= 2  # LM101 and LM121


def test_text_output(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(nodepool(template="      expireAfter: Never"))
    rc, out, _ = _run(str(f), "--output", "text")
    assert rc == 0 and "LM152 INFO" in out and "+      expireAfter: 720h" in out


def test_bad_input_exits_2_naming_file_document_and_field(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(nodepool() + "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: {weight: many}\n")
    rc, out, err = _run(str(f))
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and f"{f}: document 2" in err and "spec.weight" in err


def test_missing_file_and_bad_option_exit_2(tmp_path: Path) -> None:
    assert _run(str(tmp_path / "nope.yaml"))[0] == 2
    f = tmp_path / "c.yaml"
    f.write_text(nodepool())
    assert _run(str(f), "--do-not-disrupt-share", "3")[0] == 2


def test_registered_as_a_subcommand(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "c.yaml"
    f.write_text(nodepool())
    assert packing_main(["advise", str(f)]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["nodepools"] == 1


def test_aws_adds_the_iam_preflight(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from moto import mock_aws

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "a")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "b")
    f = tmp_path / "c.yaml"
    f.write_text(nodepool())
    with mock_aws():
        rc, out, err = _run(str(f), "--aws", "--node-role", "KarpenterNodeRole")
    assert rc == 0, err
    doc = json.loads(out)
    iam = doc["summary"]["iam"]
    assert iam["allowed"] >= 5 and iam["denied"] == 0
    # moto has no policy simulator and no instance profile of that name: reported as not checked
    assert {f["code"] for f in doc["findings"] if f["objects"][0].startswith("iam/")} == {"LM172"}
