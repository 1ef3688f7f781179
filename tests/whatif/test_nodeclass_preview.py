"""The EC2NodeClass preview runs the validation saving runs (the model's clean(), i.e.
console/fleet/validation.py): errors at the field, for viewers too, never a 500, nothing saved."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from console.fleet.models import EC2NodeClass


def nodeclass_post(**overrides: str) -> dict[str, str]:
    data = {"name": "edited", "ami_family": "", "ami_selector_terms": "- alias: al2023@latest",
            "subnet_selector_terms": "- tags: {karpenter.sh/discovery: test}",
            "security_group_selector_terms": "- tags: {karpenter.sh/discovery: test}",
            "role": "KarpenterNodeRole-test", "instance_profile": "", "tags": "", "block_device_mappings": "",
            "kubelet_system_reserved": "", "kubelet_kube_reserved": "", "kubelet_eviction_hard": "",
            "user_data": "", "detailed_monitoring": "unknown", "associate_public_ip_address": "unknown"}
    data.update(overrides)
    return data


@pytest.mark.parametrize(("overrides", "field", "needle"), [
    ({"instance_profile": "MyProfile"}, "role", ""),                       # role xor instanceProfile
    ({"ami_selector_terms": "- alias: al2023@latest\n- id: ami-123"}, "ami_selector_terms", "alias"),
    ({"tags": "karpenter.sh/nodepool=x"}, "tags", ""),                    # Karpenter-owned tag
    ({"ami_family": "AL2", "ami_selector_terms": "- alias: al2023@latest"}, "ami_family", ""),
])
def test_preview_refuses_what_saving_refuses(world: Any, viewer_client: Client, operator_client: Client,
                                             overrides: dict[str, str], field: str, needle: str) -> None:
    saved = operator_client.post("/nodeclasses/new/", nodeclass_post(**overrides))
    assert saved.status_code == 400 and not EC2NodeClass.objects.filter(name="edited").exists()
    for client in (viewer_client, operator_client):
        response = client.post("/whatif/nodeclasses/preview/", nodeclass_post(**overrides),
                               HTTP_X_REQUESTED_WITH="fetch")
        assert response.status_code == 400, response.content[:500]
        errors = response.context["errors"]
        assert any(e.startswith(f"{field}: ") or field in e for e in errors), errors
        assert needle in " ".join(errors)
    assert not EC2NodeClass.objects.filter(name="edited").exists()


def test_valid_nodeclass_preview_still_runs(world: Any, viewer_client: Client) -> None:
    response = viewer_client.post("/whatif/nodeclasses/default/preview/", nodeclass_post(name="default"),
                                  HTTP_X_REQUESTED_WITH="fetch")
    assert response.status_code == 200 and b'id="whatif-delta"' in response.content


def test_api_preview_runs_the_same_validation(world: Any, viewer: Any) -> None:
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_login(viewer)
    bad = client.post("/api/whatif/", {"kind": "nodeclass", "name": "default",
                                       "values": {"instance_profile": "MyProfile"}}, format="json")
    assert bad.status_code == 400 and "role" in " ".join(bad.json()) + " ".join(map(str, bad.json().values()))
    weird = client.post("/api/whatif/", {"kind": "nodepool", "name": "general", "values": {"weight": "heavy"}},
                        format="json")
    assert weird.status_code == 400 and "weight" in weird.json()
    assert not EC2NodeClass.objects.filter(instance_profile="MyProfile").exists()
