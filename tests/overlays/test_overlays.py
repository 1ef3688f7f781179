"""NodeOverlays in the console: the CRD's rules at the field (form, API 400, import path), import and export with
the NodePools (all or nothing, round trip), the catalog applying them wherever it prices a node, and the price
overrides moved into them by the data migration."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from rest_framework.test import APIClient

from console import adapters
from console.fleet import services as fleet_services
from console.fleet.models import NodePool
from console.overlays import services
from console.overlays.models import NodeOverlay

pytestmark = pytest.mark.django_db

OVERLAY = """
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata:
  name: m5-savings
  annotations: {loadmaster.dev/note: 3y Compute Savings Plan}
spec:
  requirements:
  - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}
  - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  priceAdjustment: "-20%"
  weight: 10
"""

POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
"""


@pytest.fixture(autouse=True)
def fresh_catalog_cache() -> Any:
    adapters.clear_catalog_cache()
    yield
    adapters.clear_catalog_cache()


def values(**overrides: Any) -> dict[str, Any]:
    v: dict[str, Any] = {"name": "m5-savings", "requirements": [
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}],
        "price_adjustment": "-20%"}
    v.update(overrides)
    return v


def run_import(*texts: str) -> fleet_services.ImportResult:
    return fleet_services.karpenter_import(texts=[("f.yaml", t) for t in texts], user=None)


def on_demand(name: str) -> Any:
    t = next(t for t in adapters.instance_types("us-east-1") if t.name == name)
    return next(o for o in t.offerings if o.capacity_type == "on-demand")


# ---------------------------------------------------------------- the CRD's rules, at the field
@pytest.mark.parametrize(
    ("overrides", "field", "text"),
    [
        ({"requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "Near", "values": ["m5"]}]},
         "requirements", "[0].operator: unknown operator"),
        ({"requirements": [{"key": "x", "operator": "In"}]}, "requirements", "[0].values"),
        ({"price": "0.1"}, "price_adjustment", "cannot set both"),
        ({"price_adjustment": "20%"}, "price_adjustment", "signed amount"),
        ({"price_adjustment": "", "price": "cheap"}, "price", "must be a price"),
        ({"capacity": {"memory": "1Gi"}}, "capacity", "memory: invalid resource restricted"),
        ({"weight": 0}, "weight", "from 1 to 10000"),
        ({"name": "Not A Name"}, "name", "RFC 1123"),
    ],
)
def test_the_model_refuses_what_the_crd_refuses(overrides: dict[str, Any], field: str, text: str) -> None:
    with pytest.raises(ValidationError) as e:
        services.overlay_create(values=values(**overrides))
    assert any(text in m for m in e.value.message_dict[field]), e.value.message_dict
    assert not NodeOverlay.objects.exists()


# ---------------------------------------------------------------- import and export
def test_export_imports_back_to_the_same_row() -> None:
    result = run_import(OVERLAY)
    assert result.ok, result.problems
    assert result.created == ["NodeOverlay/m5-savings"]
    row = NodeOverlay.objects.get()
    assert row.note == "3y Compute Savings Plan" and row.weight == 10
    exported = fleet_services.karpenter_export([], others={"NodeOverlay": [row]})
    assert yaml.safe_load(exported) == yaml.safe_load(OVERLAY)
    again = run_import(exported)
    assert again.ok and again.unchanged == ["NodeOverlay/m5-savings"]


def test_one_file_carries_nodepools_and_overlays_all_or_nothing(nodeclass: Any) -> None:
    bad = OVERLAY.replace('"-20%"', '"-200%"')
    result = run_import(POOL + "---" + bad)
    assert not result.ok
    assert [str(p) for p in result.problems][0].startswith("f.yaml: document 2: spec.priceAdjustment: must be a signed")
    assert not NodePool.objects.exists() and not NodeOverlay.objects.exists()
    result = run_import(POOL + "---" + OVERLAY)
    assert result.ok, result.problems
    assert NodePool.objects.count() == 1 and NodeOverlay.objects.count() == 1


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        (OVERLAY.replace("  weight: 10", "  priceAdjustments: [-10%]"), "spec.priceAdjustments"),
        (OVERLAY.replace("operator: In, values: [m5]", "operator: Near, values: [m5]"), "spec.requirements[0].operator"),
        (OVERLAY.replace("  weight: 10", "  capacity: {cpu: '2'}"), "spec.capacity.cpu"),
        (OVERLAY.replace("  weight: 10", "  weight: heavy"), "spec.weight"),
        (OVERLAY.replace("  weight: 10", "  price: '0.1'"), "spec.priceAdjustment"),
        (OVERLAY.replace("apiVersion: karpenter.sh/v1alpha1", "apiVersion: karpenter.sh/v1"), "apiVersion"),
    ],
)
def test_import_errors_name_file_document_and_path(doc: str, path: str) -> None:
    result = run_import(doc)
    assert [(p.source, p.document, p.path) for p in result.problems][:1] == [("f.yaml", 1, path)], result.problems
    assert not NodeOverlay.objects.exists()


def test_export_all_has_the_overlays(viewer_client: APIClient) -> None:
    services.overlay_create(values=values())
    text = viewer_client.get("/export/").content.decode()
    assert "kind: NodeOverlay" in text and "name: m5-savings" in text


