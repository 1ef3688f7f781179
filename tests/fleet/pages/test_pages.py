"""The console pages: login, roles, the NodePool/NodeClass forms, history, import and export."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from console.fleet.models import ChangeRecord, Decision, EC2NodeClass, NodeClaim, NodePool
from tests.console_pages import rows

PAGES = ["/nodepools/", "/nodeclasses/", "/nodeclaims/", "/decisions/", "/export/"]


def pool_post(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "web", "node_class_name": "default", "weight": "20",
        "template_labels": "team=web\ntier=frontend", "template_annotations": "", "limits": "cpu=64\nmemory=256Gi",
        "expire_after": "720h", "termination_grace_period": "", "consolidation_policy": "WhenEmptyOrUnderutilized",
        "consolidate_after": "5m",
    }
    data.update(rows("req", [{"key": "kubernetes.io/arch", "operator": "In", "values": "amd64, arm64"},
                             {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": "5"}]))
    data.update(rows("taint", [{"key": "team", "value": "web", "effect": "NoSchedule"}]))
    data.update(rows("stainit", []))
    data.update(rows("budget", [{"nodes": "10%"},
                                {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Drifted"]}]))
    data.update(overrides)
    return data


@pytest.mark.django_db
@pytest.mark.parametrize("path", PAGES + ["/nodepools/new/", "/import/"])
def test_anonymous_is_sent_to_login(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


def test_login_with_password_then_pages_render(db: Any, pool: NodePool) -> None:
    User.objects.create_user("ann", password="correct horse battery")
    client = Client()
    assert client.post("/accounts/login/", {"username": "ann", "password": "wrong"}).status_code == 200
    response = client.post("/accounts/login/", {"username": "ann", "password": "correct horse battery"})
    assert response.status_code == 302
    for path in PAGES + ["/nodepools/general/", "/nodeclasses/default/"]:
        assert client.get(path).status_code == 200, path


def test_pool_list_shows_usage_cost_and_weight(viewer_client: Client, pool: NodePool) -> None:
    NodeClaim.objects.create(name="general-a", nodepool=pool, nodepool_name="general", instance_type="m5.large",
                             capacity_type="on-demand", zone="us-east-1a", price_per_hour="0.096",
                             allocatable={"cpu": "1930m", "memory": "7Gi"}, initialized_at=timezone.now())
    NodeClaim.objects.create(name="general-gone", nodepool=pool, nodepool_name="general", price_per_hour="5",
                             allocatable={"cpu": "64"}, terminated_at=timezone.now())
    html = viewer_client.get("/nodepools/").content.decode()
    assert "1930m / 100" in html          # cpu in use against the limit; the terminated claim is not counted
    assert "$0.0960" in html
    assert ">10<" in html                   # weight


def test_viewer_cannot_write(viewer_client: Client, pool: NodePool, nodeclass: EC2NodeClass) -> None:
    for path in ("/nodepools/new/", "/nodepools/general/edit/", "/nodepools/general/delete/",
                 "/nodeclasses/new/", "/nodeclasses/default/edit/", "/import/"):
        response = viewer_client.get(path)
        assert response.status_code == 403, path
        assert b"operator role" in response.content
    assert viewer_client.post("/nodepools/general/edit/", pool_post(name="general", weight="99")).status_code == 403
    assert viewer_client.post("/nodepools/general/delete/").status_code == 403
    assert viewer_client.post("/nodepools/new/", pool_post()).status_code == 403
    assert viewer_client.post("/import/", {"text": "x: 1"}).status_code == 403
    pool.refresh_from_db()
    assert pool.weight == 10 and NodePool.objects.count() == 1 and EC2NodeClass.objects.count() == 1
    # Viewers see no write buttons.
    assert b"New NodePool" not in viewer_client.get("/nodepools/").content


def test_operator_creates_pool_through_form(operator_client: Client, operator: User, nodeclass: EC2NodeClass) -> None:
    response = operator_client.post("/nodepools/new/", pool_post())
    assert response.status_code == 302, response.content.decode()[:3000]
    pool = NodePool.objects.get(name="web")
    assert pool.template_labels == {"team": "web", "tier": "frontend"}
    assert pool.requirements == [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]},
    ]
    assert pool.taints == [{"key": "team", "value": "web", "effect": "NoSchedule"}]
    assert pool.budgets[1] == {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Drifted"]}
    assert pool.limits == {"cpu": "64", "memory": "256Gi"} and pool.weight == 20
    record = ChangeRecord.objects.get(object_name="web")
    assert (record.action, record.source, record.user) == ("created", "form", operator)
    # It shows in the list and exports as Karpenter YAML.
    assert b'href="/nodepools/web/"' in operator_client.get("/nodepools/").content
    exported = yaml.safe_load(operator_client.get("/nodepools/web/export/").content)
    assert exported["kind"] == "NodePool" and exported["spec"]["template"]["spec"]["taints"][0]["key"] == "team"


def test_form_errors_sit_at_the_offending_row_and_nothing_is_saved(operator_client: Client, nodeclass: EC2NodeClass) -> None:
    data = pool_post()
    data.update(rows("req", [{"key": "kubernetes.io/arch", "operator": "In", "values": "amd64"},
                             {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": "four"}]))
    data["budget-1-duration"] = ""   # schedule without duration
    data["consolidate_after"] = "5 minutes"
    response = operator_client.post("/nodepools/new/", data)
    assert response.status_code == 400
    editor = response.context["editor"]
    req_rows = editor.formsets["requirements"].forms
    assert not req_rows[0].errors
    assert "exactly one non-negative integer" in req_rows[1].errors["values"][0]
    budget_rows = editor.formsets["budgets"].forms
    assert "'schedule' must be set with 'duration'" in budget_rows[1].errors["duration"][0]
    assert "invalid duration" in editor.form.errors["consolidate_after"][0]
    assert NodePool.objects.count() == 0 and ChangeRecord.objects.filter(object_type="nodepool").count() == 0
    # The typed values are kept so the operator can fix them.
    assert b"four" in response.content


def test_restricted_label_error_on_labels_field(operator_client: Client, nodeclass: EC2NodeClass) -> None:
    response = operator_client.post("/nodepools/new/", pool_post(template_labels="karpenter.sh/nodepool=x"))
    assert response.status_code == 400
    assert "restricted" in response.context["form"].errors["template_labels"][0]
    response = operator_client.post("/nodepools/new/", pool_post(template_labels="no equals sign"))
    assert "line 1: expected key=value" in response.context["form"].errors["template_labels"][0]


def test_edit_records_history_shown_on_page(operator_client: Client, pool: NodePool) -> None:
    page = operator_client.get("/nodepools/general/edit/")
    assert page.status_code == 200
    data = pool_post(name="general", weight="77", revision=str(pool.revision))
    response = operator_client.post("/nodepools/general/edit/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    pool.refresh_from_db()
    assert pool.weight == 77 and pool.revision == 2 and pool.name == "general"
    update = ChangeRecord.objects.filter(object_name="general", action="updated").get()
    assert update.changes["spec.weight"] == [10, 77]
    html = operator_client.get("/nodepools/general/").content.decode()
    assert "spec.weight" in html and "olga" in html


def test_stale_edit_is_refused(operator_client: Client, pool: NodePool, operator: User) -> None:
    from console.fleet import services
    services.nodepool_update(nodepool=pool, values={"weight": 30}, user=operator)   # someone else saved meanwhile
    response = operator_client.post("/nodepools/general/edit/", pool_post(name="general", weight="77", revision="1"))
    assert response.status_code == 400
    assert "changed by someone else" in response.content.decode()
    pool.refresh_from_db()
    assert pool.weight == 30


def test_delete_pool_and_nodeclass_in_use(operator_client: Client, pool: NodePool) -> None:
    response = operator_client.post("/nodeclasses/default/delete/", follow=True)
    assert "referenced by NodePool(s) general" in response.content.decode()
    assert EC2NodeClass.objects.filter(name="default").exists()
    assert operator_client.post("/nodepools/general/delete/").status_code == 302
    assert not NodePool.objects.exists()
    assert ChangeRecord.objects.filter(object_name="general", action="deleted").exists()
    assert operator_client.post("/nodeclasses/default/delete/").status_code == 302
    assert not EC2NodeClass.objects.exists()


def test_nodeclass_form_create_and_errors(operator_client: Client) -> None:
    data = {
        "name": "gpu", "ami_family": "", "ami_selector_terms": "- alias: al2023@latest",
        "subnet_selector_terms": "- tags: {karpenter.sh/discovery: c1}",
        "security_group_selector_terms": "- tags: {karpenter.sh/discovery: c1}",
        "role": "NodeRole", "instance_profile": "", "tags": "team=ml",
        "block_device_mappings": "- deviceName: /dev/xvda\n  ebs: {volumeSize: 200Gi, volumeType: gp3}",
        "kubelet_max_pods": "110", "kubelet_system_reserved": "cpu=100m\nmemory=200Mi",
        "kubelet_eviction_hard": "memory.available=5%", "http_tokens": "required", "http_put_response_hop_limit": "2",
        "user_data": "",
    }
    response = operator_client.post("/nodeclasses/new/", data)
    assert response.status_code == 302, response.content.decode()[:3000]
    nc = EC2NodeClass.objects.get(name="gpu")
    assert nc.kubelet == {"maxPods": 110, "systemReserved": {"cpu": "100m", "memory": "200Mi"},
                          "evictionHard": {"memory.available": "5%"}}
    assert nc.metadata_options == {"httpPutResponseHopLimit": 2, "httpTokens": "required"}
    bad = dict(data, name="gpu2", instance_profile="Profile", kubelet_system_reserved="gpu=1",
               subnet_selector_terms="- tags: [", http_put_response_hop_limit="99")
    response = operator_client.post("/nodeclasses/new/", bad)
    assert response.status_code == 400
    form = response.context["form"]
    assert "not valid YAML" in form.errors["subnet_selector_terms"][0]
    bad["subnet_selector_terms"] = data["subnet_selector_terms"]
    response = operator_client.post("/nodeclasses/new/", bad)
    form = response.context["form"]
    assert "exactly one of role or instanceProfile" in form.errors["role"][0]
    assert "unknown key 'gpu'" in form.errors["kubelet_system_reserved"][0]
    assert "1 to 64" in form.errors["http_put_response_hop_limit"][0]
    assert not EC2NodeClass.objects.filter(name="gpu2").exists()


KARPENTER_DOC = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-demo
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
  limits: {cpu: "1000"}
"""


