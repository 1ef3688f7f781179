"""The replay checked against reality (issue 21): the simulated cluster's own loops run for hours of simulated
time while console/history records them; the recorded history, exported and replayed with no change, must
reproduce the recorded cost within 5%."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from console.control.disruption import disrupt_run
from console.control.lifecycle import lifecycle_run
from console.control.provisioning import provision_run
from console.history import selectors as history_selectors
from console.history import services as history_services
from console.history.models import EventKind, HistoryEvent
from console.simulation.models import SimWorkload
from console.simulation.workloads import WorkloadSpec
from packing.history import read_history
from packing.replay import replay
from tests.simulation.conftest import advance, loop_world, on_demand_pool

TICK = 10.0  # seconds: the loops' beat (console/settings.py CELERY_BEAT_SCHEDULE)
HOURS = 4
# web's replicas, each for half an hour: growth launches nodes, the falls leave them underutilized or empty
WEB_REPLICAS = [4, 14, 24, 10, 3, 18, 8, 2]
WORKLOADS = (
    WorkloadSpec("shop", "web", {"cpu": "500m", "memory": "1Gi"}, 0, 30, "business"),
    WorkloadSpec("shop", "api", {"cpu": "1", "memory": "2Gi"}, 0, 8, "business"),
)
API_REPLICAS = [2, 4, 6, 3, 1, 5, 2, 1]


@pytest.mark.slow  # hours of simulated time through the real loops: minutes of wall time
def test_replaying_the_recorded_history_reproduces_the_recorded_cost(db: Any, settings: Any) -> None:
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("general", ["c", "m"],
                                                                        budgets=[{"nodes": "100%"}]))
    start = clock()
    # the fleet was created at the wall clock's now, the simulated world runs at T0: its revisions are in
    # force from the start of the simulated window
    HistoryEvent.objects.filter(kind=EventKind.REVISION).update(at=start)
    for spec in WORKLOADS:
        SimWorkload.objects.create(namespace=spec.namespace, name=spec.name, template=spec.template(),
                                   min_replicas=spec.min_replicas, max_replicas=spec.max_replicas,
                                   profile=spec.profile, pinned_replicas=0)
    history_services.history_record_prices(now=start)
    history_services.history_observe(cluster=cluster, now=start)
    ticks_per_slot = int(HOURS * 3600 / TICK) // len(WEB_REPLICAS)
    for web, api in zip(WEB_REPLICAS, API_REPLICAS, strict=True):
        SimWorkload.objects.filter(name="web").update(pinned_replicas=web)
        SimWorkload.objects.filter(name="api").update(pinned_replicas=api)
        for _ in range(ticks_per_slot):
            advance(clock, config, TICK)
            provision_run(cluster=cluster, cloud=cloud, now=clock())
            lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
            disrupt_run(cluster=cluster, cloud=cloud, now=clock())
            history_services.history_observe(cluster=cluster, now=clock())
    end = clock()
    lines = list(history_selectors.history_lines(since=start, until=end))
    history = read_history(lines, "export")
    result = replay(history, start=start, end=end, parallel=False)
    doc = result.as_json()
    actual, current = doc["actual"], doc["current"]
    terminated = sum(1 for line in lines if '"event":"NodeTerminated"' in line)
    assert actual["nodes_launched"] >= 3 and terminated >= 3  # the recorded cluster grew and consolidated
    assert current["nodes_disrupted"].get("underutilized", 0) + current["nodes_disrupted"].get("empty", 0) >= 3
    assert end - start >= timedelta(hours=HOURS)
    how_close = (f"replayed ${current['cost']:.4f} against recorded ${actual['cost']:.4f}: "
                 f"{100 * (current['cost'] - actual['cost']) / actual['cost']:+.2f}% (nodes launched "
                 f"{current['nodes_launched']} against {actual['nodes_launched']})")
    print(how_close)
    assert abs(current["cost"] - actual["cost"]) <= 0.05 * actual["cost"], how_close
