"""The Kubernetes backend hands node repair each Node's status.conditions with their lastTransitionTime."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from kubernetes import client

from console.backends.kubernetes import KubernetesCluster, node_conditions
from tests.backends.kmock_ext import KMockThread


@pytest.fixture
def kube() -> Iterator[KMockThread]:
    with KMockThread() as k:
        yield k


def test_listed_nodes_carry_their_conditions_and_transition_times(kube: KMockThread) -> None:
    core = client.CoreV1Api(kube.api_client())
    core.create_node({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "ip-10-0-0-1"}, "spec": {},
        "status": {"conditions": [
            {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
             "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": "2026-01-05T11:59:00Z",
             "lastTransitionTime": "2026-01-05T12:00:00Z"},
            {"type": "DiskPressure", "status": "False", "lastTransitionTime": "2026-01-01T08:00:00Z"}]},
    })
    cluster = KubernetesCluster(kube.api_client(), page_size=2, request_timeout=5)
    nodes, _ = cluster.list_nodes()
    got = node_conditions(nodes[0])
    assert got["Ready"].status == "Unknown" and got["Ready"].reason == "NodeStatusUnknown"
    assert got["Ready"].since == datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
    assert got["DiskPressure"].since == datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
    assert node_conditions(cluster.get_node("ip-10-0-0-1"))["Ready"] == got["Ready"]