def test_import_page_paste_and_upload(operator_client: Client) -> None:
    response = operator_client.post("/import/", {"text": KARPENTER_DOC})
    assert response.status_code == 302
    assert set(NodePool.objects.values_list("name", flat=True)) == {"default"}
    assert ChangeRecord.objects.filter(source="import").count() == 2
    from django.core.files.uploadedfile import SimpleUploadedFile
    upload = SimpleUploadedFile("pools.yaml", KARPENTER_DOC.replace("1000", "2000").encode())
    assert operator_client.post("/import/", {"files": [upload]}).status_code == 302
    assert NodePool.objects.get(name="default").limits == {"cpu": "2000"}


def test_import_page_bad_batch_saves_nothing(operator_client: Client) -> None:
    bad = KARPENTER_DOC + "---\napiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: old}\n"
    response = operator_client.post("/import/", {"text": bad})
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing was saved" in html and "document 3" in html and "apiVersion" in html
    assert NodePool.objects.count() == 0 and EC2NodeClass.objects.count() == 0
    response = operator_client.post("/import/", {"text": ""})
    assert response.status_code == 400 and b"Paste YAML or choose" in response.content


def test_import_dry_run_saves_nothing(operator_client: Client) -> None:
    response = operator_client.post("/import/", {"text": KARPENTER_DOC, "dry_run": "on"})
    assert response.status_code == 200 and b"nothing saved" in response.content
    assert NodePool.objects.count() == 0


