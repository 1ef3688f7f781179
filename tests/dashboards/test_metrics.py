"""/metrics parsed with prometheus_client's parser: Karpenter's names, label sets and the fixture's
values, plus Loadmaster's cost gauges; the bearer token and login rules."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from console.fleet import services
from tests.dashboards.conftest import build_fleet
from tests.web.conftest import NODECLASS

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(operator: User) -> None:
    services.nodeclass_create(values=NODECLASS, user=operator)
    services.nodepool_create(values={"name": "a", "node_class_name": "default", "limits": {"cpu": "100", "memory": "1Gi"}},
                             user=operator)
    build_fleet(timezone.now().replace(second=0, microsecond=0))


def scrape(client: Client, **headers: Any) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    r = client.get("/metrics", **headers)
    assert r.status_code == 200, r.content
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(r.content.decode()):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def L(**kw: str) -> tuple[tuple[str, str], ...]:  # noqa: N802
    return tuple(sorted(kw.items()))


def node(name: str, pool: str, itype: str, ct: str, **kw: str) -> tuple[tuple[str, str], ...]:
    return L(node_name=f"node-{name}", nodepool=pool, instance_type=itype, capacity_type=ct, zone="us-east-1a", **kw)


def test_karpenter_metrics(viewer_client: Client, fleet: None) -> None:
    m = scrape(viewer_client)
    alloc = m["karpenter_nodes_allocatable"]
    assert alloc[node("n1", "a", "m5.large", "spot", resource_type="cpu")] == 2.0
    assert alloc[node("n1", "a", "m5.large", "spot", resource_type="memory")] == 4 * 2**30
    assert alloc[node("n2", "b", "c5.xlarge", "on-demand", resource_type="pods")] == 58
    assert not any(k for k in alloc if ("node_name", "node-n3") in k)
    reqs = m["karpenter_nodes_total_pod_requests"]
    assert reqs[node("n1", "a", "m5.large", "spot", resource_type="cpu")] == 0.5
    assert m["karpenter_nodepools_usage"][L(nodepool="b", resource_type="cpu")] == 4.0
    assert m["karpenter_nodepools_limit"][L(nodepool="a", resource_type="cpu")] == 100.0
    assert m["karpenter_nodepools_limit"][L(nodepool="a", resource_type="memory")] == 2**30
    assert m["karpenter_pods_state"][L(phase="Running", nodepool="a")] == 10
    assert m["karpenter_pods_state"][L(phase="Pending", nodepool="")] == 2
    assert m["karpenter_scheduler_unschedulable_pods_count"][L(controller="provisioner")] == 2
    price = m["karpenter_cloudprovider_instance_type_offering_price_estimate"]
    assert price[L(instance_type="c5.xlarge", capacity_type="on-demand", zone="us-east-1a")] == 0.17
    assert m["karpenter_voluntary_disruption_decisions_total"][
        L(decision="delete", reason="underutilized", consolidation_type="")] == 1
    assert m["karpenter_nodeclaims_created_total"][L(reason="provisioning", nodepool="b", min_values_relaxed="false")] == 2
    assert m["karpenter_nodes_created_total"][L(nodepool="a")] == 1
    assert m["karpenter_nodeclaims_disrupted_total"][L(reason="interrupted", nodepool="b", capacity_type="spot")] == 1
    assert m["karpenter_nodes_terminated_total"][L(nodepool="b")] == 1
    # Declared for the dashboards' queries; NodeClaims do not record DaemonSet overhead separately.
    assert "# TYPE karpenter_nodes_total_daemon_requests gauge" in viewer_client.get("/metrics").content.decode()


def test_loadmaster_gauges(viewer_client: Client, fleet: None) -> None:
    m = scrape(viewer_client)
    assert m["loadmaster_cost_per_hour_dollars"][L(nodepool="", estimated="false")] == 3.0
    assert m["loadmaster_cost_per_hour_dollars"][L(nodepool="a", estimated="false")] == 1.0
    assert m["loadmaster_spot_savings_per_hour_dollars"][L(nodepool="")] == 2.0
    assert m["loadmaster_on_demand_cost_per_hour_dollars"][L(nodepool="a")] == 3.0
    assert m["loadmaster_stranded_capacity_per_hour_dollars"][()] == pytest.approx(0.0725)
    assert m["loadmaster_month_to_date_cost_dollars"][()] > 0


def test_auth(db: Any, settings: Any) -> None:
    settings.LOADMASTER_METRICS_TOKEN = "s3cret-token"
    assert Client().get("/metrics").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert scrape(Client(), HTTP_AUTHORIZATION="Bearer s3cret-token") is not None
    settings.LOADMASTER_METRICS_TOKEN = ""
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401
    settings.LOADMASTER_METRICS_PUBLIC = True
    assert Client().get("/metrics").status_code == 200
