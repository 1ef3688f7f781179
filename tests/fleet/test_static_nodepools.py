"""Static NodePools (spec.replicas) in the console: the CRD's rules at the field (form, API, import), scaling
through PATCH and the page's scale action (operators only), the history and the OpenAPI schema."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from console.fleet import services, validation
from console.fleet.models import ChangeRecord, NodePool
from tests.fleet.conftest import nodepool_values


def static_values(**overrides: Any) -> dict[str, Any]:
    return nodepool_values(**{"name": "fixed", "replicas": 3, "weight": None, "limits": {"nodes": "5"}, **overrides})


@pytest.fixture
def static_pool(nodeclass: Any) -> NodePool:
    return services.nodepool_create(values=static_values(), user=None, source="demo")


def test_rules_are_karpenters_cel_rules() -> None:
    def fields(**values: Any) -> dict[str, str]:
        return {i.field: i.message for i in validation.check_nodepool(static_values(**values))}

    assert fields() == {}
    assert fields(replicas=-1)["replicas"].startswith("-1 must be an integer from 0")
    assert fields(weight=5) == {"weight": "'weight' is not supported on static NodePools"}
    assert fields(limits={"cpu": "10"}) == {"limits": "only 'limits.nodes' is supported on static NodePools"}
    assert fields(replicas=0) == {}
    # a pool cannot switch between static and dynamic
    switch = "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes"
    issues = validation.check_nodepool(nodepool_values(replicas=None), before={"replicas": 3})
    assert [(i.field, i.message) for i in issues] == [("replicas", switch)]
    issues = validation.check_nodepool(nodepool_values(replicas=2, weight=None, limits={}), before={"replicas": None})
    assert [(i.field, i.message) for i in issues] == [("replicas", switch)]


def test_patch_replicas_scales_and_is_recorded(operator_client: APIClient, static_pool: NodePool) -> None:
    response = operator_client.patch("/api/nodepools/fixed/", {"replicas": 7}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["replicas"] == 7
    assert NodePool.objects.get(name="fixed").replicas == 7
    record = ChangeRecord.objects.filter(object_name="fixed", action="updated").get()
    assert (record.source, record.changes) == ("api", {"spec.replicas": [3, 7]})


@pytest.mark.parametrize(("body", "field", "words"), [
    ({"replicas": -2}, "replicas", "must be an integer from 0"),
    ({"replicas": "many"}, "replicas", "valid integer"),
    ({"replicas": None}, "replicas", "Cannot transition NodePool between static"),
    ({"weight": 3}, "weight", "'weight' is not supported on static NodePools"),
])
def test_bad_patch_is_400_naming_the_field(operator_client: APIClient, static_pool: NodePool,
                                           body: dict[str, Any], field: str, words: str) -> None:
    response = operator_client.patch("/api/nodepools/fixed/", body, format="json")
    assert response.status_code == 400
    assert words in " ".join(response.json()[field])
    assert NodePool.objects.get(name="fixed").replicas == 3


def test_replicas_cannot_be_added_to_a_dynamic_pool(operator_client: APIClient, nodepool: NodePool) -> None:
    response = operator_client.patch("/api/nodepools/general/", {"replicas": 2, "weight": None, "limits": {}},
                                     format="json")
    assert response.status_code == 400
    assert "Cannot transition" in response.json()["replicas"][0]


def test_a_viewer_cannot_scale(viewer_client: APIClient, static_pool: NodePool) -> None:
    assert viewer_client.patch("/api/nodepools/fixed/", {"replicas": 9}, format="json").status_code == 403
    assert NodePool.objects.get(name="fixed").replicas == 3


def test_openapi_schema_has_replicas(viewer_client: APIClient) -> None:
    schema = viewer_client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    props = schema.json()["components"]["schemas"]["NodePool"]["properties"]
    assert props["replicas"]["type"] == "integer" and "spec.replicas" in props["replicas"]["description"]


def _page_client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_scale_action_on_the_page(operator_user: Any, viewer_user: Any, static_pool: NodePool,
                                      nodepool: NodePool) -> None:
    operator = _page_client(operator_user)
    page = operator.get("/nodepools/fixed/").content.decode()
    assert 'action="/nodepools/fixed/scale/"' in page
    assert 'action="/nodepools/general/scale/"' not in operator.get("/nodepools/general/").content.decode()
    response = operator.post("/nodepools/fixed/scale/", {"replicas": "1", "revision": "1"})
    assert response.status_code == 302
    assert NodePool.objects.get(name="fixed").replicas == 1
    assert ChangeRecord.objects.filter(object_name="fixed", action="updated", source="form").exists()
    bad = operator.post("/nodepools/fixed/scale/", {"replicas": "-1"})
    assert bad.status_code == 400
    assert "Ensure this value is greater than or equal to 0" in bad.content.decode()
    viewer = _page_client(viewer_user)
    assert 'action="/nodepools/fixed/scale/"' not in viewer.get("/nodepools/fixed/").content.decode()
    assert viewer.post("/nodepools/fixed/scale/", {"replicas": "5"}).status_code == 403
    assert NodePool.objects.get(name="fixed").replicas == 1


def test_the_form_puts_the_rules_at_their_fields(operator_user: Any, nodeclass: Any) -> None:
    client = _page_client(operator_user)
    data = {"name": "fixed", "node_class_name": "default", "expire_after": "720h",
            "consolidation_policy": "WhenEmptyOrUnderutilized", "consolidate_after": "0s", "replicas": "2",
            "weight": "5", "limits": "cpu=10"}
    for prefix in ("req", "taint", "stainit", "budget"):
        data.update({f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"})
    response = client.post("/nodepools/new/", data)
    assert response.status_code == 400
    form = response.context["form"]
    assert form.errors["weight"] == ["'weight' is not supported on static NodePools"]
    assert form.errors["limits"] == ["only 'limits.nodes' is supported on static NodePools"]
    assert not NodePool.objects.filter(name="fixed").exists()
    data.update(weight="", limits="nodes=4")
    assert client.post("/nodepools/new/", data).status_code == 302
    assert NodePool.objects.get(name="fixed").replicas == 2