# ---------------------------------------------------------------- the catalog applies them
def test_the_catalog_prices_with_the_stored_overlays() -> None:
    list_price = on_demand("m5.large").price
    services.overlay_create(values=values())
    adjusted = on_demand("m5.large")
    assert adjusted.price == pytest.approx(list_price * 0.8) and adjusted.overlays == ("m5-savings",)
    assert on_demand("c5.large").overlays == ()
    types = adapters.engine_catalog(pools=[], nodeclasses=[])
    assert next(t for t in types if t.name == "m5.large").offerings[0].overlays == ("m5-savings",)
    services.overlay_delete(overlay=NodeOverlay.objects.get())
    assert on_demand("m5.large").price == list_price


# ---------------------------------------------------------------- pages and API
def test_viewers_read_the_list_and_operators_write(viewer_client: APIClient, operator_client: APIClient) -> None:
    services.overlay_create(values=values())
    services.overlay_create(values=values(name="rival", weight=None,
                                          requirements=[{"key": "karpenter.k8s.aws/instance-family",
                                                         "operator": "In", "values": ["m5", "c5"]}]))
    page = viewer_client.get("/nodeoverlays/")
    assert page.status_code == 200 and b"m5-savings" in page.content
    assert b"conflicts with rival" in page.content  # same weight (0), rival's name is later: m5-savings is out
    assert b'href="/nodeoverlays/"' in viewer_client.get("/nodepools/").content
    form = {"name": "fuse", "requirements": "node.kubernetes.io/instance-type In m5.large, m5.xlarge",
            "capacity": "smarter-devices/fuse: 1", "price": "", "price_adjustment": "", "weight": "", "note": ""}
    assert viewer_client.post("/nodeoverlays/new/", form).status_code == 403
    assert operator_client.post("/nodeoverlays/new/", form).status_code == 302
    row = NodeOverlay.objects.get(name="fuse")
    assert row.requirements == [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                 "values": ["m5.large", "m5.xlarge"]}]
    assert row.capacity == {"smarter-devices/fuse": "1"}
    bad = operator_client.post("/nodeoverlays/new/", {**form, "name": "bad", "requirements": "x Near y"})
    assert bad.status_code == 400 and "unknown operator" in str(bad.context["form"].errors["requirements"])
    assert not NodeOverlay.objects.filter(name="bad").exists()
    assert operator_client.get("/nodeoverlays/fuse/").status_code == 200
    assert viewer_client.get("/nodeoverlays/fuse/").status_code == 403
    assert operator_client.post("/nodeoverlays/fuse/delete/").status_code == 302
    assert not NodeOverlay.objects.filter(name="fuse").exists()


def test_api_crud_and_400_naming_the_field(viewer_client: APIClient, operator_client: APIClient) -> None:
    body = {"name": "od", "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In",
                                            "values": ["on-demand"]}], "price_adjustment": "-10%", "weight": 5}
    assert viewer_client.post("/api/nodeoverlays/", body, format="json").status_code == 403
    created = operator_client.post("/api/nodeoverlays/", body, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["manifest"]["spec"]["priceAdjustment"] == "-10%"
    got = viewer_client.get("/api/nodeoverlays/od/")
    assert got.status_code == 200 and got.json()["weight"] == 5
    bad = operator_client.patch("/api/nodeoverlays/od/", {"price_adjustment": "ten"}, format="json")
    assert bad.status_code == 400 and "price_adjustment" in bad.json()
    assert NodeOverlay.objects.get().price_adjustment == "-10%"
    dup = operator_client.post("/api/nodeoverlays/", body, format="json")
    assert dup.status_code == 400 and "name" in dup.json()
    assert operator_client.delete("/api/nodeoverlays/od/").status_code == 204
    schema = viewer_client.get("/api/schema/?format=json")
    assert schema.status_code == 200 and b"/api/nodeoverlays/" in schema.content


# ---------------------------------------------------------------- the price overrides' data migration
@pytest.mark.django_db(transaction=True)
def test_old_price_overrides_become_overlays() -> None:
    executor = MigrationExecutor(connection)
    before = [("catalog", "0001_initial"), ("overlays", "0001_s7_h19overlay_initial")]
    executor.migrate(before)
    old = MigrationExecutor(connection).loader.project_state(before).apps
    Rule = old.get_model("catalog", "PriceOverrideRule")
    Rule.objects.create(selector="m5", capacity_type="on-demand", percent="-20", note="RI", position=0)
    Rule.objects.create(selector="m5.large", capacity_type="*", price="0.05", position=1)
    Rule.objects.create(selector="*", capacity_type="spot", percent="5", position=1)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    rows = {o.name: o for o in NodeOverlay.objects.all()}
    assert set(rows) == {"price-override-m5-on-demand", "price-override-m5-large-any", "price-override-all-spot"}
    m5 = rows["price-override-m5-on-demand"]
    assert m5.manifest() == {
        "apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
        "metadata": {"name": "price-override-m5-on-demand", "annotations": {"loadmaster.dev/note": "RI"}},
        "spec": {"requirements": [
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
            "priceAdjustment": "-20%", "weight": 1}}
    assert rows["price-override-m5-large-any"].price == "0.05" and rows["price-override-m5-large-any"].weight == 2
    assert rows["price-override-all-spot"].price_adjustment == "+5%"
    for row in rows.values():
        row.full_clean()  # every moved rule is a valid overlay
    # the later fixed price still wins on m5.large, as it did when the rules applied in order
    assert on_demand("m5.large").price == 0.05

