"""The on-demand share of a NodePool in the console: two annotations edited in their own form inputs, validated
at the field, exported as annotations and imported back into their fields; the pool page shows each workload's
split as the cluster runs now."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.test import Client

from console import adapters
from console.fleet import services
from console.fleet.models import EC2NodeClass, NodePool
from console.simulation import services as sim_services
from console.simulation.cluster import SimulatedCluster
from console.simulation.config import SimulationConfig
from packing import api
from tests.fleet.pages.test_pages import pool_post
from tests.simulation.conftest import pod

BASE = "loadmaster.dev/on-demand-base"
PCT = "loadmaster.dev/on-demand-percentage"


def test_the_form_saves_the_two_annotations_and_export_writes_them_as_strings(
    operator_client: Client, nodeclass: EC2NodeClass
) -> None:
    response = operator_client.post("/nodepools/new/", pool_post(on_demand_base="2", on_demand_percentage="20",
                                                               metadata_annotations="example.com/owner=web"))
    assert response.status_code == 302, response.content[:2000]
    pool = NodePool.objects.get(name="web")
    assert (pool.on_demand_base, pool.on_demand_percentage) == ("2", "20")
    page = operator_client.get("/nodepools/web/edit/").content.decode()
    assert 'name="on_demand_base"' in page and 'name="on_demand_percentage"' in page
    doc = yaml.safe_load(services.karpenter_export([pool]))
    assert doc["metadata"]["annotations"] == {"example.com/owner": "web", BASE: "2", PCT: "20"}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("on_demand_base", "two", "must be an integer"), ("on_demand_base", "-1", "must not be negative"),
     ("on_demand_percentage", "101", "must be a percentage: at most 100")],
)
def test_bad_values_are_refused_at_their_field_and_nothing_is_saved(
    operator_client: Client, nodeclass: EC2NodeClass, field: str, value: str, message: str
) -> None:
    response = operator_client.post("/nodepools/new/", pool_post(**{field: value}))
    assert response.status_code == 400
    assert message in response.context["editor"].form.errors[field][0]
    assert not NodePool.objects.exists()


def test_the_annotation_in_the_other_annotations_is_refused_pointing_at_its_field(nodeclass: EC2NodeClass) -> None:
    with pytest.raises(ValidationError) as e:
        services.nodepool_create(values={"name": "p", "node_class_name": "default",
                                         "metadata_annotations": {BASE: "1"}}, user=None)
    assert "has its own field (on_demand_base)" in str(e.value.message_dict["metadata_annotations"])


MANIFEST = f"""apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: shared
  annotations: {{"{BASE}": "3", "{PCT}": "{{pct}}", example.com/owner: web}}
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements: []
"""


def test_import_takes_the_annotations_into_their_fields_and_exports_them_back_unchanged(
    nodeclass: EC2NodeClass, operator: User
) -> None:
    text = MANIFEST.replace("{pct}", "25")
    result = services.karpenter_import(texts=[("pool.yaml", text)], user=operator)
    assert result.ok, result.problems
    pool = NodePool.objects.get(name="shared")
    assert (pool.on_demand_base, pool.on_demand_percentage) == ("3", "25")
    assert pool.metadata_annotations == {"example.com/owner": "web"}
    again = services.karpenter_import(texts=[("again.yaml", services.karpenter_export([pool]))], user=operator)
    assert again.unchanged == ["NodePool/shared"] and not again.updated, again


def test_a_bad_imported_value_names_the_annotations_path_and_saves_nothing(
    nodeclass: EC2NodeClass, operator: User
) -> None:
    result = services.karpenter_import(texts=[("pool.yaml", MANIFEST.replace("{pct}", "150"))], user=operator)
    assert not result.ok and not NodePool.objects.filter(name="shared").exists()
    [problem] = result.problems
    assert problem.path == f"metadata.annotations.{PCT}" and "at most 100" in problem.message


def test_the_engine_reads_the_pools_share_from_the_row(nodeclass: EC2NodeClass, operator: User) -> None:
    pool = services.nodepool_create(values={"name": "p", "node_class_name": "default", "on_demand_base": "2"},
                                    user=operator)
    inputs = adapters.cluster_inputs(pods=[], nodes=[], nodepools=[pool])
    assert inputs.on_demand_shares == {("NodePool", "", "p"): api.read_on_demand_share({BASE: "2"}, "")}


def test_the_pool_page_shows_each_workloads_split_now(viewer_client: Client, nodeclass: EC2NodeClass,
                                                      operator: User, settings: Any) -> None:
    services.nodepool_create(values={
        "name": "general", "node_class_name": "default", "on_demand_base": "1", "on_demand_percentage": "50",
        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}],
    }, user=operator)
    sim_services.simulation_reset(seed=7, config=SimulationConfig(cluster_name="test", demo_workloads=False))
    cluster = SimulatedCluster()
    for i in range(5):
        cluster.apply(pod(f"web-{i}", namespace="shop", owner="StatefulSet/web"))
    page = viewer_client.get("/nodepools/general/").content.decode()
    assert "On-demand share" in page and "StatefulSet shop/web" in page
    # 5 replicas: 1, then 50% of 4 = 2: 3 required, none running yet, all 5 pending
    assert "<td>nodepool general: base 1, 50%</td><td>5</td><td>3</td><td>0</td><td>0</td><td>5</td>" in page


def test_the_api_takes_the_two_fields_and_answers_400_naming_a_bad_one(operator: User, nodeclass: EC2NodeClass) -> None:
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_login(operator)
    good = {"name": "api-pool", "on_demand_base": "2", "on_demand_percentage": "20"}
    response = client.post("/api/nodepools/", good, format="json")
    assert response.status_code == 201, response.content
    assert (response.json()["on_demand_base"], response.json()["on_demand_percentage"]) == ("2", "20")
    response = client.post("/api/nodepools/", {"name": "bad-pool", "on_demand_percentage": "101"}, format="json")
    assert response.status_code == 400
    assert "at most 100" in str(response.json()["on_demand_percentage"])
    assert not NodePool.objects.filter(name="bad-pool").exists()
