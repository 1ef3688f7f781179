"""The catalog page and price overrides: searchable, dated, estimates marked, overrides applied (an override is
written as a NodeOverlay)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from console import adapters
from console.overlays.models import NodeOverlay


@pytest.fixture(autouse=True)
def fresh_catalog_cache() -> Any:
    adapters.clear_catalog_cache()
    yield
    adapters.clear_catalog_cache()


def m5_large_on_demand(client: Client) -> str:
    page = client.get("/catalog/?q=m5.large&family=m5")
    row = next(r for r in page.context["page"].object_list if r.name == "m5.large")
    assert row.on_demand is not None
    return f"{row.on_demand.price} {row.on_demand.price_source} {' '.join(row.on_demand.overlays)}".strip()


def test_catalog_page_shows_sources_and_estimates(viewer_client: Client) -> None:
    response = viewer_client.get("/catalog/?family=m7g")
    assert response.status_code == 200
    html = response.content.decode()
    names = [r.name for r in response.context["page"].object_list]
    assert "m7g.large" in names and all(n.startswith("m7g.") for n in names)
    assert "snapshot" in html and "est." in html
    assert response.context["summary"]["count"] > 500


def test_operator_adds_and_removes_override(operator_client: Client) -> None:
    assert m5_large_on_demand(operator_client).startswith("0.096 snapshot")
    response = operator_client.post("/catalog/overrides/", {"selector": "m5", "capacity_type": "on-demand",
                                                            "percent": "-25", "note": "3y RI"})
    assert response.status_code == 302
    assert m5_large_on_demand(operator_client).startswith("0.072 ")
    assert m5_large_on_demand(operator_client).endswith(" price-override-m5-on-demand")
    # the override is the NodeOverlay it stands for, on the NodeOverlay page and in the export
    overlay = NodeOverlay.objects.get()
    assert overlay.manifest()["spec"] == {
        "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]},
                         {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
        "priceAdjustment": "-25%"}
    assert overlay.note == "3y RI"
    assert b"price-override-m5-on-demand" in operator_client.get("/nodeoverlays/").content
    assert operator_client.post(f"/catalog/overrides/{overlay.name}/delete/").status_code == 302
    assert m5_large_on_demand(operator_client).startswith("0.096 ")


@pytest.mark.parametrize("data, field", [
    ({"selector": "m5", "capacity_type": "on-demand"}, "price"),
    ({"selector": "m5", "capacity_type": "on-demand", "price": "0.1", "percent": "-5"}, "price"),
    ({"selector": "m5", "capacity_type": "on-demand", "percent": "-150"}, "percent"),
    ({"selector": "m5", "capacity_type": "on-demand", "price": "-1"}, "price"),
    ({"selector": "m5", "capacity_type": "on-demand", "price": "0.1", "weight": "0"}, "weight"),
])
def test_bad_override_shows_error_at_field_and_saves_nothing(operator_client: Client, data: dict[str, str], field: str) -> None:
    response = operator_client.post("/catalog/overrides/", data)
    assert response.status_code == 400
    assert response.context["override_form"].errors[field]
    assert not NodeOverlay.objects.exists()


def test_viewer_cannot_change_overrides(viewer_client: Client, operator: Any) -> None:
    response = viewer_client.post("/catalog/overrides/", {"selector": "m5", "capacity_type": "on-demand",
                                                          "percent": "-25"})
    assert response.status_code == 403
    NodeOverlay.objects.create(name="c5-discount", price_adjustment="-10%")
    assert viewer_client.post("/catalog/overrides/c5-discount/delete/").status_code == 403
    assert NodeOverlay.objects.count() == 1


def test_refresh_is_skipped_without_aws(viewer_client: Client, settings: Any) -> None:
    from console.catalog.services import catalog_refresh
    from console.catalog.tasks import refresh_catalog

    settings.LOADMASTER_CLOUD = "simulated"
    refresh_catalog.delay()                     # eager in tests: runs the service
    record = catalog_refresh(kind="spot")
    assert record.skipped and record.ok and "needs LOADMASTER_CLOUD=aws" in record.summary
    assert b"needs LOADMASTER_CLOUD=aws" in viewer_client.get("/catalog/").content


def test_failed_refresh_is_reported_and_old_data_kept(viewer_client: Client, settings: Any, tmp_path: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from console.catalog.services import catalog_refresh
    from packing.catalog import live

    settings.LOADMASTER_CLOUD = "aws"
    settings.LOADMASTER_CATALOG_CACHE = str(tmp_path)
    monkeypatch.setattr(live, "have_credentials", lambda: True)

    def failing_refresh(region: str, cache_dir: Any, **kwargs: Any) -> live.RefreshReport:
        report = live.RefreshReport(region=region, fetched_at="2026-11-30T10:00Z")
        report.errors["on-demand prices"] = "AccessDeniedException: pricing:GetProducts"
        return report

    monkeypatch.setattr(live, "refresh", failing_refresh)
    record = catalog_refresh(kind="full")
    assert not record.ok and "FAILED on-demand prices: AccessDeniedException" in record.summary
    html = viewer_client.get("/catalog/").content.decode()
    assert "failed — the last good data is still in use" in html
    assert m5_large_on_demand(viewer_client).startswith("0.096 snapshot")   # bundled price still used


def test_memory_columns_say_what_they_are(viewer_client: Client) -> None:
    """m5.large: EC2 lists 8 GiB; the node reports 7577Mi (7.5 % VM overhead off); pods get 6903Mi."""
    html = viewer_client.get("/catalog/?q=m5.large&family=m5").content.decode()
    assert "Memory (EC2)" in html and "Memory (node capacity)" in html
    assert "7.5 % the hypervisor and kernel keep" in html
    row = html[html.index("<code>m5.large</code>"):].split("</tr>", 1)[0]
    assert '<td class="num">8 GiB</td>' in row
    assert '<td class="num" title="7577Mi">7.4 GiB</td>' in row and 'title="6903Mi">6.7 GiB' in row
