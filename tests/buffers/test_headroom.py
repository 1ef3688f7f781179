"""The cost dashboard's headroom: the share of the live nodes' cost the CapacityBuffers' virtual pods occupy."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from console import adapters
from console.buffers import services
from console.dashboards import selectors

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


def m5_large_price() -> float:
    (it,) = [t for t in adapters.engine_catalog(pools=[], nodeclasses=[]) if t.name == "m5.large"]
    return next(o.price for o in it.offerings if o.zone == "us-east-1a" and o.capacity_type == "on-demand")


def test_headroom_is_the_share_of_the_node_the_virtual_pods_take() -> None:
    assert selectors.headroom(cluster=Cluster()).held_per_hour == 0.0  # no buffer, no headroom
    services.buffer_create(values={"namespace": "default", "name": "db-room", "scalable_kind": "StatefulSet",
                                   "scalable_api_group": "apps", "scalable_name": "db", "replicas": 2})
    room = selectors.headroom(cluster=Cluster())
    (b,) = room.buffers
    assert b.on_nodes == {"n1": 2}
    # 2 × 500m of the node's 2 cpu (memory 2Gi of 8Gi is the smaller share)
    assert room.held_per_hour == pytest.approx(0.5 * m5_large_price())
    assert room.total_per_hour == pytest.approx(room.held_per_hour)


def test_cost_page_shows_the_headroom(monkeypatch: pytest.MonkeyPatch, viewer_user: User) -> None:
    from console.dashboards import views

    monkeypatch.setattr(views, "cluster_backend", Cluster)
    services.buffer_create(values={"namespace": "default", "name": "db-room", "scalable_kind": "StatefulSet",
                                   "scalable_api_group": "apps", "scalable_name": "db", "replicas": 1})
    client = APIClient()
    client.force_login(viewer_user)
    html = client.get("/dashboards/cost/").content.decode()
    assert 'id="headroom-cost"' in html and f"${0.25 * m5_large_price():.4f}/h" in html