def test_export_all_round_trips_through_import(operator_client: Client, pool: NodePool) -> None:
    exported = operator_client.get("/export/").content.decode()
    NodePool.objects.all().delete()
    EC2NodeClass.objects.all().delete()
    assert operator_client.post("/import/", {"text": exported}).status_code == 302
    assert NodePool.objects.get(name="general").taints == [{"key": "team", "value": "a", "effect": "NoSchedule"}]


def test_nodeclaim_filters(viewer_client: Client, pool: NodePool) -> None:
    now = timezone.now()
    NodeClaim.objects.create(name="a-spot", nodepool=pool, nodepool_name="general", capacity_type="spot",
                             zone="us-east-1a", launched_at=now, registered_at=now, initialized_at=now)
    NodeClaim.objects.create(name="b-od", nodepool=pool, nodepool_name="general", capacity_type="on-demand",
                             zone="us-east-1b", launched_at=now)
    NodeClaim.objects.create(name="c-gone", nodepool_name="old", capacity_type="spot", terminated_at=now)

    def names(query: str) -> set[str]:
        page = viewer_client.get("/nodeclaims/?" + query).context["page"]
        return {c.name for c in page.object_list}

    assert names("capacity_type=spot") == {"a-spot", "c-gone"}
    assert names("state=initialized") == {"a-spot"}
    assert names("state=launched") == {"b-od"}
    assert names("state=terminated") == {"c-gone"}
    assert names("nodepool=general&zone=us-east-1b") == {"b-od"}
    assert viewer_client.get("/nodeclaims/a-spot/").status_code == 200
    # Every filter is labelled (a method filter without a label renders as "[invalid name]").
    assert b"invalid name" not in viewer_client.get("/nodeclaims/").content


