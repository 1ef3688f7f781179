"""CapacityBuffers in the console: the CRD's rules at the field (form, API 400, import path), the import and
export beside NodePools (all or nothing), the pages (viewers read, operators write), and the loops' inputs."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from console import adapters
from console.buffers import manifests, services
from console.buffers.models import CapacityBuffer
from console.fleet import services as fleet_services
from console.fleet.models import NodePool
from packing import api

pytestmark = pytest.mark.django_db

BUFFER = """
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: web-buffer, namespace: prod}
spec:
  scalableRef: {apiGroup: apps, kind: Deployment, name: web}
  percentage: 20
  limits: {cpu: "8"}
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


def values(**overrides: Any) -> dict[str, Any]:
    v: dict[str, Any] = {"namespace": "default", "name": "room", "pod_template_ref": "spare", "replicas": 2}
    v.update(overrides)
    return v


def run_import(user: User | None, *texts: str) -> fleet_services.ImportResult:
    return fleet_services.karpenter_import(texts=[("f.yaml", t) for t in texts], user=user)


# ---------------------------------------------------------------- the CRD's rules, at the field
@pytest.mark.parametrize(
    ("overrides", "field", "text"),
    [
        ({"scalable_kind": "Deployment", "scalable_name": "web"}, "__all__", "but not both"),
        ({"replicas": None}, "__all__", "replicas or limits must also be set"),
        ({"replicas": -1}, "replicas", "greater than or equal to 0"),
        ({"name": "Not_A_Name"}, "name", "RFC 1123"),
        ({"limits": {"cpu": "lots"}}, "limits", "cpu"),
    ],
)
def test_the_model_refuses_what_the_crd_refuses(overrides: dict[str, Any], field: str, text: str) -> None:
    with pytest.raises(Exception) as info:
        services.buffer_create(values=values(**overrides))
    assert text in " ".join(info.value.message_dict[field])  # type: ignore[attr-defined]
    assert not CapacityBuffer.objects.exists()


def test_export_imports_back_to_the_same_row() -> None:
    result = run_import(None, BUFFER)
    assert result.ok, result.problems
    assert result.created == ["CapacityBuffer/prod/web-buffer"]
    b = CapacityBuffer.objects.get()
    assert (b.scalable_kind, b.percentage, b.limits, b.provisioning_strategy) == (
        "Deployment", 20, {"cpu": "8"}, api.ACTIVE_CAPACITY)
    exported = fleet_services.karpenter_export([], buffers=[b])
    again = run_import(None, exported)
    assert again.ok and again.unchanged == ["CapacityBuffer/prod/web-buffer"]
    assert api.check_buffer(yaml.safe_load(exported)).percentage == 20


def test_one_file_carries_nodepools_and_buffers_all_or_nothing(nodeclass: Any) -> None:
    bad = BUFFER.replace("percentage: 20", "percentage: -3")
    result = run_import(None, POOL + "---" + bad)
    assert not result.ok
    assert [str(p) for p in result.problems] == [
        "f.yaml: document 2: spec.percentage: must be greater than or equal to 0"]
    assert not NodePool.objects.exists() and not CapacityBuffer.objects.exists()
    result = run_import(None, POOL + "---" + BUFFER)
    assert result.ok, result.problems
    assert NodePool.objects.count() == 1 and CapacityBuffer.objects.count() == 1


@pytest.mark.parametrize(
    ("doc", "path"),
    [
        (BUFFER.replace("  percentage: 20", "  percent: 20"), "spec.percent"),
        (BUFFER.replace("  scalableRef: {apiGroup: apps, kind: Deployment, name: web}",
                        "  scalableRef: {apiGroup: apps, kind: Deployment, name: web}\n  podTemplateRef: {name: t}"),
         "spec"),
        (BUFFER.replace("kind: Deployment, name: web", "kind: Deployment"), "spec.scalableRef.name"),
        (BUFFER.replace('cpu: "8"', "cpu: lots"), "spec.limits.cpu"),
    ],
)
def test_import_errors_name_file_document_and_path(doc: str, path: str) -> None:
    result = run_import(None, doc)
    assert [(p.source, p.document, p.path) for p in result.problems][:1] == [("f.yaml", 1, path)]
    assert not CapacityBuffer.objects.exists()


# ---------------------------------------------------------------- pages and API
def test_viewers_read_the_list_and_operators_write(viewer_client: APIClient, operator_client: APIClient) -> None:
    services.buffer_create(values=values())
    page = viewer_client.get("/buffers/")
    assert page.status_code == 200 and b"room" in page.content
    assert viewer_client.post("/buffers/new/", values(name="other")).status_code == 403
    form = {**values(name="other"), "replicas": "3", "provisioning_strategy": api.ACTIVE_CAPACITY, "limits": ""}
    assert operator_client.post("/buffers/new/", form).status_code == 302
    assert CapacityBuffer.objects.filter(name="other", replicas=3).exists()
    bad = operator_client.post("/buffers/new/", {**form, "name": "third", "replicas": "", "limits": ""})
    assert bad.status_code == 400 and b"replicas or limits must also be set" in bad.content
    assert not CapacityBuffer.objects.filter(name="third").exists()


def test_nav_links_to_the_buffers(viewer_client: APIClient) -> None:
    assert b'href="/buffers/"' in viewer_client.get("/nodepools/").content


def test_api_crud_and_400_naming_the_field(viewer_client: APIClient, operator_client: APIClient) -> None:
    body = {"namespace": "default", "name": "room", "pod_template_ref": "spare", "replicas": 2}
    assert viewer_client.post("/api/capacitybuffers/", body, format="json").status_code == 403
    created = operator_client.post("/api/capacitybuffers/", body, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["manifest"]["spec"]["podTemplateRef"] == {"name": "spare"}
    got = viewer_client.get("/api/capacitybuffers/default/room/")
    assert got.status_code == 200 and got.json()["replicas"] == 2
    bad = operator_client.patch("/api/capacitybuffers/default/room/", {"percentage": -1}, format="json")
    assert bad.status_code == 400 and "percentage" in bad.json()
    assert CapacityBuffer.objects.get().percentage is None
    assert operator_client.delete("/api/capacitybuffers/default/room/").status_code == 204


def test_openapi_schema_has_the_buffers(viewer_client: APIClient) -> None:
    schema = viewer_client.get("/api/schema/?format=json")
    assert schema.status_code == 200 and b"/api/capacitybuffers/" in schema.content


# ---------------------------------------------------------------- the loops read them
def test_the_loops_inputs_carry_the_buffers_virtual_pods() -> None:
    b = services.buffer_create(values=values(pod_template_ref="", scalable_api_group="apps",
                                             scalable_kind="Deployment", scalable_name="web", replicas=None,
                                             percentage=50))
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"web-7d9f-{i}", "namespace": "default",
                          "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7d9f"}]},
             "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
            for i in range(4)]
    inputs = adapters.cluster_inputs(pods=pods, nodes=(), buffers=[b])
    (resolved,) = api.buffer_pods(inputs)
    assert len(resolved.pods) == 2  # 50% of the 4 pods the Deployment's ReplicaSet runs
    assert manifests.field_for_path("spec.scalableRef.name") == "scalable_name"
