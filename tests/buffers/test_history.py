"""CapacityBuffer edits go to the change history NodePools have (console.fleet ChangeRecord): created, updated,
deleted, who and from where, the manifest's paths that changed; shown on the buffer's page and in the API."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from console.buffers import services
from console.fleet import services as fleet_services
from console.fleet.models import ChangeRecord

BUFFER = """
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: room, namespace: default}
spec:
  podTemplateRef: {name: spare}
  replicas: %d
"""


def records() -> list[tuple[str, str, str, str, dict[str, Any]]]:
    return [(r.object_name, r.action, r.source, r.username, r.changes)
            for r in ChangeRecord.objects.filter(object_type=ChangeRecord.CAPACITYBUFFER).order_by("id")]


def test_the_form_and_the_import_record_who_and_the_diff(operator_client: APIClient, operator_user: User) -> None:
    form = {"namespace": "default", "name": "room", "provisioning_strategy": "buffer.x-k8s.io/active-capacity",
            "pod_template_ref": "spare", "replicas": "2", "limits": ""}
    assert operator_client.post("/buffers/new/", form).status_code == 302
    assert operator_client.post("/buffers/default/room/", {**form, "replicas": "5"}).status_code == 302
    assert operator_client.post("/buffers/default/room/", {**form, "replicas": "5"}).status_code == 302  # no change
    result = fleet_services.karpenter_import(texts=[("f.yaml", BUFFER % 7)], user=operator_user)
    assert result.updated == ["CapacityBuffer/default/room"]
    assert operator_client.post("/buffers/default/room/delete/").status_code == 302
    who = operator_user.username
    created, updated, imported, deleted = records()
    assert created[:4] == ("default/room", "created", "form", who)
    assert created[4]["spec.replicas"] == [None, 2] and created[4]["spec.podTemplateRef.name"] == [None, "spare"]
    assert updated == ("default/room", "updated", "form", who, {"spec.replicas": [2, 5]})
    assert imported == ("default/room", "updated", "import", who, {"spec.replicas": [5, 7]})
    assert deleted[:4] == ("default/room", "deleted", "form", who) and deleted[4]["spec.replicas"] == [7, None]


def test_the_page_and_the_api_show_the_history(viewer_client: APIClient, operator_client: APIClient,
                                               operator_user: User) -> None:
    body = {"namespace": "default", "name": "room", "pod_template_ref": "spare", "replicas": 2}
    assert operator_client.post("/api/capacitybuffers/", body, format="json").status_code == 201
    assert operator_client.patch("/api/capacitybuffers/default/room/", {"replicas": 4},
                                 format="json").status_code == 200
    page = operator_client.get("/buffers/default/room/")
    assert page.status_code == 200 and b"<h2>History</h2>" in page.content and b"spec.replicas" in page.content
    got = viewer_client.get("/api/capacitybuffers/default/room/history/")
    assert got.status_code == 200, got.content
    newest, first = got.json()["results"]
    assert (newest["action"], newest["source"], newest["user"]) == ("updated", "api", operator_user.username)
    assert newest["changes"] == {"spec.replicas": [2, 4]} and first["action"] == "created"
    assert operator_client.delete("/api/capacitybuffers/default/room/").status_code == 204
    # still readable once the buffer is gone; an unknown buffer is a 404
    assert [r["action"] for r in viewer_client.get("/api/capacitybuffers/default/room/history/").json()["results"]] \
        == ["deleted", "updated", "created"]
    assert viewer_client.get("/api/capacitybuffers/default/other/history/").status_code == 404


def test_a_rename_closes_the_old_history_and_opens_a_new_one(db: Any) -> None:
    b = services.buffer_create(values={"namespace": "default", "name": "room", "pod_template_ref": "spare",
                                       "replicas": 1})
    services.buffer_update(buffer=b, values={"name": "room2"})
    assert [(r[0], r[1]) for r in records()] == [("default/room", "created"), ("default/room", "deleted"),
                                                ("default/room2", "created")]
