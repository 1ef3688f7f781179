"""Pages and API: login required, roles, read-only preview (row counts), schema entries."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.test import Client
from rest_framework.test import APIClient

from console.fleet.models import NodePool
from console.whatif.models import Snapshot
from tests.console_pages import rows
from tests.whatif.conftest import add_pod
from tests.whatif.test_services import karpenter_node


def row_counts() -> dict[str, int]:
    return {m._meta.label: m.objects.count() for m in apps.get_models()}


def general_post(**overrides: Any) -> dict[str, Any]:
    """The edit form's POST for pool "general" as the fixture saved it."""
    pool = NodePool.objects.get(name="general")
    data: dict[str, Any] = {
        "name": "general", "node_class_name": "default", "weight": "10", "template_labels": "",
        "template_annotations": "", "limits": "cpu=16", "expire_after": "720h", "termination_grace_period": "",
        "consolidation_policy": "WhenEmptyOrUnderutilized", "consolidate_after": "0s", "revision": str(pool.revision)}
    data.update(rows("req", [{"key": r["key"], "operator": r["operator"], "values": ", ".join(r["values"])}
                             for r in pool.requirements]))
    data.update(rows("taint", []))
    data.update(rows("stainit", []))
    data.update(rows("budget", [{"nodes": "10%"}]))
    data.update(overrides)
    return data


