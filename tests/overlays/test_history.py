"""NodeOverlay edits go to the change history NodePools and CapacityBuffers have (console.fleet ChangeRecord):
created, updated, deleted, who and from where (form, API, import), the manifest's paths that changed; shown on the
overlay's page."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from console.fleet import services as fleet_services
from console.fleet.models import ChangeRecord

OVERLAY = """
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: m5-savings}
spec:
  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]
  priceAdjustment: "%s"
"""


def records() -> list[tuple[str, str, str, str, dict[str, Any]]]:
    return [(r.object_name, r.action, r.source, r.username, r.changes)
            for r in ChangeRecord.objects.filter(object_type=ChangeRecord.NODEOVERLAY).order_by("id")]


def test_form_api_and_import_record_who_and_the_diff(operator_client: APIClient, operator_user: User) -> None:
    form = {"name": "m5-savings", "requirements": "karpenter.k8s.aws/instance-family In m5", "capacity": "",
            "price": "", "price_adjustment": "-20%", "weight": "", "note": ""}
    assert operator_client.post("/nodeoverlays/new/", form).status_code == 302
    assert operator_client.post("/nodeoverlays/m5-savings/", form).status_code == 302  # no change: no record
    patched = operator_client.patch("/api/nodeoverlays/m5-savings/", {"price_adjustment": "-25%"}, format="json")
    assert patched.status_code == 200, patched.content
    result = fleet_services.karpenter_import(texts=[("f.yaml", OVERLAY % "-30%")], user=operator_user)
    assert result.updated == ["NodeOverlay/m5-savings"]
    page = operator_client.get("/nodeoverlays/m5-savings/").content.decode()
    assert "<h2>History</h2>" in page and "spec.priceAdjustment" in page and "YAML import" in page
    assert operator_client.post("/nodeoverlays/m5-savings/delete/").status_code == 302
    who = operator_user.username
    created, api, imported, deleted = records()
    assert created[:4] == ("m5-savings", "created", "form", who)
    assert created[4]["spec.priceAdjustment"] == [None, "-20%"]
    assert api == ("m5-savings", "updated", "api", who, {"spec.priceAdjustment": ["-20%", "-25%"]})
    assert imported == ("m5-savings", "updated", "import", who, {"spec.priceAdjustment": ["-25%", "-30%"]})
    assert deleted[:4] == ("m5-savings", "deleted", "form", who) and deleted[4]["spec.priceAdjustment"] == ["-30%", None]
