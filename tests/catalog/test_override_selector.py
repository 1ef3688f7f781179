"""A price override's selector is what its NodeOverlay's requirement matches: "*", a family or a type in the
catalog — anything else (free text, a glob, a label selector) would silently match nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from console import adapters
from console.overlays.models import NodeOverlay

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_catalog_cache() -> Any:
    adapters.clear_catalog_cache()
    yield
    adapters.clear_catalog_cache()


def post(client: Client, selector: str) -> Any:
    return client.post("/catalog/overrides/", {"selector": selector, "capacity_type": "on-demand",
                                               "percent": "-10"})


@pytest.mark.parametrize("selector", ["*", "m5", "m5.large", "u-6tb1.112xlarge", "c7gd"])
def test_good_selectors(operator_client: Client, selector: str) -> None:
    assert post(operator_client, selector).status_code == 302
    reqs = NodeOverlay.objects.get().requirements
    if selector == "*":
        assert [r["key"] for r in reqs] == ["karpenter.sh/capacity-type"]
    else:
        assert reqs[0]["values"] == [selector]
        assert reqs[0]["key"] == ("node.kubernetes.io/instance-type" if "." in selector
                                  else "karpenter.k8s.aws/instance-family")


@pytest.mark.parametrize(("selector", "message"), [
    ("anything at all", "Not a selector"), ("m5*", "Not a selector"), ("M5.Large", "Not a selector"),
    ("instance-family=m5", "Not a selector"), ("<script>", "Not a selector"),
    ("m5.lage", "in the catalog"), ("zz9", "in the catalog"),
])
def test_bad_selectors_refused_at_the_field(operator_client: Client, selector: str, message: str) -> None:
    response = post(operator_client, selector)
    assert response.status_code == 400
    assert any(message in e for e in response.context["override_form"].errors["selector"])
    assert not NodeOverlay.objects.exists()
