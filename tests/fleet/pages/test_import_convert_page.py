"""The import page's "Convert legacy objects" box (and ?convert=1): converts, imports, shows the report."""

from __future__ import annotations

import pytest
from django.test import Client

from console.fleet.models import NodePool
from tests.packing.test_legacy_convert import PROVISIONER

pytestmark = pytest.mark.django_db


def test_the_box_converts_and_the_page_shows_the_report(operator_client: Client) -> None:
    refused = operator_client.post("/import/", {"text": PROVISIONER})
    assert refused.status_code == 400 and "?convert=1" in refused.content.decode()
    assert NodePool.objects.count() == 0
    response = operator_client.post("/import/", {"text": PROVISIONER, "convert": "on"})
    html = response.content.decode()
    assert response.status_code == 200 and 'id="conversion-report"' in html
    assert "spec.ttlSecondsAfterEmpty" in html and "Converted and imported 2 object(s)" in html
    assert NodePool.objects.get(name="default").consolidate_after == "30s"


def test_convert_in_the_address_ticks_the_box(operator_client: Client) -> None:
    html = operator_client.get("/import/?convert=1").content.decode()
    assert 'name="convert"' in html and "checked" in html.split('name="convert"')[1].split(">")[0] + \
        html.split('name="convert"')[0].rsplit("<", 1)[1]
    response = operator_client.post("/import/?convert=1", {"text": PROVISIONER})
    assert response.status_code == 200 and NodePool.objects.filter(name="default").exists()
