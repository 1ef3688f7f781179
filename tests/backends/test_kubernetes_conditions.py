"""The Kubernetes backend hands node repair each Node's status.conditions with their lastTransitionTime, and
repair over it deletes the pods and the Node without an eviction."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

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


class _Cloud:
    """Just enough of a CloudProvider for repair: records what it is asked to terminate."""

    def __init__(self) -> None:
        self.terminated: list[str] = []

    def terminate(self, instance_ids: Sequence[str]) -> None:
        self.terminated.extend(instance_ids)


def test_repair_on_a_real_api_deletes_the_node_without_evicting(kube: KMockThread, db: Any, settings: Any) -> None:
    """Against the Kubernetes backend: a node NotReady for an hour is deleted with no eviction asked for; its
    pods are left to Kubernetes' pod garbage collector (kmock has none, so the pod is still there)."""
    from console.control.repair import node_repair_run
    from console.fleet.models import Decision, NodeClaim

    settings.LOADMASTER_NODE_REPAIR = True
    core = client.CoreV1Api(kube.api_client())
    core.create_node({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "ip-10-0-0-9", "labels": {"karpenter.sh/nodepool": "general"}},
        "spec": {"providerID": "aws:///us-east-1a/i-0sick"},
        "status": {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                                   "lastTransitionTime": "2026-01-05T11:00:00Z"}]},
    })
    core.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "namespace": "default"},
        "spec": {"nodeName": "ip-10-0-0-9", "containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": "Running"}})
    NodeClaim.objects.create(name="general-abcde", nodepool_name="general", instance_type="m5.large",
                             capacity_type="on-demand", zone="us-east-1a", node_name="ip-10-0-0-9",
                             instance_id="i-0sick", launched_at=datetime(2026, 1, 5, 10, 0, tzinfo=UTC))
    cluster = KubernetesCluster(kube.api_client(), page_size=2, request_timeout=5)
    cloud = _Cloud()

    outcome = node_repair_run(cluster=cluster, cloud=cloud,  # type: ignore[arg-type]
                              now=datetime(2026, 1, 5, 12, 0, tzinfo=UTC))
    assert outcome.repaired == ["ip-10-0-0-9"]
    assert cluster.list_nodes()[0] == [] and cloud.terminated == ["i-0sick"]
    assert cluster.list_pods()[0] == []            # deleted (no Eviction, so no PDB could hold it)
    claim = NodeClaim.objects.get()
    assert claim.terminated_at and claim.termination_reason.startswith("unhealthy: Ready=Unknown for 1h")
    assert Decision.objects.get(details__repair="repaired").details["pods"] == 1