def test_decision_pages(viewer_client: Client, pool: NodePool) -> None:
    d = Decision.objects.create(kind=Decision.LAUNCH, nodepool=pool, nodepool_name="general", nodes=["n1"],
                                cost_after="0.1", why="launched m5.large for 3 pending pods")
    Decision.objects.create(kind=Decision.UNSCHEDULABLE, nodepool_name="", why="pod x: nope")
    page = viewer_client.get("/decisions/?kind=launch").context["page"]
    assert [x.pk for x in page.object_list] == [d.pk]
    assert b"launched m5.large" in viewer_client.get(reverse("fleet:decision-detail", args=[d.pk])).content


def test_csrf_is_enforced(operator: User, nodeclass: EC2NodeClass) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    assert client.post("/nodepools/new/", pool_post()).status_code == 403
    assert not NodePool.objects.exists()


def test_demo_setup_command_creates_accounts_and_fleet(db: Any, tmp_path: Any, settings: Any) -> None:
    from django.core.management import call_command
    settings.VAR_DIR = tmp_path
    call_command("demo_setup")
    demo = User.objects.get(username="demo")
    assert demo.groups.filter(name="operator").exists()
    assert demo.check_password((tmp_path / "demo-password").read_text().strip())
    assert NodePool.objects.count() == 3 and NodeClaim.objects.count() == 6
    assert Decision.objects.filter(kind=Decision.UNSCHEDULABLE).exists()
    call_command("demo_setup")   # idempotent: nothing duplicated
    assert NodePool.objects.count() == 3 and User.objects.filter(username="demo").count() == 1
    # Seeded claims carry their pool's taints, as launched ones do (else any pod lands on the GPU node).
    for claim in NodeClaim.objects.select_related("nodepool"):
        assert claim.taints == claim.nodepool.taints, claim.name
    assert NodeClaim.objects.filter(nodepool_name="gpu").first().taints[0]["key"] == "nvidia.com/gpu"
