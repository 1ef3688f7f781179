"""The metrics loop's commitment minute (console.control.commitment_metrics) on the simulated cluster: which live
nodes a Reserved Instance and a Savings Plan cover, each commitment's and reservation's use, the unused $/h, and
the effective cost that adds up with the covered shares to the list cost."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from console.commitments import services as commitment_services
from console.control.lifecycle import lifecycle_run
from console.control.metrics import metrics_record
from console.control.models import CapacityReservationStatus
from console.control.provisioning import provision_run
from console.fleet.models import NodeClaim
from console.telemetry.models import CommitmentSample, MetricSample
from tests.simulation.conftest import advance, loop_world, on_demand_pool, pod


@pytest.fixture
def world(db: Any, settings: Any) -> Any:
    clock, config, cluster, cloud = loop_world(settings, on_demand_pool("general", ["c", "m"]))
    for i in range(6):
        cluster.apply(pod(f"web-{i}", namespace="shop", cpu="3", memory="2Gi"))
    advance(clock, config, 1)
    provision_run(cluster=cluster, cloud=cloud, now=clock())
    for _ in range(8):
        advance(clock, config, 10)
        lifecycle_run(cluster=cluster, cloud=cloud, now=clock())
    return clock, config, cluster, cloud


def test_coverage_use_unused_and_effective_cost_add_up(world: Any) -> None:
    clock, _, cluster, _ = world
    claims = list(NodeClaim.objects.active())
    assert len(claims) >= 2
    types = Counter(c.instance_type for c in claims)
    ri_type, on_ri = types.most_common(1)[0]
    ri_price = float(next(c.price_per_hour for c in claims if c.instance_type == ri_type))
    commitment_services.commitment_create(values={"name": "ri", "type": "ReservedInstances",
                                                  "instance_type": ri_type, "count": on_ri + 1})
    rates = {t.partition(".")[0]: "0.25" for t in types}
    commitment_services.commitment_create(values={"name": "sp", "type": "ComputeSavingsPlan",
                                                  "hourly_commitment": "50", "rates": rates})
    CapacityReservationStatus.objects.create(
        nodeclass_name="default", reservation_id="cr-1", instance_type=ri_type, zone=claims[0].zone, available=2,
        total=3, instance_match_criteria="targeted", synced_at=clock())
    metrics_record(cluster=cluster, now=clock())
    metrics_record(cluster=cluster, now=clock())            # same minute: rows replaced, not added

    rows = {s.name: s for s in CommitmentSample.objects.all()}
    assert set(rows) == {"ri", "sp", "cr-1"}
    ri, sp, cr = rows["ri"], rows["sp"], rows["cr-1"]
    assert (ri.unit, ri.total, ri.used, ri.covered_nodes) == ("instances", on_ri + 1, on_ri, on_ri)
    assert float(ri.unused_per_hour) == pytest.approx(ri_price)          # one idle RI at the type's on-demand price
    others = [c for c in claims if c.instance_type != ri_type]
    assert sp.covered_nodes == len(others)
    assert sp.used == pytest.approx(sum(float(c.price_per_hour) * 0.75 for c in others))
    assert float(sp.unused_per_hour) == pytest.approx(50 - sp.used, abs=1e-5)
    assert (cr.kind, cr.total, cr.used) == (CommitmentSample.RESERVATION, 3, 1)
    assert float(cr.unused_per_hour) == pytest.approx(2 * ri_price)
    assert CommitmentSample.objects.count() == 3

    total = MetricSample.objects.get(nodepool="")
    covered = sum(float(s.covered_per_hour) for s in rows.values())
    assert covered == pytest.approx(on_ri * ri_price + sum(float(c.price_per_hour) for c in others))
    assert float(total.effective_cost_per_hour) == pytest.approx(float(total.cost_per_hour) - covered, abs=1e-5)
    assert float(MetricSample.objects.get(nodepool="general").effective_cost_per_hour) == pytest.approx(
        float(total.effective_cost_per_hour), abs=1e-5)


def test_without_commitments_effective_is_list_and_old_samples_are_pruned(world: Any, settings: Any) -> None:
    clock, config, cluster, _ = world
    commitment_services.commitment_create(values={"name": "ri", "type": "ReservedInstances",
                                                  "instance_type": "x9.huge", "count": 1})
    metrics_record(cluster=cluster, now=clock())
    total = MetricSample.objects.get(nodepool="")
    assert total.effective_cost_per_hour == total.cost_per_hour
    ri = CommitmentSample.objects.get(name="ri")
    assert (ri.used, ri.covered_nodes) == (0, 0)
    assert ri.unused_per_hour is None                      # a type the catalog has no price for: unknown, not $0
    clock.advance(timedelta(days=30).total_seconds())
    metrics_record(cluster=cluster, now=clock())
    assert not CommitmentSample.objects.filter(at__lt=clock() - timedelta(days=1)).exists()