@pytest.mark.parametrize("path", ["/whatif/", "/whatif/snapshots/", "/whatif/pods/shop/web-0/", "/whatif/nodes/x/"])
def test_pages_need_login(db: Any, path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_preview_page_is_read_only(world: Any, viewer_client: Client) -> None:
    before = row_counts()
    response = viewer_client.post("/whatif/nodepools/general/preview/", general_post(limits="cpu=2"),
                                  HTTP_X_REQUESTED_WITH="fetch")
    assert response.status_code == 200, response.content[:2000]
    html = response.content.decode()
    assert 'id="whatif-preview"' in html and "<html" not in html  # a fragment for the edit page
    assert "Pods that become unschedulable" in html and "limit cpu=2 would be exceeded" in html
    assert row_counts() == before
    assert NodePool.objects.get(name="general").limits == {"cpu": "16"}
    # Without JS (no header) it is a full page.
    page = viewer_client.post("/whatif/nodepools/general/preview/", general_post())
    assert page.status_code == 200 and b"<html" in page.content
    bad = viewer_client.post("/whatif/nodepools/general/preview/", general_post(weight="500"),
                             HTTP_X_REQUESTED_WITH="fetch")
    assert bad.status_code == 400 and b"whatif-errors" in bad.content
    assert row_counts() == before


def test_why_pages(world: Any, viewer_client: Client) -> None:
    add_pod(world, "trainer", namespace="ml", cpu="2", memory="4Gi",
            node_selector={"karpenter.k8s.aws/instance-category": "g"})
    world.cluster.apply(karpenter_node("idle"))
    index = viewer_client.get("/whatif/")
    assert index.status_code == 200 and b"/whatif/pods/ml/trainer/" in index.content
    page = viewer_client.get("/whatif/pods/ml/trainer/")
    assert page.status_code == 200 and b"tolerate nvidia.com/gpu" in page.content
    node = viewer_client.get("/whatif/nodes/idle/")
    assert node.status_code == 200 and b"consolidation candidate" in node.content
    assert viewer_client.get("/whatif/nodes/nope/").status_code == 404
    assert viewer_client.get("/whatif/pods/ml/nope/").status_code == 404


SNAP = """apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: default}
spec: {containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
"""


def test_snapshot_pages(db: Any, operator_client: Client, viewer_client: Client) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    assert viewer_client.post("/whatif/snapshots/", {"name": "x", "text": SNAP}).status_code == 403
    bad = operator_client.post("/whatif/snapshots/", {
        "name": "bad", "files": [SimpleUploadedFile("pods.yaml", SNAP.replace('cpu: "1"', "cpu: lots").encode())]})
    assert bad.status_code == 400 and b"pods.yaml: document 1 (Pod p1): spec.containers[0].resources.requests" in bad.content
    assert Snapshot.objects.count() == 0
    ok = operator_client.post("/whatif/snapshots/", {"name": "monday", "files": [SimpleUploadedFile("a.yaml", SNAP.encode())]})
    assert ok.status_code == 302
    snap = Snapshot.objects.get()
    detail = viewer_client.get(ok["Location"])
    assert detail.status_code == 200 and b"python -m packing plan" in detail.content
    download = viewer_client.get(f"/whatif/snapshots/{snap.pk}/json/?output=plan")
    assert download.status_code == 200 and "attachment" in download["Content-Disposition"]
    assert download.json()["summary"]["pending_pods"] == 1
    operator_client.post("/whatif/snapshots/", {"name": "tuesday", "text": SNAP})
    other = Snapshot.objects.exclude(pk=snap.pk).get()
    cmp = viewer_client.get(f"/whatif/snapshots/compare/?a={snap.pk}&b={other.pk}")
    assert cmp.status_code == 200 and b"monday" in cmp.content and b"tuesday" in cmp.content
    assert viewer_client.get("/whatif/snapshots/").status_code == 200


def test_live_snapshot(world: Any, operator_client: Client, viewer_client: Client) -> None:
    assert viewer_client.post("/whatif/snapshots/live/").status_code == 403
    response = operator_client.post("/whatif/snapshots/live/", {"name": "live now"})
    assert response.status_code == 302
    snap = Snapshot.objects.get()
    assert snap.source == Snapshot.LIVE and "NodePool" in snap.yaml
    assert b"shop/web-0" in operator_client.get(response["Location"]).content


# --- API ---------------------------------------------------------------------------------------------

def test_api_needs_authentication(world: Any) -> None:
    client = APIClient()
    assert client.post("/api/whatif/", {"values": {}}, format="json").status_code in (401, 403)
    assert client.get("/api/pods/shop/web-0/why").status_code in (401, 403)
    assert client.get("/api/nodes/x/why").status_code in (401, 403)


def test_api_viewer_may_preview_and_ask_why(world: Any, viewer: Any) -> None:
    client = APIClient()
    client.force_authenticate(viewer)
    before = row_counts()
    response = client.post("/api/whatif/", {"kind": "nodepool", "name": "general",
                                            "values": {"limits": {"cpu": "2"}}}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["becomes_unschedulable"]
    assert row_counts() == before
    assert client.post("/api/whatif/", {"name": "general", "values": {"weight": 500}}, format="json").status_code == 400
    assert client.post("/api/whatif/", {"name": "general", "values": {"bogus": 1}}, format="json").status_code == 400
    assert client.post("/api/whatif/", {"name": "nope", "values": {}}, format="json").status_code == 404
    why = client.get("/api/pods/shop/web-0/why")
    assert why.status_code == 200 and why.json()["pod"] == "shop/web-0"
    assert client.get("/api/pods/shop/nope/why").status_code == 404
    world.cluster.apply(karpenter_node("idle"))  # the simulated cluster keeps its objects in rows
    before = row_counts()
    node = client.get("/api/nodes/idle/why")
    assert node.status_code == 200 and node.json()["candidate"] is True
    assert row_counts() == before


def test_api_in_schema(db: Any, viewer_client: Client) -> None:
    schema = viewer_client.get("/api/schema/?format=json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/whatif/" in paths and "post" in paths["/api/whatif/"]
    assert "/api/pods/{namespace}/{name}/why" in paths and "/api/nodes/{name}/why" in paths


def test_api_preview_of_a_nodeclass_edit(world: Any, viewer: Any) -> None:
    client = APIClient()
    client.force_authenticate(viewer)
    before = row_counts()
    response = client.post("/api/whatif/", {"kind": "nodeclass", "name": "default",
                                            "values": {"kubelet": {"maxPods": 2}}}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["kind"] == "nodeclass" and body["name"] == "default"
    # Two pods per node: the four web pods need more (or other) nodes than before.
    assert body["after"]["launch"] != body["before"]["launch"]
    assert row_counts() == before
