"""Commitments in the console: the document's rules at the field (form, API 400, import path), import and export
with the NodePools (all or nothing, round trip), the AWS refresh's upsert by source and external id, and the
adapter that hands the engine packing.commitments.Commitment."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
import yaml
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from console import adapters
from console.commitments import services
from console.commitments.models import Commitment
from console.fleet import services as fleet_services
from console.fleet.models import NodePool
from packing import api

pytestmark = pytest.mark.django_db

SP = """
apiVersion: loadmaster.dev/v1alpha1
kind: Commitment
metadata:
  name: compute-sp
  annotations: {loadmaster.dev/note: "3 years, no upfront"}
spec:
  type: ComputeSavingsPlan
  region: us-east-1
  hourlyCommitment: "12.5"
  rates: {c6g: "0.31", m5: "0.28"}
  starts: "2026-01-01T00:00:00Z"
  ends: "2029-01-01T00:00:00Z"
"""

RI = """
apiVersion: loadmaster.dev/v1alpha1
kind: Commitment
metadata: {name: ri-m5}
spec:
  type: ReservedInstances
  instanceType: m5.large
  zone: us-east-1a
  count: 4
"""

POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
"""


def values(**overrides: Any) -> dict[str, Any]:
    v: dict[str, Any] = {"name": "ri-m5", "type": "ReservedInstances", "instance_type": "m5.large",
                         "zone": "us-east-1a", "count": 4}
    v.update(overrides)
    return v


def run_import(*texts: str) -> fleet_services.ImportResult:
    return fleet_services.karpenter_import(texts=[("f.yaml", t) for t in texts], user=None)


# ---------------------------------------------------------------- the document's rules, at the field
@pytest.mark.parametrize(
    ("overrides", "field", "text"),
    [
        ({"count": -2}, "count", "at least 0"),
        ({"count": 0}, "count", "at least 1"),
        ({"instance_type": ""}, "instance_type", "instanceType or an instanceFamily"),
        ({"type": "SavingsPlan"}, "type", ""),
        ({"type": "ComputeSavingsPlan", "count": None, "rates": {"m5": "0.2"}}, "hourly_commitment",
         "needs its hourlyCommitment"),
        ({"type": "ComputeSavingsPlan", "count": None, "hourly_commitment": "2", "rates": {"m5": "1"}}, "rates",
         "m5: a rate is the discount"),
        ({"type": "ComputeSavingsPlan", "count": None, "hourly_commitment": "2", "rates": {"m5": "-0.1"}}, "rates",
         "m5: must be a decimal number"),
        ({"starts": datetime(2027, 1, 1, tzinfo=UTC), "ends": datetime(2026, 1, 1, tzinfo=UTC)}, "ends",
         "must be after spec.starts"),
        ({"name": "Bad Name"}, "name", "RFC 1123"),
    ],
)
def test_the_model_refuses_what_the_document_refuses(overrides: dict[str, Any], field: str, text: str) -> None:
    with pytest.raises(ValidationError) as e:
        services.commitment_create(values=values(**overrides))
    assert any(text in m for m in e.value.message_dict[field]), e.value.message_dict
    assert not Commitment.objects.exists()


# ---------------------------------------------------------------- import and export
@pytest.mark.parametrize("doc", [SP, RI])
def test_export_imports_back_to_the_same_row(doc: str) -> None:
    result = run_import(doc)
    assert result.ok, result.problems
    row = Commitment.objects.get()
    exported = fleet_services.karpenter_export([], others={"Commitment": [row]})
    assert yaml.safe_load(exported) == yaml.safe_load(doc)
    again = run_import(exported)
    assert again.ok and again.unchanged == [f"Commitment/{row.name}"]


def test_one_file_carries_nodepools_and_commitments_all_or_nothing(nodeclass: Any) -> None:
    bad = SP.replace('m5: "0.28"', 'm5: "1.28"')
    result = run_import(POOL + "---" + RI + "---" + bad)
    assert not result.ok
    assert [str(p) for p in result.problems][0].startswith(
        "f.yaml: document 3: spec.rates.m5: a rate is the discount off on-demand")
    assert not NodePool.objects.exists() and not Commitment.objects.exists()
    result = run_import(POOL + "---" + RI + "---" + SP)
    assert result.ok, result.problems
    assert NodePool.objects.count() == 1 and Commitment.objects.count() == 2


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        (RI.replace("count: 4", "count: -1"), "spec.count"),
        (RI.replace("type: ReservedInstances", "type: Reserved"), "spec.type"),
        (RI.replace("  instanceType: m5.large\n", ""), "spec.instanceType"),
        (SP.replace('  hourlyCommitment: "12.5"\n', ""), "spec.hourlyCommitment"),
        (SP.replace('ends: "2029-01-01T00:00:00Z"', 'ends: "2025-01-01T00:00:00Z"'), "spec.ends"),
        (RI.replace("count: 4", "count: 4\n  discount: 3"), "spec.discount"),
    ],
)
def test_import_errors_name_file_document_and_path(doc: str, path: str) -> None:
    result = run_import(doc)
    assert [(p.source, p.document, p.path) for p in result.problems][:1] == [("f.yaml", 1, path)], result.problems
    assert not Commitment.objects.exists()


def test_export_all_has_the_commitments(viewer_client: APIClient) -> None:
    services.commitment_create(values=values())
    text = viewer_client.get("/export/").content.decode()
    assert "kind: Commitment" in text and "name: ri-m5" in text


