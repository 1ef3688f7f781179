"""The REST API under /api/: roles, CRUD through the services, history, filters, pagination,
token auth, the OpenAPI schema, Karpenter YAML import/export, and no 500 on bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from django.contrib.staticfiles import finders
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from console.fleet import services
from console.fleet.api.views import _drf_errors
from console.fleet.models import ChangeRecord, Decision, EC2NodeClass, NodeClaim, NodePool
from tests.fleet.conftest import make_claim, nodeclass_values, nodepool_values

pytestmark = pytest.mark.django_db

NODEPOOL_YAML = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: imported
spec:
  template:
    spec:
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
  limits:
    cpu: 100
  weight: 5
"""
NODECLASS_YAML = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: imported-class
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: demo
"""
BAD_NODEPOOL_YAML = NODEPOOL_YAML.replace("name: imported\n", "name: broken\n").replace(
    'operator: In\n          values: ["amd64"]', "operator: In\n          values: []")


def snapshot() -> dict[str, Any]:
    """Everything a write could change, to prove a refused write changed nothing."""
    def rows(model: type[Model]) -> list[dict[str, Any]]:
        return list(model.objects.order_by("pk").values())
    return {m.__name__: rows(m) for m in (NodePool, EC2NodeClass, NodeClaim, Decision, ChangeRecord)}


def endpoints(fleet: dict[str, Any]) -> list[str]:
    decision = fleet["decisions"]["launch"]
    return [
        "/api/", "/api/schema/", "/api/docs/",
        "/api/nodepools/", "/api/nodepools/general/", "/api/nodepools/general/history/",
        "/api/nodepools/general/export/",
        "/api/nodeclasses/", "/api/nodeclasses/default/", "/api/nodeclasses/default/history/",
        "/api/nodeclasses/default/export/",
        "/api/nodeclaims/", "/api/nodeclaims/general-a/",
        "/api/decisions/", f"/api/decisions/{decision.pk}/",
    ]


def write_requests(fleet: dict[str, Any]) -> list[tuple[str, str, Any]]:
    decision = fleet["decisions"]["launch"]
    pool = nodepool_values(name="new-pool")
    return [
        ("post", "/api/nodepools/", pool),
        ("put", "/api/nodepools/general/", nodepool_values(weight=99)),
        ("patch", "/api/nodepools/general/", {"weight": 99}),
        ("delete", "/api/nodepools/general/", None),
        ("post", "/api/nodeclasses/", nodeclass_values(name="new-class")),
        ("put", "/api/nodeclasses/default/", nodeclass_values(role="OtherRole")),
        ("patch", "/api/nodeclasses/default/", {"role": "OtherRole"}),
        ("delete", "/api/nodeclasses/default/", None),
        ("post", "/api/import/", {"yaml": NODEPOOL_YAML}),
        ("post", "/api/import/?dry_run=1", {"yaml": NODEPOOL_YAML}),
        ("post", "/api/nodeclaims/", {"name": "x", "nodepool_name": "general"}),
        ("patch", "/api/nodeclaims/general-a/", {"zone": "elsewhere"}),
        ("delete", "/api/nodeclaims/general-a/", None),
        ("post", "/api/decisions/", {"kind": "launch", "why": "x"}),
        ("delete", f"/api/decisions/{decision.pk}/", None),
    ]


def send(client: APIClient, method: str, url: str, data: Any = None) -> Any:
    return getattr(client, method)(url, data, format="json") if data is not None else getattr(client, method)(url)


# --- roles ----------------------------------------------------------------------------------------

def test_anonymous_is_refused_everywhere(anon_client: APIClient, fleet: dict[str, Any]) -> None:
    before = snapshot()
    for url in endpoints(fleet):
        response = anon_client.get(url)
        assert response.status_code in (401, 403), url
    for method, url, data in write_requests(fleet):
        response = send(anon_client, method, url, data)
        assert response.status_code in (401, 403), (method, url)
    assert snapshot() == before


def test_a_bad_token_is_refused(anon_client: APIClient, fleet: dict[str, Any]) -> None:
    anon_client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    for url in ("/api/nodepools/", "/api/schema/"):
        response = anon_client.get(url)
        assert response.status_code in (401, 403)
        assert response.data["detail"] == "Invalid token."


def test_viewer_reads_everything(viewer_client: APIClient, fleet: dict[str, Any]) -> None:
    for url in endpoints(fleet):
        response = viewer_client.get(url)
        assert response.status_code == 200, (url, response.content[:300])


@pytest.mark.parametrize("client_fixture", ["viewer_client", "groupless_client"])
def test_non_operator_writes_are_refused_and_change_nothing(
        request: pytest.FixtureRequest, client_fixture: str, fleet: dict[str, Any]) -> None:
    client = request.getfixturevalue(client_fixture)
    before = snapshot()
    for method, url, data in write_requests(fleet):
        response = send(client, method, url, data)
        assert response.status_code == 403, (method, url, response.content[:300])
        assert "operator" in response.json()["detail"]
    # A YAML body too, not only JSON.
    response = client.post("/api/import/", NODEPOOL_YAML, content_type="text/yaml")
    assert response.status_code == 403
    assert snapshot() == before


def test_operator_cannot_write_read_only_endpoints(operator_client: APIClient, fleet: dict[str, Any]) -> None:
    before = snapshot()
    decision = fleet["decisions"]["launch"]
    assert operator_client.post("/api/nodeclaims/", {"name": "x"}, format="json").status_code == 405
    assert operator_client.delete("/api/nodeclaims/general-a/").status_code == 405
    assert operator_client.patch(f"/api/decisions/{decision.pk}/", {"why": "x"}, format="json").status_code == 405
    assert snapshot() == before


# --- NodePool CRUD --------------------------------------------------------------------------------

def test_operator_creates_a_nodepool_through_the_service(
        operator_client: APIClient, operator_user: Any, nodeclass: EC2NodeClass) -> None:
    payload = nodepool_values(name="web", taints=[{"key": "dedicated", "value": "web", "effect": "NoSchedule"}])
    response = operator_client.post("/api/nodepools/", payload, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert response["Location"].endswith("/api/nodepools/web/")
    for key, value in payload.items():
        assert body[key] == value, key
    assert body["revision"] == 1
    assert {"created_at", "updated_at", "usage"} <= set(body)
    assert body["usage"]["nodes"] == 0
    pool = NodePool.objects.get(name="web")
    assert pool.taints == payload["taints"]
    assert pool.requirements == payload["requirements"]
    record = ChangeRecord.objects.get(object_type="nodepool", object_name="web")
    assert (record.action, record.source, record.user, record.username) == (
        "created", "api", operator_user, operator_user.username)
    assert record.changes["spec.weight"] == [None, 10]


def test_create_applies_karpenter_defaults(operator_client: APIClient) -> None:
    response = operator_client.post("/api/nodepools/", {"name": "minimal"}, format="json")
    assert response.status_code == 201, response.content
    pool = NodePool.objects.get(name="minimal")
    assert pool.budgets == [{"nodes": "10%"}]
    assert pool.expire_after == "720h"
    assert pool.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert pool.node_class_name == "default"
    assert pool.weight is None


def test_nodepool_detail_and_list_show_usage(viewer_client: APIClient, fleet: dict[str, Any]) -> None:
    body = viewer_client.get("/api/nodepools/general/").json()
    assert body["name"] == "general"
    assert body["requirements"] == nodepool_values()["requirements"]
    # Three live claims (a, b, c); 2 cpu each against a limit of 1000.
    assert body["usage"]["nodes"] == 3
    assert body["usage"]["cost_per_hour"] == "0.200000"
    cpu = next(row for row in body["usage"]["resources"] if row["resource"] == "cpu")
    assert cpu["used"] == "6" and cpu["limit"] == "1000"
    listed = viewer_client.get("/api/nodepools/").json()
    assert listed["count"] == 2
    by_name = {p["name"]: p for p in listed["results"]}
    assert by_name["general"]["usage"]["nodes"] == 3
    assert by_name["gpu"]["usage"]["nodes"] == 1  # gpu-d is terminated
    assert [p["name"] for p in listed["results"]] == ["gpu", "general"]  # higher weight first


def test_put_replaces_and_patch_changes_only_given_fields(
        operator_client: APIClient, operator_user: Any, nodepool: NodePool) -> None:
    response = operator_client.patch("/api/nodepools/general/", {"weight": 42}, format="json")
    assert response.status_code == 200, response.content
    nodepool.refresh_from_db()
    assert nodepool.weight == 42
    assert nodepool.limits == {"cpu": "1000", "memory": "1000Gi"}  # untouched
    assert nodepool.revision == 2
    record = ChangeRecord.objects.filter(object_name="general", action="updated").get()
    assert record.source == "api" and record.user == operator_user
    assert record.changes == {"spec.weight": [10, 42]}

    # PUT without limits/labels/weight: they go back to their defaults.
    response = operator_client.put("/api/nodepools/general/", {
        "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}],
    }, format="json")
    assert response.status_code == 200, response.content
    nodepool.refresh_from_db()
    assert nodepool.limits == {}
    assert nodepool.template_labels == {}
    assert nodepool.weight is None
    assert nodepool.consolidate_after == "0s"
    assert nodepool.requirements == [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]
    assert nodepool.revision == 3
    assert response.json()["revision"] == 3


def test_name_cannot_be_changed(operator_client: APIClient, nodepool: NodePool) -> None:
    response = operator_client.patch("/api/nodepools/general/", {"name": "renamed"}, format="json")
    assert response.status_code == 400
    assert "name" in response.json()
    assert NodePool.objects.filter(name="general").exists()
    # Repeating the same name is fine.
    assert operator_client.put("/api/nodepools/general/", nodepool_values(), format="json").status_code == 200


def test_duplicate_name_is_400(operator_client: APIClient, nodepool: NodePool) -> None:
    response = operator_client.post("/api/nodepools/", nodepool_values(), format="json")
    assert response.status_code == 400
    assert "name" in response.json()


def test_delete_nodepool_records_history_still_readable(
        operator_client: APIClient, viewer_client: APIClient, operator_user: Any, nodepool: NodePool) -> None:
    assert operator_client.delete("/api/nodepools/general/").status_code == 204
    assert not NodePool.objects.filter(name="general").exists()
    record = ChangeRecord.objects.get(object_name="general", action="deleted")
    assert record.source == "api" and record.user == operator_user
    history = viewer_client.get("/api/nodepools/general/history/").json()
    assert [r["action"] for r in history["results"]] == ["deleted", "created"]
    assert viewer_client.get("/api/nodepools/general/").status_code == 404
    assert viewer_client.get("/api/nodepools/never-existed/history/").status_code == 404


def test_history_endpoint(operator_client: APIClient, viewer_client: APIClient, nodepool: NodePool) -> None:
    operator_client.patch("/api/nodepools/general/", {"weight": 20}, format="json")
    body = viewer_client.get("/api/nodepools/general/history/").json()
    assert body["count"] == 2
    newest = body["results"][0]
    assert newest["action"] == "updated"
    assert newest["source"] == "api"
    assert newest["user"] == "otto-operator"
    assert newest["changes"] == {"spec.weight": [10, 20]}
    assert body["results"][1]["source"] == "demo"


# --- stale revision -------------------------------------------------------------------------------

def test_stale_revision_is_409_and_saves_nothing(operator_client: APIClient, nodepool: NodePool) -> None:
    services.nodepool_update(nodepool=nodepool, values={"weight": 11}, user=None, source="form")  # revision 2
    before = snapshot()
    response = operator_client.patch("/api/nodepools/general/", {"weight": 50, "revision": 1}, format="json")
    assert response.status_code == 409, response.content
    assert "changed by someone else" in response.json()["detail"]
    response = operator_client.put("/api/nodepools/general/", nodepool_values(weight=50, revision=1), format="json")
    assert response.status_code == 409
    assert snapshot() == before
    response = operator_client.patch("/api/nodepools/general/", {"weight": 50, "revision": 2}, format="json")
    assert response.status_code == 200
    assert response.json()["revision"] == 3
    nodepool.refresh_from_db()
    assert nodepool.weight == 50


def test_stale_revision_on_nodeclass(operator_client: APIClient, nodeclass: EC2NodeClass) -> None:
    response = operator_client.patch("/api/nodeclasses/default/", {"role": "X", "revision": 7}, format="json")
    assert response.status_code == 409
    nodeclass.refresh_from_db()
    assert nodeclass.role == "KarpenterNodeRole-demo"


# --- validation -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("change", "field"), [
    ({"requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": []}]}, "requirements"),
    ({"requirements": [{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["-1"]}]},
     "requirements"),
    ({"template_labels": {"karpenter.sh/custom": "x"}}, "template_labels"),
    ({"weight": 101}, "weight"),
    ({"weight": 0}, "weight"),
    ({"expire_after": "forever"}, "expire_after"),
    ({"consolidation_policy": "Sometimes"}, "consolidation_policy"),
    ({"budgets": [{"nodes": "10%", "schedule": "0 9 * * *"}]}, "budgets"),
    ({"budgets": [{"nodes": "10%", "schedule": "not a cron", "duration": "8h"}]}, "budgets"),
    ({"taints": [{"key": "a", "effect": "Sometimes"}]}, "taints"),
    ({"limits": {"cpu": "lots"}}, "limits"),
    ({"name": "Not_A_Name"}, "name"),
])
def test_nodepool_validation_errors_are_400_keyed_by_field(
        operator_client: APIClient, change: dict[str, Any], field: str) -> None:
    response = operator_client.post("/api/nodepools/", nodepool_values(**change), format="json")
    assert response.status_code == 400, response.content
    errors = response.json()
    assert field in errors, errors
    assert all(isinstance(m, str) and m for m in errors[field])
    assert not NodePool.objects.exists()
    assert not ChangeRecord.objects.exists()


def test_update_validation_error_is_400_and_saves_nothing(operator_client: APIClient, nodepool: NodePool) -> None:
    before = snapshot()
    response = operator_client.patch("/api/nodepools/general/", {
        "requirements": [{"key": "kubernetes.io/arch", "operator": "Exists", "values": ["x"]}], "weight": 5,
    }, format="json")
    assert response.status_code == 400
    assert "operator 'Exists' takes no values" in response.json()["requirements"][0]
    assert snapshot() == before


@pytest.mark.parametrize(("change", "field"), [
    ({"role": "R", "instance_profile": "P"}, "role"),
    ({"ami_family": "Windows95"}, "ami_family"),
    ({"subnet_selector_terms": []}, "subnet_selector_terms"),
    ({"tags": {"karpenter.sh/nodepool": "x"}}, "tags"),
    ({"metadata_options": {"httpTokens": "sometimes"}}, "metadata_options"),
    ({"kubelet": {"maxPods": -1}}, "kubelet"),
])
def test_nodeclass_validation_errors(operator_client: APIClient, change: dict[str, Any], field: str) -> None:
    response = operator_client.post("/api/nodeclasses/", nodeclass_values(**change), format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not EC2NodeClass.objects.exists()


def test_service_errors_map_all_to_non_field_errors() -> None:
    assert _drf_errors(DjangoValidationError({"__all__": ["whole object"], "weight": ["bad"]})) == {
        "non_field_errors": ["whole object"], "weight": ["bad"]}
    assert _drf_errors(DjangoValidationError("plain")) == {"non_field_errors": ["plain"]}


def test_unknown_fields_are_refused(operator_client: APIClient, nodepool: NodePool) -> None:
    response = operator_client.post("/api/nodepools/", nodepool_values(name="x", wieght=3), format="json")
    assert response.status_code == 400
    assert response.json() == {"wieght": ["Unknown field."]}
    # Output-only fields sent back from a GET are ignored, so GET → edit → PUT works.
    current = operator_client.get("/api/nodepools/general/").json()
    current["weight"] = 77
    response = operator_client.put("/api/nodepools/general/", current, format="json")
    assert response.status_code == 200, response.content
    nodepool.refresh_from_db()
    assert nodepool.weight == 77


WRONG_VALUES: list[Any] = [
    None, True, 1, 1.5, "text", "", [], {}, [1], ["a"], [None], [[]], [{}], {"a": 1}, {"a": None},
    {"a": {"b": []}}, [{"key": ["a"], "effect": "NoSchedule"}], [{"key": {"a": 1}, "operator": ["In"]}],
    [{"key": "a", "operator": "In", "values": [1, {"x": 1}]}], [{"nodes": 5, "schedule": 1, "duration": []}],
    [{"nodes": "1", "reasons": "Empty"}], {"cpu": [1]}, {"cpu": {"x": 1}}, "a\x00b", {"a": "b\x00"},
    [{"tags": []}], [{"tags": {"a": 1}}], [{"alias": 5}], [{"id": "x", "alias": ["y"]}],
    [{"deviceName": 1, "ebs": {"volumeSize": [1], "volumeType": {}, "iops": "x"}}], [{"ebs": []}],
    {"maxPods": "x", "systemReserved": [], "evictionHard": {"memory.available": []}},
    {"evictionHard": [], "kubeReserved": {"cpu": None}}, {"httpPutResponseHopLimit": "x", "httpTokens": []},
    2**70, -1,
]


NODEPOOL_FIELDS = [*nodepool_values(), "termination_grace_period", "template_annotations", "startup_taints"]
NODECLASS_FIELDS = [*nodeclass_values(), "instance_profile", "block_device_mappings", "kubelet", "metadata_options",
                    "user_data"]


@pytest.mark.parametrize(("url", "field"), [("/api/nodepools/", f) for f in NODEPOOL_FIELDS]
                         + [("/api/nodeclasses/", f) for f in NODECLASS_FIELDS])
def test_bad_input_never_500(operator_client: APIClient, url: str, field: str) -> None:
    """Every field with values of every wrong type, created and patched: 2xx or 400, never a 500."""
    values = nodepool_values if url == "/api/nodepools/" else nodeclass_values
    assert operator_client.post(url, values(name="fuzz-target"), format="json").status_code == 201
    for index, wrong in enumerate(WRONG_VALUES):
        payload = values(name=f"fuzz-{index}")
        payload[field] = wrong
        response = operator_client.post(url, payload, format="json")
        assert response.status_code in (201, 400), (wrong, response.status_code)
        assert isinstance(response.json(), dict)
        response = operator_client.patch(f"{url}fuzz-target/", {field: wrong}, format="json")
        assert response.status_code in (200, 400), (wrong, response.status_code)
        assert isinstance(response.json(), dict)


@pytest.mark.parametrize("body", [b"[1, 2]", b'"just a string"', b"null", b"{not json", b"123"])
def test_malformed_json_bodies_are_400(operator_client: APIClient, nodepool: NodePool, body: bytes) -> None:
    for method, url in (("post", "/api/nodepools/"), ("put", "/api/nodepools/general/"),
                        ("patch", "/api/nodepools/general/"), ("post", "/api/nodeclasses/")):
        response = getattr(operator_client, method)(url, body, content_type="application/json")
        assert response.status_code == 400, (method, url, body)


# --- EC2NodeClass ---------------------------------------------------------------------------------

def test_nodeclass_crud(operator_client: APIClient, operator_user: Any) -> None:
    response = operator_client.post("/api/nodeclasses/", nodeclass_values(name="gpu-class"), format="json")
    assert response.status_code == 201, response.content
    assert response.json()["ami_selector_terms"] == [{"alias": "al2023@latest"}]
    response = operator_client.patch("/api/nodeclasses/gpu-class/", {
        "kubelet": {"maxPods": 58}, "block_device_mappings": [
            {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi", "volumeType": "gp3"}}]}, format="json")
    assert response.status_code == 200, response.content
    nodeclass = EC2NodeClass.objects.get(name="gpu-class")
    assert nodeclass.kubelet == {"maxPods": 58}
    assert nodeclass.revision == 2
    assert operator_client.delete("/api/nodeclasses/gpu-class/").status_code == 204
    actions = list(ChangeRecord.objects.filter(object_type="ec2nodeclass", object_name="gpu-class")
                   .values_list("action", "source", "user"))
    assert actions == [("deleted", "api", operator_user.pk), ("updated", "api", operator_user.pk),
                       ("created", "api", operator_user.pk)]


def test_nodeclass_in_use_cannot_be_deleted(operator_client: APIClient, nodepool: NodePool) -> None:
    before = snapshot()
    response = operator_client.delete("/api/nodeclasses/default/")
    assert response.status_code == 409
    assert "general" in response.json()["detail"]
    assert snapshot() == before


def test_nodeclass_filters(viewer_client: APIClient, nodeclass: EC2NodeClass) -> None:
    services.nodeclass_create(values=nodeclass_values(name="bottle", ami_family="Bottlerocket",
                                                      ami_selector_terms=[{"alias": "bottlerocket@latest"}]),
                              user=None, source="demo")
    names = [c["name"] for c in viewer_client.get("/api/nodeclasses/?ami_family=Bottlerocket").json()["results"]]
    assert names == ["bottle"]
    names = [c["name"] for c in viewer_client.get("/api/nodeclasses/?q=def").json()["results"]]
    assert names == ["default"]


# --- NodeClaims, decisions, filters, pagination ---------------------------------------------------

def _names(client: APIClient, url: str) -> set[str]:
    response = client.get(url)
    assert response.status_code == 200, response.content
    return {row["name"] for row in response.json()["results"]}


def test_nodeclaim_filters(viewer_client: APIClient, fleet: dict[str, Any]) -> None:
    assert _names(viewer_client, "/api/nodeclaims/") == {"general-a", "general-b", "general-c", "gpu-d", "gpu-e"}
    assert _names(viewer_client, "/api/nodeclaims/?nodepool=gpu") == {"gpu-d", "gpu-e"}
    assert _names(viewer_client, "/api/nodeclaims/?capacity_type=on-demand") == {"general-b"}
    assert _names(viewer_client, "/api/nodeclaims/?zone=eu-west-1b") == {"general-b", "gpu-d"}
    assert _names(viewer_client, "/api/nodeclaims/?state=terminated") == {"gpu-d"}
    assert _names(viewer_client, "/api/nodeclaims/?state=pending") == {"gpu-e"}
    assert _names(viewer_client, "/api/nodeclaims/?state=launched") == {"general-c"}
    assert _names(viewer_client, "/api/nodeclaims/?state=initialized") == {"general-a", "general-b"}
    assert _names(viewer_client, "/api/nodeclaims/?nodepool=general&zone=eu-west-1a&state=initialized") == {
        "general-a"}
    assert _names(viewer_client, "/api/nodeclaims/?capacity_type=reserved") == set()
    NodeClaim.objects.filter(name="general-c").update(capacity_type="reserved")  # Karpenter's third capacity type
    assert _names(viewer_client, "/api/nodeclaims/?capacity_type=reserved") == {"general-c"}
    assert viewer_client.get("/api/nodeclaims/?capacity_type=preemptible").status_code == 400
    assert viewer_client.get("/api/nodeclaims/?state=sleeping").status_code == 400


def test_nodeclaim_detail(viewer_client: APIClient, fleet: dict[str, Any]) -> None:
    body = viewer_client.get("/api/nodeclaims/gpu-d/").json()
    assert body["nodepool"] == "gpu"
    assert body["state"] == "terminated"
    assert body["termination_reason"] == "consolidated"
    assert body["instance_type"] == "g5.xlarge"
    assert viewer_client.get("/api/nodeclaims/nope/").status_code == 404
    assert viewer_client.get("/api/decisions/not-a-number/").status_code == 404


def test_decision_filters_and_detail(viewer_client: APIClient, fleet: dict[str, Any]) -> None:
    response = viewer_client.get("/api/decisions/?kind=disruption")
    rows = response.json()["results"]
    assert [r["kind"] for r in rows] == ["disruption"]
    assert rows[0]["savings_per_hour"] == "0.600000"
    assert {r["kind"] for r in viewer_client.get("/api/decisions/?nodepool=general").json()["results"]} == {
        "launch", "unschedulable"}
    assert viewer_client.get("/api/decisions/?kind=nonsense").status_code == 400
    decision = fleet["decisions"]["unschedulable"]
    body = viewer_client.get(f"/api/decisions/{decision.pk}/").json()
    assert body["why"] == "no instance type fits"
    assert body["pods"] == ["default/big"]


def test_nodepool_filters(viewer_client: APIClient, fleet: dict[str, Any]) -> None:
    assert _names(viewer_client, "/api/nodepools/?q=gp") == {"gpu"}
    assert _names(viewer_client, "/api/nodepools/?node_class=default") == {"general", "gpu"}
    assert _names(viewer_client, "/api/nodepools/?node_class=other") == set()


def test_pagination(viewer_client: APIClient, nodepool: NodePool) -> None:
    for i in range(55):
        make_claim(f"claim-{i:02d}", nodepool=nodepool)
    first = viewer_client.get("/api/nodeclaims/").json()
    assert first["count"] == 55
    assert len(first["results"]) == 50
    assert first["previous"] is None and first["next"]
    second = viewer_client.get(first["next"]).json()
    assert len(second["results"]) == 5
    assert second["next"] is None
    assert {r["name"] for r in first["results"]}.isdisjoint(r["name"] for r in second["results"])
    small = viewer_client.get("/api/nodeclaims/?page_size=10&page=3").json()
    assert len(small["results"]) == 10
    assert viewer_client.get("/api/nodeclaims/?page=99").status_code == 404


# --- token auth -----------------------------------------------------------------------------------

def test_token_auth(operator_user: Any, viewer_user: Any, nodeclass: EC2NodeClass) -> None:
    client = APIClient()
    response = client.post("/api/token/", {"username": "otto-operator", "password": "pw-otto-operator"},
                           format="json")
    assert response.status_code == 200
    token = response.json()["token"]
    assert Token.objects.get(user=operator_user).key == token
    assert client.post("/api/token/", {"username": "otto-operator", "password": "wrong"},
                       format="json").status_code == 400

    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/nodepools/").status_code == 200
    assert client.post("/api/nodepools/", nodepool_values(), format="json").status_code == 201
    assert ChangeRecord.objects.get(object_name="general").user == operator_user

    viewer = APIClient()
    viewer.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=viewer_user).key}")
    assert viewer.get("/api/nodepools/general/").status_code == 200
    assert viewer.delete("/api/nodepools/general/").status_code == 403
    assert NodePool.objects.filter(name="general").exists()


# --- schema and docs ------------------------------------------------------------------------------

def test_schema_is_valid_openapi(viewer_client: APIClient) -> None:
    from drf_spectacular.validation import validate_schema

    response = viewer_client.get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    validate_schema(schema)
    assert schema["openapi"].startswith("3.")
    for path in ("/api/nodepools/", "/api/nodepools/{name}/", "/api/nodepools/{name}/history/",
                 "/api/nodepools/{name}/export/", "/api/nodeclasses/", "/api/nodeclasses/{name}/",
                 "/api/nodeclaims/", "/api/nodeclaims/{name}/", "/api/decisions/", "/api/decisions/{id}/",
                 "/api/import/", "/api/token/"):
        assert path in schema["paths"], path
    assert set(schema["paths"]["/api/nodepools/{name}/"]) >= {"get", "put", "patch", "delete"}
    assert set(schema["paths"]["/api/nodeclaims/{name}/"]) == {"get"}
    params = {p["name"] for p in schema["paths"]["/api/nodeclaims/"]["get"]["parameters"]}
    assert {"nodepool", "capacity_type", "zone", "state", "page"} <= params
    # YAML by default, too.
    assert yaml.safe_load(viewer_client.get("/api/schema/").content)["paths"]


def test_docs_use_no_cdn(viewer_client: APIClient) -> None:
    response = viewer_client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "cdn" not in html.lower()
    assert "https://" not in html and "http://" not in html
    for asset in ("swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js"):
        url = f"/static/drf_spectacular_sidecar/swagger-ui-dist/{asset}"
        assert url in html
        assert finders.find(url.removeprefix("/static/")), (
            f"{asset} is not served: add 'drf_spectacular_sidecar' to INSTALLED_APPS")


# --- Karpenter YAML import and export -------------------------------------------------------------

def test_export_is_karpenter_yaml(viewer_client: APIClient, nodepool: NodePool) -> None:
    response = viewer_client.get("/api/nodepools/general/export/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/yaml")
    doc = yaml.safe_load(response.content)
    assert doc["apiVersion"] == "karpenter.sh/v1" and doc["kind"] == "NodePool"
    assert doc["metadata"]["name"] == "general"
    assert doc["spec"]["template"]["spec"]["requirements"] == nodepool.requirements
    assert doc["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    response = viewer_client.get("/api/nodeclasses/default/export/", HTTP_ACCEPT="text/yaml")
    assert response.status_code == 200
    assert yaml.safe_load(response.content)["kind"] == "EC2NodeClass"
    assert viewer_client.get("/api/nodepools/missing/export/").status_code == 404


def test_export_import_round_trip(operator_client: APIClient, nodepool: NodePool) -> None:
    exported = operator_client.get("/api/nodepools/general/export/").content.decode()
    before = nodepool.field_values()
    assert operator_client.delete("/api/nodepools/general/").status_code == 204
    response = operator_client.post("/api/import/", exported, content_type="application/yaml")
    assert response.status_code == 200, response.content
    assert response.json()["created"] == ["NodePool/general"]
    after = NodePool.objects.get(name="general").field_values()
    skip = {"id", "created_at", "updated_at", "revision"}
    assert {k: v for k, v in after.items() if k not in skip} == {k: v for k, v in before.items() if k not in skip}
    response = operator_client.post("/api/import/", {"yaml": exported}, format="json")
    assert response.json() == {"dry_run": False, "created": [], "updated": [], "unchanged": ["NodePool/general"]}


def test_import_yaml_body(operator_client: APIClient, operator_user: Any) -> None:
    response = operator_client.post("/api/import/", NODECLASS_YAML + "---\n" + NODEPOOL_YAML, content_type="text/yaml")
    assert response.status_code == 200, response.content
    assert response.json() == {"dry_run": False, "created": ["EC2NodeClass/imported-class", "NodePool/imported"],
                               "updated": [], "unchanged": []}
    pool = NodePool.objects.get(name="imported")
    assert pool.weight == 5 and pool.limits == {"cpu": 100}
    record = ChangeRecord.objects.get(object_name="imported")
    assert record.source == "import" and record.user == operator_user
    # Changed document: updated.
    response = operator_client.post("/api/import/", {"yaml": NODEPOOL_YAML.replace("weight: 5", "weight: 6")},
                                    format="json")
    assert response.json()["updated"] == ["NodePool/imported"]
    assert NodePool.objects.get(name="imported").weight == 6


def test_import_multipart_upload(operator_client: APIClient) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = operator_client.post("/api/import/", {
        "file": [SimpleUploadedFile("class.yaml", NODECLASS_YAML.encode(), content_type="application/yaml"),
                 SimpleUploadedFile("pool.yaml", NODEPOOL_YAML.encode(), content_type="application/yaml")],
    }, format="multipart")
    assert response.status_code == 200, response.content
    assert sorted(response.json()["created"]) == ["EC2NodeClass/imported-class", "NodePool/imported"]
    bad = SimpleUploadedFile("bad.yaml", BAD_NODEPOOL_YAML.encode(), content_type="application/yaml")
    response = operator_client.post("/api/import/", {"file": [bad]}, format="multipart")
    assert response.status_code == 400
    assert response.json()["problems"][0]["source"] == "bad.yaml"


def test_import_is_all_or_nothing(operator_client: APIClient, nodeclass: EC2NodeClass) -> None:
    before = snapshot()
    response = operator_client.post("/api/import/", NODECLASS_YAML + "---\n" + BAD_NODEPOOL_YAML,
                                    content_type="text/yaml")
    assert response.status_code == 400, response.content
    problems = response.json()["problems"]
    assert problems and all(set(p) == {"document", "path", "message", "source"} for p in problems)
    assert problems[0]["document"] == 2
    assert problems[0]["path"].startswith("spec.template.spec.requirements[0]")
    assert snapshot() == before


@pytest.mark.parametrize(("text", "path", "fragment"), [
    ("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x\n", "", "malformed YAML"),
    ("apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: x}\n", "apiVersion", "v1beta1"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "kind", "unsupported kind"),
    (NODEPOOL_YAML.replace("  weight: 5", "  wieght: 5"), "spec.wieght", "unknown field"),
    ("- just\n- a list\n", "", "expected a mapping"),
    ("", "", "no documents"),
])
def test_import_problems(operator_client: APIClient, text: str, path: str, fragment: str) -> None:
    response = operator_client.post("/api/import/", {"yaml": text}, format="json")
    assert response.status_code == 400, response.content
    problem = response.json()["problems"][0]
    assert problem["document"] == 1
    assert problem["path"] == path
    assert fragment in problem["message"]
    assert not NodePool.objects.exists()


def test_import_dry_run(operator_client: APIClient) -> None:
    response = operator_client.post("/api/import/?dry_run=1", NODECLASS_YAML, content_type="text/yaml")
    assert response.status_code == 200, response.content
    assert response.json() == {"dry_run": True, "created": ["EC2NodeClass/imported-class"], "updated": [],
                               "unchanged": []}
    assert not EC2NodeClass.objects.exists()
    response = operator_client.post("/api/import/", {"yaml": NODECLASS_YAML, "dry_run": True}, format="json")
    assert response.status_code == 200 and not EC2NodeClass.objects.exists()
    response = operator_client.post("/api/import/?dry_run=true", BAD_NODEPOOL_YAML, content_type="text/yaml")
    assert response.status_code == 400
    assert response.json()["problems"]
    assert operator_client.post("/api/import/?dry_run=perhaps", NODECLASS_YAML,
                                content_type="text/yaml").status_code == 400
    assert not ChangeRecord.objects.exists()


@pytest.mark.parametrize(("body", "content_type"), [
    (b"", "text/yaml"),
    (b"\xff\xfe\x00bad", "text/yaml"),
    (b'{"yaml": ["a list"]}', "application/json"),
    (b'{"yml": "typo"}', "application/json"),
    (b"[1, 2]", "application/json"),
    (b"{broken", "application/json"),
    (b"key: [unclosed", "text/yaml"),
    (b"a: &a [*a]", "text/yaml"),
    (b"!!python/object:os.system ls", "text/yaml"),
])
def test_import_bad_bodies_are_400(operator_client: APIClient, body: bytes, content_type: str) -> None:
    response = operator_client.post("/api/import/", body, content_type=content_type)
    assert response.status_code == 400, (body, response.content)
    assert not NodePool.objects.exists()


def test_import_unsupported_media_type(operator_client: APIClient) -> None:
    response = operator_client.post("/api/import/", b"<xml/>", content_type="application/xml")
    assert response.status_code == 415


def test_browsable_api_renders(operator_client: APIClient, viewer_client: APIClient, fleet: dict[str, Any]) -> None:
    for client in (operator_client, viewer_client):
        for url in endpoints(fleet):
            if url.endswith(("/export/", "/schema/", "/docs/")):
                continue
            response = client.get(url, HTTP_ACCEPT="text/html")
            assert response.status_code == 200, url
            assert response["Content-Type"].startswith("text/html"), url
        assert client.get("/api/import/", HTTP_ACCEPT="text/html").status_code == 405


def test_balanced_policy_through_the_api_and_its_schema(operator_client: APIClient) -> None:
    response = operator_client.post("/api/nodepools/", {"name": "calm", "consolidation_policy": "Balanced"},
                                    format="json")
    assert response.status_code == 201, response.content
    assert NodePool.objects.get(name="calm").consolidation_policy == "Balanced"
    bad = operator_client.patch("/api/nodepools/calm/", {"consolidation_policy": "Sometimes"}, format="json")
    assert bad.status_code == 400 and "consolidation_policy" in bad.json()
    assert NodePool.objects.get(name="calm").consolidation_policy == "Balanced"
    schema = json.loads(operator_client.get("/api/schema/?format=json").content)
    enums = [v.get("enum") for v in schema["components"]["schemas"].values() if "enum" in v]
    assert ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] in enums
