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


def catalog_price(itype: str, zone: str, capacity_type: str) -> float:
    from django.conf import settings

    from console import adapters
    from console.dashboards.selectors import offering_price

    price, _ = offering_price({t.name: t for t in adapters.instance_types(settings.LOADMASTER_AWS_REGION)},
                              itype, zone, capacity_type)
    assert price is not None and price > 0
    return price


def node(name: str, pool: str, itype: str, ct: str, zone: str = "us-east-1a", **kw: str) -> tuple[tuple[str, str], ...]:
    return L(node_name=f"node-{name}", nodepool=pool, instance_type=itype, capacity_type=ct, zone=zone,
             managed="true" if pool else "false", **kw)


MI = 2**20


def test_karpenter_metrics(viewer_client: Client, fleet: None) -> None:
    m = scrape(viewer_client)
    alloc = m["karpenter_nodes_allocatable"]
    assert alloc[node("n1", "a", "m5.large", "spot", resource_type="cpu")] == 2.0
    assert alloc[node("n1", "a", "m5.large", "spot", resource_type="memory")] == 4 * 2**30
    assert alloc[node("n2", "b", "c5.xlarge", "on-demand", resource_type="pods")] == 58
    # Every live node, the unmanaged ones included (labelled managed="false"); claims without a node are not.
    assert alloc[node("u1", "", "m5.large", "on-demand", resource_type="cpu")] == 2.0
    assert alloc[node("u2", "", "", "", zone="", resource_type="cpu")] == 2.0
    assert not any(k for k in alloc if ("node_name", "node-n3") in k)
    # Karpenter v1: pod requests include the DaemonSet pods; daemon requests are the DaemonSet pods alone.
    reqs, daemon = m["karpenter_nodes_total_pod_requests"], m["karpenter_nodes_total_daemon_requests"]
    assert reqs[node("n1", "a", "m5.large", "spot", resource_type="cpu")] == pytest.approx(0.6)
    assert reqs[node("n1", "a", "m5.large", "spot", resource_type="memory")] == (1024 + 128) * MI
    assert daemon[node("n1", "a", "m5.large", "spot", resource_type="cpu")] == pytest.approx(0.1)
    assert daemon[node("n1", "a", "m5.large", "spot", resource_type="memory")] == 128 * MI
    # Requests are the containers' resources: no "pods" series, as Karpenter.
    assert not any(("resource_type", "pods") in k for k in [*reqs, *daemon])
    # node-n2: api-1 + api-2 + agent (the Succeeded pod counts nowhere); its DaemonSet pod alone.
    assert reqs[node("n2", "b", "c5.xlarge", "on-demand", resource_type="cpu")] == pytest.approx(3.1)
    assert daemon[node("n2", "b", "c5.xlarge", "on-demand", resource_type="cpu")] == pytest.approx(0.1)
    assert reqs[node("u1", "", "m5.large", "on-demand", resource_type="cpu")] == pytest.approx(0.25)
    # No DaemonSet pod on the unmanaged nodes: no daemon series for them, as Karpenter.
    assert not any(("node_name", "node-u1") in k or ("node_name", "node-u2") in k for k in daemon)
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


def test_loadmaster_gauges(viewer_client: Client, fleet: None) -> None:
    m = scrape(viewer_client)
    assert m["loadmaster_cost_per_hour_dollars"][L(nodepool="", estimated="false")] == 3.0
    assert m["loadmaster_cost_per_hour_dollars"][L(nodepool="a", estimated="false")] == 1.0
    assert m["loadmaster_spot_savings_per_hour_dollars"][L(nodepool="")] == 2.0
    assert m["loadmaster_on_demand_cost_per_hour_dollars"][L(nodepool="a")] == 3.0
    # Per live node, price × (1 − binding share): n1 0.04 × (1 − 0.6/2), n2 0.17 × (1 − 3.1/4), and the
    # unmanaged node-u1 at the catalog's m5.large on-demand price × (1 − 0.25/2); node-u2 has no price.
    m5 = catalog_price("m5.large", "us-east-1a", "on-demand")
    assert m["loadmaster_stranded_capacity_per_hour_dollars"][()] == pytest.approx(0.028 + 0.03825 + m5 * 0.875)
    assert m["loadmaster_month_to_date_cost_dollars"][()] > 0


def test_lower_bound_gauge_only_where_known(viewer_client: Client, fleet: None) -> None:
    from decimal import Decimal

    from console.control.models import MetricSample

    last = MetricSample.objects.filter(nodepool="").latest("at")
    MetricSample.objects.filter(at=last.at, nodepool="").update(lower_bound_per_hour=Decimal("1.25"))
    bound = scrape(viewer_client)["loadmaster_lower_bound_per_hour_dollars"]
    # The cluster's bound; pools a and b have none in this sample: no series, rather than a 0.
    assert bound == {L(nodepool=""): 1.25}


def test_auth(db: Any, settings: Any) -> None:
    settings.LOADMASTER_METRICS_TOKEN = "s3cret-token"
    assert Client().get("/metrics").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert scrape(Client(), HTTP_AUTHORIZATION="Bearer s3cret-token") is not None
    settings.LOADMASTER_METRICS_TOKEN = ""
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401
    settings.LOADMASTER_METRICS_PUBLIC = True
    assert Client().get("/metrics").status_code == 200