# ---------------------------------------------------------------- the AWS refresh's upsert
def test_upsert_by_source_and_external_id() -> None:
    row, created = services.commitment_upsert(
        source="aws:savingsplans", external_id="sp-0123abcd",
        values={"type": "EC2InstanceSavingsPlan", "instance_family": "m7g", "region": "us-east-1",
                "hourly_commitment": Decimal("3.25"), "rates": {"m7g": Decimal("0.33")},
                "starts": datetime(2026, 1, 1, tzinfo=UTC), "ends": datetime(2027, 1, 1, tzinfo=UTC)})
    assert created and row.name == "aws-sp-0123abcd" and row.source == "aws:savingsplans"
    again, created = services.commitment_upsert(source="aws:savingsplans", external_id="sp-0123abcd",
                                                values={"hourly_commitment": "4"})
    assert not created and again.pk == row.pk and again.hourly_commitment == Decimal("4")
    assert again.rates == {"m7g": "0.33"}  # left out: kept
    with pytest.raises(ValidationError) as e:
        services.commitment_upsert(source="aws:savingsplans", external_id="sp-0123abcd", values={"rates": {"m7g": 1}})
    assert "rates" in e.value.message_dict
    assert Commitment.objects.get().rates == {"m7g": "0.33"}  # nothing saved
    # the export names where it came from, so it imports back to the same row
    assert row.manifest()["metadata"]["annotations"] == {"loadmaster.dev/source": "aws:savingsplans",
                                                         "loadmaster.dev/external-id": "sp-0123abcd"}
    services.commitment_upsert(source="aws:DescribeReservedInstances", external_id="ri-1",
                               values={"type": "ReservedInstances", "instance_type": "m5.large", "count": 2})
    services.commitment_create(values=values(name="mine"))
    assert services.commitment_prune(source="aws:savingsplans", keep=[]) == 1
    assert services.commitment_prune(source="console", keep=[]) == 0
    assert sorted(Commitment.objects.values_list("name", flat=True)) == ["aws-ri-1", "mine"]


def test_the_adapter_hands_the_engine_its_commitments() -> None:
    services.commitment_create(values=values())
    services.commitment_upsert(source="aws:savingsplans", external_id="sp-9",
                               values={"type": "ComputeSavingsPlan", "hourly_commitment": "1.5",
                                       "rates": {"m5": "0.28"}})
    by_name = {c.name: c for c in adapters.commitments()}
    assert by_name["ri-m5"] == api.Commitment(name="ri-m5", kind=api.CommitmentKind.RESERVED_INSTANCES,
                                              instance_type="m5.large", zone="us-east-1a", count=4, source="console")
    sp = by_name["aws-sp-9"]
    assert sp.hourly_commitment == 1.5 and dict(sp.rates) == {"m5": 0.28} and sp.source == "aws:savingsplans"


# ---------------------------------------------------------------- pages and API
def test_viewers_read_the_list_and_operators_write(viewer_client: APIClient, operator_client: APIClient) -> None:
    services.commitment_create(values=values())
    page = viewer_client.get("/commitments/")
    assert page.status_code == 200 and b"ri-m5" in page.content and b"m5.large" in page.content
    assert b'href="/commitments/"' in viewer_client.get("/nodepools/").content
    form = {"name": "sp", "type": "ComputeSavingsPlan", "hourly_commitment": "2.5", "rates": "m5: 0.28\nc6g: 0.3",
            "instance_type": "", "instance_family": "", "zone": "", "region": "us-east-1", "count": "",
            "starts": "", "ends": "", "note": ""}
    assert viewer_client.post("/commitments/new/", form).status_code == 403
    assert operator_client.post("/commitments/new/", form).status_code == 302
    assert Commitment.objects.get(name="sp").rates == {"m5": "0.28", "c6g": "0.3"}
    bad = operator_client.post("/commitments/new/", {**form, "name": "sp2", "rates": "m5: 1.5"})
    assert bad.status_code == 400 and "a rate is the discount" in str(bad.context["form"].errors["rates"])
    bad = operator_client.post("/commitments/new/", {**form, "name": "sp3", "hourly_commitment": ""})
    assert bad.status_code == 400 and "hourlyCommitment" in str(bad.context["form"].errors["hourly_commitment"])
    assert not Commitment.objects.filter(name__in=["sp2", "sp3"]).exists()
    assert viewer_client.get("/commitments/sp/").status_code == 403
    assert operator_client.post("/commitments/sp/delete/").status_code == 302


def test_api_crud_and_400_naming_the_field(viewer_client: APIClient, operator_client: APIClient) -> None:
    body = {"name": "sp", "type": "ComputeSavingsPlan", "hourly_commitment": "12.5", "rates": {"m5": "0.28"}}
    assert viewer_client.post("/api/commitments/", body, format="json").status_code == 403
    created = operator_client.post("/api/commitments/", body, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["manifest"]["spec"] == {"type": "ComputeSavingsPlan", "hourlyCommitment": "12.5",
                                                  "rates": {"m5": "0.28"}}
    assert viewer_client.get("/api/commitments/sp/").json()["rates"] == {"m5": "0.28"}
    bad = operator_client.patch("/api/commitments/sp/", {"rates": {"m5": "2"}}, format="json")
    assert bad.status_code == 400 and "rates" in bad.json()
    bad = operator_client.post("/api/commitments/", {**body, "name": "ri", "type": "ReservedInstances",
                                                     "hourly_commitment": None, "rates": {}, "count": -1},
                               format="json")
    assert bad.status_code == 400 and "count" in bad.json()
    assert operator_client.delete("/api/commitments/sp/").status_code == 204
    schema = viewer_client.get("/api/schema/?format=json")
    assert b"/api/commitments/" in schema.content
