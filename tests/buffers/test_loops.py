"""The provision loop launches the CapacityBuffers' room with the pending pods, once, on the simulated cluster."""

from __future__ import annotations

from typing import Any

import pytest

from console.buffers import services
from console.control.provisioning import provision_run
from console.fleet.models import Decision, NodeClaim
from packing import api
from tests.simulation.conftest import advance, loop_world, on_demand_pool, pod


@pytest.fixture
def world(db: Any, settings: Any) -> Any:
    return loop_world(settings, on_demand_pool("general", ["c", "m"], limits={"cpu": "64"}))


def test_the_loop_launches_room_for_the_buffer_once(world: Any) -> None:
    clock, config, cluster, cloud = world
    cluster.apply(pod("db-0", cpu="2", memory="1Gi", owner="StatefulSet/db"))
    advance(clock, config, 1)
    services.buffer_create(values={"namespace": "default", "name": "db-room", "scalable_api_group": "apps",
                                   "scalable_kind": "StatefulSet", "scalable_name": "db", "replicas": 2})
    outcome = provision_run(cluster=cluster, cloud=cloud, now=clock())
    # the buffer's pods are not the cluster's: one pending pod, none unschedulable
    assert outcome.pending == 1 and outcome.unschedulable == 0 and outcome.launched
    held = " ".join(d.why for d in Decision.objects.filter(kind=Decision.LAUNCH))
    assert "of them CapacityBuffer headroom" in held
    assert "default/db-room-buffer-0" in held and "default/db-room-buffer-1" in held and "default/db-0" in held
    again = provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert again.launched == []


def pod_template(name: str, *, cpu: str, memory: str, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name, "namespace": namespace},
            "template": {"metadata": {"labels": {"app": "burst"}},
                         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu,
                                                                                           "memory": memory}}}]}}}


def test_a_pod_template_buffer_has_a_node_launched_for_its_room(world: Any) -> None:
    """podTemplateRef: the loop lists the cluster's PodTemplates, so the buffer's pods are planned for with no pod
    pending, a node is launched for them, and they are never the cluster's pending or unschedulable pods."""
    clock, config, cluster, cloud = world
    cluster.apply(pod_template("burst", cpu="3", memory="2Gi"))
    cluster.apply(pod_template("burst", cpu="1", memory="1Gi", namespace="other"))  # another namespace's: not it
    services.buffer_create(values={"namespace": "default", "name": "burst-room", "pod_template_ref": "burst",
                                   "replicas": 2})
    outcome = provision_run(cluster=cluster, cloud=cloud, now=clock())
    assert outcome.pending == 0 and outcome.unschedulable == 0 and len(outcome.launched) == 1
    (launch,) = Decision.objects.filter(kind=Decision.LAUNCH)
    assert "2 of them CapacityBuffer headroom" in launch.why
    assert "default/burst-room-buffer-0" in launch.why and "default/burst-room-buffer-1" in launch.why
    # room for 2 × 3 cpu: the node launched holds 6 cpu (the other namespace's 1-cpu template is not the shape)
    (claim,) = NodeClaim.objects.all()
    assert api.parse_quantity(claim.allocatable["cpu"]) >= 6000  # milli-cpu
    advance(clock, config, 60)
    assert cluster.pending_pods() == []
    assert not any(p["metadata"]["name"].startswith("burst-room") for p in cluster.list_pods()[0])
    # the room is there: the next run launches nothing more
    assert provision_run(cluster=cluster, cloud=cloud, now=clock()).launched == []
