"""The cost dashboard's headroom: the share of the live nodes' cost the CapacityBuffers' virtual pods occupy,
computed by the metrics loop each minute and read back by the cost page (a page view never runs a solve)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from console import adapters
from console.buffers import services
from console.control import metrics
from console.control.headroom import buffer_headroom
from console.telemetry.models import MetricSample

pytestmark = pytest.mark.django_db

NODE = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "n1", "labels": {
        "node.kubernetes.io/instance-type": "m5.large", "karpenter.sh/capacity-type": "on-demand",
        "topology.kubernetes.io/zone": "us-east-1a", "kubernetes.io/hostname": "n1",
        "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}},
    "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"}},
}
POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "db-0", "namespace": "default", "ownerReferences": [{"kind": "StatefulSet", "name": "db"}]},
    "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]},
}


class Cluster:
    def list_pods(self) -> tuple[list[Any], str]:
        return [POD], "1"

    def list_nodes(self) -> tuple[list[Any], str]:
        return [NODE], "1"

    def list_daemonsets(self) -> list[Any]:
        return []

    def pending_pods(self) -> list[Any]:
        return []


def m5_large_price() -> float:
    (it,) = [t for t in adapters.engine_catalog(pools=[], nodeclasses=[]) if t.name == "m5.large"]
    return next(o.price for o in it.offerings if o.zone == "us-east-1a" and o.capacity_type == "on-demand")


def test_headroom_is_the_share_of_the_node_the_virtual_pods_take() -> None:
    assert buffer_headroom(cluster=Cluster()).held_per_hour == 0.0  # no buffer, no headroom
    services.buffer_create(values={"namespace": "default", "name": "db-room", "scalable_kind": "StatefulSet",
                                   "scalable_api_group": "apps", "scalable_name": "db", "replicas": 2})
    room = buffer_headroom(cluster=Cluster())
    (b,) = room.buffers
    assert b.on_nodes == {"n1": 2}
    # 2 × 500m of the node's 2 cpu (memory 2Gi of 8Gi is the smaller share)
    assert room.held_per_hour == pytest.approx(0.5 * m5_large_price())
    assert room.total_per_hour == pytest.approx(room.held_per_hour)


def test_metrics_loop_records_the_headroom_and_the_cost_page_reads_it(viewer_user: User) -> None:
    client = APIClient()
    client.force_login(viewer_user)
    assert "no <a" in client.get("/dashboards/cost/").content.decode()  # no buffer: the tile says so
    services.buffer_create(values={"namespace": "default", "name": "db-room", "scalable_kind": "StatefulSet",
                                   "scalable_api_group": "apps", "scalable_name": "db", "replicas": 1})
    assert "not computed yet" in client.get("/dashboards/cost/").content.decode()
    now = datetime(2026, 3, 10, 9, 30, tzinfo=UTC)
    metrics.metrics_record(cluster=Cluster(), now=now)  # type: ignore[arg-type]
    cluster_row = MetricSample.objects.get(at=now, nodepool="")
    assert float(cluster_row.headroom_held_per_hour or 0) == pytest.approx(0.25 * m5_large_price(), abs=1e-6)
    assert MetricSample.objects.filter(nodepool="").exclude(headroom_total_per_hour=None).count() == 1
    html = client.get("/dashboards/cost/").content.decode()
    assert 'id="headroom-cost"' in html and f"${0.25 * m5_large_price():.4f}/h" in html and "as of 09:30" in html


def test_headroom_that_cannot_be_computed_leaves_the_sample_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    services.buffer_create(values={"namespace": "default", "name": "db-room", "scalable_kind": "StatefulSet",
                                   "scalable_api_group": "apps", "scalable_name": "db", "replicas": 1})

    def broken(**_: Any) -> None:
        raise RuntimeError("catalog unavailable")

    monkeypatch.setattr(metrics, "buffer_headroom", broken)
    now = datetime(2026, 3, 10, 9, 31, tzinfo=UTC)
    metrics.metrics_record(cluster=Cluster(), now=now)  # type: ignore[arg-type]
    row = MetricSample.objects.get(at=now, nodepool="")
    assert row.headroom_held_per_hour is None and row.nodes == 1
    assert Decimal(row.cost_per_hour) > 0
