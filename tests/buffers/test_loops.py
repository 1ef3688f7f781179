"""The provision loop launches the CapacityBuffers' room with the pending pods, once, on the simulated cluster."""

from __future__ import annotations

from typing import Any

import pytest

from console.buffers import services
from console.control.provisioning import provision_run
from console.fleet.models import Decision
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
