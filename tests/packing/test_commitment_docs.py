"""The `loadmaster.dev/v1alpha1 Commitment` document: read into packing.commitments.Commitment, every bad field
refused at the field, and read by the plan CLI into Inputs.commitments."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from packing.commitmentdocs import commitment_document, read_commitment
from packing.commitments import Commitment, CommitmentKind
from packing.fields import FieldError
from packing.kubeobjects import load_files
from packing.plan_cli import main


def doc(spec: dict[str, object], name: str = "c1") -> dict[str, object]:
    return {"apiVersion": "loadmaster.dev/v1alpha1", "kind": "Commitment", "metadata": {"name": name}, "spec": spec}


RI = {"type": "ReservedInstances", "instanceType": "m5.large", "zone": "us-east-1a", "count": 4,
      "starts": "2026-01-01T00:00:00Z", "ends": "2027-01-01T00:00:00Z"}
SP = {"type": "ComputeSavingsPlan", "region": "us-east-1", "hourlyCommitment": "12.5",
      "rates": {"m5": "0.28", "c6g.large": 0.31}}


def test_reserved_instances() -> None:
    c = read_commitment(doc(RI), source="f.yaml")
    assert c == Commitment(name="c1", kind=CommitmentKind.RESERVED_INSTANCES, instance_type="m5.large",
                           zone="us-east-1a", count=4, starts=datetime(2026, 1, 1, tzinfo=UTC),
                           ends=datetime(2027, 1, 1, tzinfo=UTC), source="f.yaml")


def test_savings_plan() -> None:
    c = read_commitment(doc(SP))
    assert c.kind is CommitmentKind.COMPUTE_SAVINGS_PLAN and c.hourly_commitment == 12.5
    assert dict(c.rates) == {"m5": 0.28, "c6g.large": 0.31} and c.count == 0
    fam = read_commitment(doc({"type": "ReservedInstances", "instanceFamily": "m5", "region": "us-east-1",
                               "count": 8}))
    assert fam.instance_family == "m5" and fam.instance_type is None


@pytest.mark.parametrize("spec", [RI, SP, {"type": "EC2InstanceSavingsPlan", "instanceFamily": "m7g",
                                           "hourlyCommitment": 3, "rates": {"m7g": "0"}}])
def test_document_round_trip(spec: dict[str, object]) -> None:
    c = read_commitment(doc(spec))
    assert read_commitment(commitment_document(c)) == c


@pytest.mark.parametrize(
    ("spec", "path", "words"),
    [
        ({**RI, "count": -1}, "spec.count", "at least 0"),
        ({**RI, "count": 0}, "spec.count", "at least 1"),
        ({**SP, "rates": {"m5": "1"}}, "spec.rates.m5", "up to (not including) 1"),
        ({**SP, "rates": {"m5": "1.5"}}, "spec.rates.m5", "up to (not including) 1"),
        ({**SP, "rates": {"m5": "-0.1"}}, "spec.rates.m5", "decimal number"),
        ({**SP, "rates": {"m5": -0.1}}, "spec.rates.m5", "must not be negative"),
        ({**SP, "rates": {"m5": "a lot"}}, "spec.rates.m5", "decimal number"),
        ({**SP, "type": "SavingsPlan"}, "spec.type", "unknown type"),
        ({"instanceType": "m5.large", "count": 1}, "spec.type", "is required"),
        ({"type": "ReservedInstances", "count": 1}, "spec.instanceType", "instanceType or an instanceFamily"),
        ({"type": "ComputeSavingsPlan", "rates": {"m5": "0.2"}}, "spec.hourlyCommitment", "needs its hourlyCommitment"),
        ({**SP, "hourlyCommitment": "0"}, "spec.hourlyCommitment", "more than 0"),
        ({**SP, "count": 2}, "spec.count", "Reserved Instances only"),
        ({**RI, "hourlyCommitment": "1"}, "spec.hourlyCommitment", "Savings Plans only"),
        ({**RI, "ends": "2025-01-01T00:00:00Z"}, "spec.ends", "must be after spec.starts"),
        ({**RI, "ends": "soon"}, "spec.ends", "invalid timestamp"),
        ({**RI, "discount": "1"}, "spec.discount", "unknown field"),
    ],
)
def test_bad_documents_are_refused_at_the_field(spec: dict[str, object], path: str, words: str) -> None:
    with pytest.raises(FieldError) as e:
        read_commitment(doc(spec))
    assert e.value.path == path and words in e.value.message


def test_missing_spec_and_name() -> None:
    with pytest.raises(FieldError) as e:
        read_commitment({"metadata": {"name": "x"}})
    assert e.value.path == "spec"
    with pytest.raises(FieldError) as e:
        read_commitment({"metadata": {}, "spec": SP})
    assert e.value.path == "metadata.name"


YAML = """
apiVersion: loadmaster.dev/v1alpha1
kind: Commitment
metadata: {name: sp-1}
spec:
  type: ComputeSavingsPlan
  hourlyCommitment: "2.5"
  rates: {m5: "0.28"}
"""


def test_files_are_read_into_inputs_commitments(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(YAML + "---\n" + YAML.replace("sp-1", "sp-2"))
    inp = load_files([str(f)])
    assert [c.name for c in inp.commitments] == ["sp-1", "sp-2"] and not inp.skipped
    assert inp.commitments[0].source == str(f)


def test_plan_cli_refuses_a_bad_commitment_naming_file_document_and_field(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(YAML.replace('"0.28"', '"1.2"'))
    out, err = io.StringIO(), io.StringIO()
    assert main([str(f)], stdout=out, stderr=err) == 2
    line = err.getvalue().strip()
    assert line.startswith(f"error: {f}: document 1 (Commitment sp-1): spec.rates.m5: a rate is the discount")
    assert len(line.splitlines()) == 1 and out.getvalue() == ""


def test_a_commitment_defined_twice_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(YAML + "---\n" + YAML)
    out, err = io.StringIO(), io.StringIO()
    assert main([str(f)], stdout=out, stderr=err) == 2
    assert "document 2 (Commitment sp-1): metadata.name: Commitment sp-1 is defined more than once" in err.getvalue()
